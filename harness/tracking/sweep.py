"""A sweep's parent MLflow run: opened before the jobs fan out, closed with the best child.

The parent's id reaches the jobs through the environment (inherited by joblib and Ray
workers started afterwards) and a file in the sweep directory (for launchers whose
workers do not inherit it).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.core.errors import TrackingError
from harness.core.metric_names import headline_of
from harness.core.objectives import (
    RankFields,
    Spec,
    best_job,
    pareto_front,
    parse,
    sort_key,
    with_headline,
)
from harness.tracking.mlflow.store import client, ensure_experiment

PARENT_ENV = "HARNESS_MLFLOW_PARENT_RUN_ID"
PARENT_FILE = "mlflow_parent_run_id"


def run_fields(objective: str) -> Callable[[Any], RankFields]:
    """``fields`` of an MLflow run: ``metrics[objective]``, ``metrics["n_unscored"]`` and
    the ``hydra.job_num`` tag."""

    def fields(run: Any) -> RankFields:
        num = run.data.tags.get("hydra.job_num", "")
        return (
            run.data.metrics.get(objective),
            run.data.metrics.get("n_unscored"),
            int(num) if num.isdigit() else None,
        )

    return fields


def parent_run_id(sweep_dir: str | None) -> str | None:
    """The sweep's parent run id, from the environment or the sweep directory."""
    if os.environ.get(PARENT_ENV):
        return os.environ[PARENT_ENV]
    if sweep_dir:
        path = Path(sweep_dir) / PARENT_FILE
        if path.is_file():
            return path.read_text().strip() or None
    return None


def parent_name(sweep_dir: str, params: dict[str, str]) -> str:
    """``sweep metric×top_k 07-52-08-123456``: what is swept, and when."""
    swept = "×".join(k.rsplit(".", 1)[-1] for k in params)[:60]
    return " ".join(p for p in ("sweep", swept, Path(sweep_dir).name) if p)


def open_parent(
    uri: str, experiment: str, sweep_dir: str, tags: dict[str, str], params: dict[str, str]
) -> str:
    """Create the experiment (once, before parallel jobs race on it) and the parent run,
    with the swept keys and their values as its params; publish its id to the jobs."""
    from mlflow.entities import Param
    from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH

    experiment_id = ensure_experiment(uri, experiment)
    c = client(uri, write=True)
    run = c.create_run(experiment_id, run_name=parent_name(sweep_dir, params), tags=tags)
    run_id: str = run.info.run_id
    logged = [Param(k, v[:MAX_PARAM_VAL_LENGTH]) for k, v in params.items()]
    if logged:
        c.log_batch(run_id, params=logged)
    path = Path(sweep_dir) / PARENT_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(run_id)
    except OSError as e:
        c.delete_run(run_id)
        raise TrackingError(
            f"cannot write {path} ({e.strerror}), which gives the sweep's jobs their parent "
            "run; choose a writable hydra.sweep.dir"
        ) from None
    os.environ[PARENT_ENV] = run_id
    return run_id


def close_parent(uri: str, run_id: str, objective: Spec, failed_jobs: int = 0) -> None:
    """Record the number of jobs, of failed jobs and the best child by the first of the
    objectives (``run.objective``, in its direction); with several, the Pareto front's
    children too (``sweep.pareto_runs``, ``sweep.pareto_jobs``); end the parent (FAILED
    when a job failed)."""
    try:
        c = client(uri, write=True)
        parent = c.get_run(run_id)
        children = c.search_runs(
            [parent.info.experiment_id],
            filter_string=f"tags.`mlflow.parentRunId` = '{run_id}'",
            max_results=10000,
        )
        # ``headline``: the metric that is every child's headline (ppi_mean when labelled)
        objectives = parse(with_headline(objective, [
            headline_of(r.data.metrics, r.data.tags) for r in children]))
        first = objectives[0]
        tags = {"sweep.jobs": str(len(children)), "sweep.failed_jobs": str(failed_jobs),
                "sweep.objective": ",".join(map(str, objectives)),
                "sweep.direction": ",".join(o.direction for o in objectives)}
        metrics: dict[str, float] = {}
        rest = objectives[1:]
        best = best_job(children, run_fields(first.name), first.maximize,
                        lambda r: sort_key([r.data.metrics.get(o.name) for o in rest], rest))
        if best is not None:
            # the best child's metrics, so that MLflow's list view compares sweeps
            metrics = {**best.data.metrics,
                       f"best_{first.name}": best.data.metrics[first.name]}
            tags.update({"sweep.best_run_id": best.info.run_id,
                         "sweep.best_run_name": best.info.run_name or "",
                         "sweep.best_job_num": best.data.tags.get("hydra.job_num", "")})
        if len(objectives) > 1:
            points = [[r.data.metrics.get(o.name) for o in objectives] for r in children]
            front = [children[i] for i in pareto_front(points, objectives)]
            tags["sweep.pareto_runs"] = _capped([r.info.run_id for r in front])
            tags["sweep.pareto_jobs"] = _capped(
                [r.data.tags.get("hydra.job_num", "?") for r in front])
        _log(c, run_id, tags, metrics)
        c.set_terminated(run_id, "FAILED" if failed_jobs else "FINISHED")
    finally:
        os.environ.pop(PARENT_ENV, None)


def _capped(items: list[str]) -> str:
    """``items`` comma-separated, within MLflow's tag length (then ending ``,…``)."""
    from mlflow.utils.validation import MAX_TAG_VAL_LENGTH

    text = ",".join(items)
    if len(text) <= MAX_TAG_VAL_LENGTH:
        return text
    return text[: text.rfind(",", 0, MAX_TAG_VAL_LENGTH - 2)] + ",…"


def _log(c: Any, run_id: str, tags: dict[str, str], metrics: dict[str, float]) -> None:
    import time

    from mlflow.entities import Metric, RunTag

    now = int(time.time() * 1000)
    c.log_batch(run_id, metrics=[Metric(k, v, now, 0) for k, v in metrics.items()],
                tags=[RunTag(k, v) for k, v in tags.items()])
