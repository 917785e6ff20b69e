"""A sweep's parent MLflow run: opened before the jobs fan out, closed with the best child.

The parent's id reaches the jobs through the environment (inherited by joblib and Ray
workers started afterwards) and a file in the sweep directory (for launchers whose
workers do not inherit it).
"""

from __future__ import annotations

import os
from pathlib import Path

from harness.errors import TrackingError
from harness.tracking.store import client, ensure_experiment

PARENT_ENV = "HARNESS_MLFLOW_PARENT_RUN_ID"
PARENT_FILE = "mlflow_parent_run_id"


def parent_run_id(sweep_dir: str | None) -> str | None:
    """The sweep's parent run id, from the environment or the sweep directory."""
    if os.environ.get(PARENT_ENV):
        return os.environ[PARENT_ENV]
    if sweep_dir:
        path = Path(sweep_dir) / PARENT_FILE
        if path.is_file():
            return path.read_text().strip() or None
    return None


def open_parent(uri: str, experiment: str, sweep_dir: str, tags: dict[str, str]) -> str:
    """Create the experiment (once, before parallel jobs race on it) and the parent run;
    publish its id to the jobs."""
    experiment_id = ensure_experiment(uri, experiment)
    c = client(uri, write=True)
    run = c.create_run(experiment_id, run_name=f"sweep {Path(sweep_dir).name}", tags=tags)
    run_id: str = run.info.run_id
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


def close_parent(uri: str, run_id: str, objective: str, failed_jobs: int = 0) -> None:
    """Record the number of jobs, of failed jobs and the best child by ``objective``; end
    the parent (FAILED when a job failed)."""
    try:
        c = client(uri, write=True)
        parent = c.get_run(run_id)
        children = c.search_runs(
            [parent.info.experiment_id],
            filter_string=f"tags.`mlflow.parentRunId` = '{run_id}'",
            max_results=10000,
        )
        scored = [r for r in children if objective in r.data.metrics]
        c.set_tag(run_id, "sweep.jobs", str(len(children)))
        c.set_tag(run_id, "sweep.failed_jobs", str(failed_jobs))
        if scored:
            best = max(scored, key=lambda r: r.data.metrics[objective])
            c.log_metric(run_id, f"best_{objective}", best.data.metrics[objective])
            c.set_tag(run_id, "sweep.best_run_id", best.info.run_id)
            c.set_tag(run_id, "sweep.best_run_name", best.info.run_name or "")
        c.set_terminated(run_id, "FAILED" if failed_jobs else "FINISHED")
    finally:
        os.environ.pop(PARENT_ENV, None)
