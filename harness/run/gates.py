"""A run's limits and gates, checked after its outputs are written: ``run.max_unscored_frac``
and nothing scored (exit 3), ``run.fail_under`` (exit 4).

``run.fail_under`` is a number (a floor on the mean) or a mapping of logged metric to floor,
``{ndcg_at_10: 0.6, mean: 0.5}``; a name with a leading ``-`` is a ceiling instead
(``{-retrieval_p95_ms: 50}``), as ``run.objective`` minimises such a name.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from harness.core.errors import ConfigError, closest
from harness.core.metric_names import (
    CONFIDENCE_METRICS,
    OPEN_PREFIXES,
    TIMING_METRICS,
    logged_names,
)
from harness.core.protocols import Parts
from harness.core.settings import Job, RunSettings
from harness.run.advice import field_fix
from harness.run.loop import Scores, Tally

#: What ``run.fail_under`` holds: a floor on the mean, or a floor (ceiling) per metric.
FailUnder = float | Mapping[str, float] | None



def gate_names(run: RunSettings, variants: Sequence[str] = ()) -> list[str]:
    """Every metric name a gate may name in a run with these settings (``variants``: those
    of a run of several, whose ``<variant>/mean`` and the like it logs; with human labels,
    ``ci_low`` and the like): the catalogue's."""
    return logged_names(run.retrieval_ks, variants, labelled=run.human_labels is not None)


def floors(threshold: FailUnder) -> dict[str, float]:
    """``run.fail_under`` as ``{metric: floor}`` (a number gates the mean)."""
    if threshold is None:
        return {}
    if isinstance(threshold, Mapping):
        return dict(threshold)
    return {"mean": threshold}


def check_fail_under(run: RunSettings, variants: Sequence[str] = ()) -> None:
    """A ``ConfigError`` before any work for a mapping that names a metric no run logs
    (with a did-you-mean), holds a value that is not a finite number, or is empty."""
    threshold = run.fail_under
    if not isinstance(threshold, Mapping):
        return  # a number: RunSettings checked its range
    if not threshold:
        raise ConfigError("run.fail_under: an empty mapping gates nothing; name a metric, "
                          "e.g. 'run.fail_under={ndcg_at_10: 0.6}', or set null")
    names = gate_names(run, variants)
    for name, floor in threshold.items():
        metric = str(name).removeprefix("-")
        if metric not in names and not metric.startswith(OPEN_PREFIXES):
            cut = re.fullmatch(r"[a-z_]+_at_(\d+)", metric)
            ks = (f" (the cut-offs are run.retrieval_ks={list(run.retrieval_ks)})"
                  if cut and f"{metric.rsplit('_at_', 1)[0]}_at_{run.retrieval_ks[0]}" in names
                  else "") if run.retrieval_ks else ""
            raise ConfigError(
                f"run.fail_under: {name!r} is not a metric a run logs{closest(metric, names)}"
                f"{ks}; "
                f"the gates may name {', '.join(names)}, judge/<counter> or retriever/<name> "
                "(a leading - makes the value a ceiling)"
            )
        if isinstance(floor, bool) or not isinstance(floor, (int, float)) or (
            not math.isfinite(floor)
        ):
            raise ConfigError(f"run.fail_under.{name}: expected a finite number, got {floor!r}")


