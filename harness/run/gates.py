"""A run's limits and gates, checked after its outputs are written: ``run.max_unscored_frac``
and nothing scored (exit 3), ``run.fail_under`` (exit 4)."""

from __future__ import annotations

from pathlib import Path

from harness.core.protocols import Parts
from harness.core.settings import Job
from harness.run.loop import Tally


def fail_under(mean: float | None, threshold: float | None, out_dir: Path) -> str | None:
    """Why the run fails ``run.fail_under`` (one line naming the mean, the threshold and
    the run folder), or ``None`` when it passes or there is no gate."""
    if threshold is None:
        return None
    if mean is None:
        return f"nothing was scored, so no mean to hold to run.fail_under={threshold} ({out_dir})"
    if mean < threshold:
        shown = f"{mean:.4f}" if round(mean, 4) < threshold else repr(mean)
        return f"mean {shown} is below run.fail_under={threshold} ({out_dir})"
    return None


def broken_limit(tally: Tally, job: Job, parts: Parts, rows: Path) -> str | None:
    """Why the finished run fails (exit 3, outputs kept), or ``None``: nothing scored, or
    more unscored than ``run.max_unscored_frac``."""
    frac = parts.settings.max_unscored_frac
    if frac is None and tally.n_scored == 0:
        return nothing_scored(tally, job, parts.metric.name, rows)
    if frac is not None and tally.n_unscored > frac * tally.n_samples:
        return (
            f"{tally.n_unscored} of {tally.n_samples} samples are unscored, more than "
            f"run.max_unscored_frac={frac}; see {rows}"
        )
    return None


def nothing_scored(tally: Tally, job: Job, metric: str, rows: Path) -> str:
    """Why a run that scored no sample failed: the commonest reason, the mapping behind it."""
    reason, count = tally.reasons.most_common(1)[0]
    line = (
        f"none of the {tally.n_samples} samples was scored by {metric}: {reason} "
        f"({count} of {tally.n_samples})"
    )
    missing = reason.partition("missing field")[2].lstrip("s ").split(", ") if (
        reason.startswith("missing field")
    ) else []
    fields = job.config.get("dataset", {}).get("fields") or {}
    mapped = [f"dataset.fields.{k}={v}" for k, v in fields.items() if v and k in missing]
    if mapped:
        line += f"; you mapped {', '.join(mapped)}: no record has that column"
    elif missing:
        line += f"; map the column that holds it with dataset.fields.{missing[0]}=COLUMN"
    return (
        f"{line}; rows with each reason are in {rows} (set run.max_unscored_frac=1 to "
        "accept a run with nothing scored)"
    )
