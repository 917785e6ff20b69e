"""``compare()``: rank the runs of a sweep and test the two best (the steps in order)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from harness.compare.render import plot, render
from harness.compare.stats import rank_rows, top_two
from harness.compare.store import log_outputs, open_experiment, per_query, select_runs
from harness.errors import ConfigError, TrackingError, closest

#: Params that never change a score; never shown as "what varied".
COSMETIC = {"run.progress", "run.quiet"}


def compare(
    experiment: str, metric: str = "mean", *, tracking_uri: str | None = None,
    sweep: str = "latest", top: int | None = None, bootstrap: int = 2000,
    confidence: float = 0.95, seed: int = 0, plots: bool = True, log: bool = True,
) -> dict[str, Any]:
    """Rank the runs of ``experiment`` by ``metric`` and test the two best.

    Args:
        experiment: The MLflow experiment name.
        metric: The MLflow metric to rank by. Per query: ``score`` for ``mean``, else the
            ``samples.jsonl`` key of that name; rows without a number are left out.
        tracking_uri: The store; default ``$MLFLOW_TRACKING_URI`` or ``sqlite:///mlflow.db``.
        sweep: ``latest`` (children of the newest parent run), ``all`` (every finished run
            but parents and compare runs) or a parent run id.
        top: Rows in the table (default all); the plots and the test use every run.
        bootstrap: Resamples for the intervals and the randomization test.
        confidence: Coverage of the intervals.
        seed: Seed of every resampling (each starts from it, so results do not depend on
            the order of the runs).
        plots: Draw the plots (needs matplotlib).
        log: Log ``compare/`` artifacts to the parent run, or to a new run named
            ``compare`` (tag ``harness.compare=true``) when there is no parent.

    Returns:
        ``rows`` (the printed rows: rank, run_id, run_name, value, ci, n, params,
        dataset_sha256), ``all_rows``, ``varying`` (the param keys that differ), ``test``
        (the paired test of the two best runs, or ``None``), ``notes``, ``table`` (the
        Markdown printed), ``parent_run_id``, ``logged_to`` (a run id or ``None``) and
        ``artifacts`` (the logged paths).

    Raises:
        ConfigError: A bad argument, or a metric no run has.
        TrackingError: No such experiment, sweep or runs.
    """
    for bad, message in ((not 0 < confidence < 1, f"confidence: expected (0, 1), got {confidence}"),
                         (bootstrap < 1, f"bootstrap: expected >= 1, got {bootstrap}"),
                         (top is not None and top < 1, f"top: expected >= 1, got {top}")):
        if bad:
            raise ConfigError(message)
    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or "sqlite:///mlflow.db"
    c, exp = open_experiment(uri, experiment)
    runs, parent = select_runs(c, exp.experiment_id, sweep)
    if not runs:
        raise TrackingError(f"no finished runs in experiment {experiment!r} (sweep={sweep})")
    known = {k for r in runs for k in r.data.metrics}
    if metric not in known:
        raise ConfigError(f"metric: no run has {metric!r}{closest(metric, known)}; "
                          f"choose one of {', '.join(sorted(known))}")
    keys = sorted({k for r in runs for k in r.data.params} - COSMETIC)
    varying = [k for k in keys if len({r.data.params.get(k) for r in runs}) > 1]
    out = Path(tempfile.mkdtemp(prefix="harness-compare-"))
    try:
        values = {r.info.run_id: per_query(c, r.info.run_id, metric, out) for r in runs}
        rows = rank_rows(runs, values, metric, varying, bootstrap, confidence, seed)
        missing = [r["run_name"] for r in rows if r["ci"] is None]
        notes = [f"no per-query {metric} in samples.jsonl of "
                 f"{'any run' if len(missing) == len(rows) else ', '.join(missing)}: no CI"
                 ] if missing else []
        test = top_two(rows, values, notes, bootstrap, confidence, seed)
        result: dict[str, Any] = {
            "experiment": experiment, "metric": metric, "sweep": sweep,
            "parent_run_id": parent, "confidence": confidence, "bootstrap": bootstrap,
            "seed": seed, "varying": varying, "all_rows": rows, "rows": rows[:top],
            "test": test, "notes": notes, "logged_to": None, "artifacts": []}
        files = []
        if plots:
            try:
                files += plot(result, values, out)
            except ImportError:
                notes.append("plots skipped: matplotlib is not installed")
        table = result["table"] = render(result)
        files += [out / "table.md", out / "table.json"]
        files[-2].write_text(table, "utf-8")
        saved = {k: v for k, v in result.items() if k not in ("table", "all_rows")}
        files[-1].write_text(json.dumps(saved, indent=2) + "\n", "utf-8")
        if log:
            target = log_outputs(c, exp.experiment_id, parent, files)
            result.update(logged_to=target, artifacts=[f"compare/{f.name}" for f in files])
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return result