def fail_under(
    metrics: float | Mapping[str, float | None] | None, threshold: FailUnder, out_dir: Path
) -> str | None:
    """Why the run fails ``run.fail_under``, or ``None`` when it passes or there is no gate.

    Args:
        metrics: The run's logged metrics (``Summary.metrics()``), or its mean alone.
        threshold: ``run.fail_under``.
        out_dir: The run folder, named in the message.

    Returns:
        For a number, one line naming the headline (the PPI++ mean, ``ppi_mean``, with human
        labels; else the mean), the threshold and the run folder. For a mapping, the verdict
        first (how many gates failed, the run folder), then one line per failing metric: its
        value and its floor (or ceiling).
    """
    if threshold is None:
        return None
    values = metrics if isinstance(metrics, Mapping) else {"mean": metrics}
    if not isinstance(threshold, Mapping):
        name = "ppi_mean" if values.get("ppi_mean") is not None else "mean"
        mean = values.get(name)
        if mean is None:
            return (f"nothing was scored, so no mean to hold to run.fail_under={threshold} "
                    f"({out_dir})")
        if math.isnan(mean):
            return (f"{name} is NaN (not a number), which holds to no "
                    f"run.fail_under={threshold} ({out_dir})")
        if mean < threshold:
            what = "ppi_mean (the headline: the PPI++ mean)" if name == "ppi_mean" else "mean"
            return (f"{what} {_shown(mean, threshold)} is below run.fail_under={threshold} "
                    f"({out_dir})")
        return None
    failed = [why for name, bound in threshold.items()
              if (why := _missed(values, str(name), float(bound))) is not None]
    if not failed:
        return None
    verdict = (f"{len(failed)} of {len(threshold)} gates of run.fail_under failed "
               f"({out_dir})")
    return "\n".join([verdict, *(f"  {line}" for line in failed)])


def gate_record(threshold: FailUnder, gate: str | None, failure: str | None
                ) -> dict[str, object] | None:
    """``summary.json``'s ``gate`` for ``run.fail_under`` (``None`` without one), given why
    the gate failed (``gate``) and why the run broke a limit (``failure``). A run that broke
    a limit exits 3 whatever its numbers: its gate is not decided (``decided: false``) and
    never says ``passed``; else ``passed`` is the gate's own verdict (exit 0 or 4)."""
    if threshold is None:
        return None
    record: dict[str, object] = {"fail_under": threshold,
                                 "passed": gate is None and failure is None}
    if failure is not None:
        record["decided"] = False
    return record


def gate_line(record: Mapping[str, object]) -> str:
    """The console's verdict on ``gate_record``'s gate, the one the exit code gives: passed
    (0), FAILED (4), or not decided because the run broke a limit (3)."""
    head = f"run.fail_under={record['fail_under']}: "
    if record.get("decided") is False:
        return head + "not decided: the run broke a limit (exit 3, the error line says which)"
    return head + ("passed" if record["passed"] else "FAILED")


def _missed(values: Mapping[str, float | None], name: str, bound: float) -> str | None:
    """Why ``values`` misses one gate (``name``: a floor; ``-name``: a ceiling), or None."""
    ceiling = name.startswith("-")
    metric = name.removeprefix("-")
    value = values.get(metric)
    if value is None:
        return f"{metric}: not logged by this run{_why_absent(values, metric)}"
    if math.isnan(value):  # compares false both ways: it would pass a floor and a ceiling
        bound_kind = "ceiling" if ceiling else "floor"
        return f"{metric} is NaN (not a number), which holds to no {bound_kind}"
    if ceiling and value > bound:
        return f"{metric} {_shown(value, bound)} is above its ceiling {bound:g}"
    if not ceiling and value < bound:
        return f"{metric} {_shown(value, bound)} is below its floor {bound:g}"
    return None


