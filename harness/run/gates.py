"""CI gates: a run's own (``run.fail_under``), checked after its outputs are written."""

from __future__ import annotations

from pathlib import Path


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