def _why_absent(values: Mapping[str, float | None], metric: str) -> str:
    if metric == "mean":
        return " (nothing was scored)"
    prefix = next((p for p in OPEN_PREFIXES if metric.startswith(p)), None)
    if prefix is not None:  # any name passes the check before the run: say what is logged
        logged = sorted(k for k in values if k.startswith(prefix) and values[k] is not None)
        if not logged:
            whose = "no judge was asked" if prefix == "judge/" else "its retriever reports none"
            return f" (this run logs no {prefix}<name>: {whose})"
        near = difflib.get_close_matches(metric.removeprefix(prefix),
                                         [k.removeprefix(prefix) for k in logged], n=1)
        if near:
            return f" (did you mean '{prefix}{near[0]}'?)"
        shown = ", ".join(logged[:6]) + (", ..." if len(logged) > 6 else "")
        return f" (this run logs {shown})"
    if metric in TIMING_METRICS and metric.startswith("retrieval_"):
        return (" (only a retriever that searches is timed; retriever=precomputed passes the "
                "dataset's lists through)")
    if metric.rpartition("/")[2] == "kappa":
        return " (the judge's kappa is undefined: a rater gave one class only)"
    if metric.rpartition("/")[2] in CONFIDENCE_METRICS:
        return " (its variant has no confidence block: it does not score by average precision)"
    cut = re.fullmatch(r"[a-z_]+_at_(\d+)", metric)
    depth = values.get("retrieval_depth")
    if cut and depth is not None and int(cut.group(1)) > depth:
        return (f" (its cut-off is above the retrieval depth {depth:g}; "
                "run.retrieval_beyond_depth=true logs it)")
    if cut or metric == "mrr":
        return " (it needs samples with reference ids and retrieved ids)"
    return ""


def _shown(value: float, bound: float) -> str:
    """``value`` to 4 decimals, or in full where the rounding would hide which side of
    ``bound`` it is on."""
    rounded = round(value, 4)
    return f"{value:.4f}" if (rounded < bound) == (value < bound) and rounded != bound else (
        repr(value))


def broken_limit(tally: Scores, job: Job, parts: Parts, rows: Path,
                 variant: str | None = None) -> str | None:
    """Why the finished run fails (exit 3, outputs kept), or ``None``: nothing scored
    (unless ``run.max_unscored_frac=1``), or more unscored than ``run.max_unscored_frac``
    (0.5 by default: a mean over fewer than half the samples is not the dataset's). In a
    run of several variants each one's limits, as in a run of it alone (the first listed
    that breaks one is named)."""
    frac = parts.settings.max_unscored_frac
    if isinstance(tally, Tally) and tally.no_interval:
        return tally.no_interval
    if isinstance(tally, Tally) and tally.variants:
        return next((why for name, scores in tally.variants.items()
                     if (why := broken_limit(scores, job, parts, rows, name))), None)
    if tally.n_scored == 0 and (frac is None or frac < 1):
        return nothing_scored(tally, job, variant or parts.metric.name, rows,
                              parts.dataset.describe().get("format"))
    if frac is not None and tally.n_unscored > frac * tally.n_samples:
        reasons = "; ".join(f"{n} × {r}" for r, n in tally.reasons.most_common(3))
        share = tally.n_unscored / tally.n_samples
        return (
            (f"metric {variant}: " if variant else "")
            + f"{tally.n_unscored} of {tally.n_samples} samples ({share:.0%}) are unscored, "
            f"more than run.max_unscored_frac={frac:g}: the mean covers only "
            f"{tally.n_scored}; {reasons}; rows with each reason are in {rows} "
            "(set run.max_unscored_frac=1 to accept such a run)"
        )
    return None


def nothing_scored(tally: Scores, job: Job, metric: str, rows: Path,
                   kind: str | None = None) -> str:
    """Why a run that scored no sample failed: the commonest reason, and the setting that
    gives a missing field for a dataset of format ``kind`` (``harness.run.advice``)."""
    reason, count = tally.reasons.most_common(1)[0]
    line = (
        f"none of the {tally.n_samples} samples was scored by {metric}: {reason} "
        f"({count} of {tally.n_samples})"
    )
    missing = reason.partition("missing field")[2].lstrip("s ").split(", ") if (
        reason.startswith("missing field")
    ) else []
    dataset = job.config.get("dataset") or {}
    fields = dataset.get("fields") or {}
    mapped = [f"dataset.fields.{k}={v}" for k, v in fields.items() if v and k in missing]
    if mapped:
        line += f"; you mapped {', '.join(mapped)}: no record has that column"
    elif missing:
        line += f"; {field_fix(kind, missing[0], bool(dataset.get('corpus')))}"
    return (
        f"{line}; rows with each reason are in {rows} (set run.max_unscored_frac=1 to "
        "accept a run with nothing scored)"
    )
