"""Hydra callbacks that make a sweep one MLflow parent run with a child run per job.

``on_multirun_start`` runs once in the launching process, before jobs fan out: it creates
the experiment (parallel jobs on a fresh SQLite store otherwise race on schema creation)
and the parent run, whose id reaches the jobs through the environment (inherited by
joblib and Ray workers started afterwards) and a file in the sweep directory (for
launchers whose workers do not inherit it). Hydra reports a callback's exceptions as
warnings, so this is best effort: if it fails, jobs still log, without a parent.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

PARENT_ENV = "HARNESS_MLFLOW_PARENT_RUN_ID"
PARENT_FILE = "mlflow_parent_run_id"


def _tracking(config: DictConfig) -> tuple[str, str] | None:
    """``(tracking_uri, experiment)`` when the sweep logs to MLflow, else ``None``."""
    node = config.get("tracking")
    if node is None or node.get("_target_") != "harness.tracking.mlflow.MlflowTracker":
        return None
    return str(node.tracking_uri), str(node.experiment)


def parent_run_id(sweep_dir: str | None) -> str | None:
    """The sweep's parent run id, from the environment or the sweep directory."""
    if os.environ.get(PARENT_ENV):
        return os.environ[PARENT_ENV]
    if sweep_dir:
        path = Path(sweep_dir) / PARENT_FILE
        if path.is_file():
            return path.read_text().strip() or None
    return None


class SweepTracking(Callback):
    """Open an MLflow parent run for a multirun; close it with the best child's score."""

    def __init__(self) -> None:
        self._parent: tuple[str, str] | None = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Create the experiment and the parent run before any job starts."""
        tracking = _tracking(config)
        if tracking is None:
            return
        from harness import __version__
        from harness.tracking.mlflow import client, ensure_experiment

        uri, experiment = tracking
        experiment_id = ensure_experiment(uri, experiment)
        sweep_dir = str(config.hydra.sweep.dir)
        params = config.hydra.sweeper.get("params") or {}
        if isinstance(params, DictConfig):
            params = OmegaConf.to_container(params, resolve=False)
        overrides = list(config.hydra.overrides.task)
        tags = {
            "harness.version": __version__,
            "harness.sweep": "parent",
            "hydra.sweep_dir": sweep_dir,
            "hydra.sweeper": str(config.hydra.sweeper.get("_target_", "")),
            "hydra.launcher": str(config.hydra.launcher.get("_target_", "")),
            "sweep.overrides": " ".join(overrides)[:5000],
            "sweep.params": str(params)[:5000],
        }
        run = client(uri).create_run(
            experiment_id, run_name=f"sweep {Path(sweep_dir).name}", tags=tags
        )
        run_id = run.info.run_id
        os.environ[PARENT_ENV] = run_id
        Path(sweep_dir).mkdir(parents=True, exist_ok=True)
        (Path(sweep_dir) / PARENT_FILE).write_text(run_id)
        self._parent = (uri, run_id)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Record the best child run on the parent and close it."""
        if self._parent is None:
            return
        from harness.tracking.mlflow import client

        uri, run_id = self._parent
        c = client(uri)
        parent = c.get_run(run_id)
        children = c.search_runs(
            [parent.info.experiment_id],
            filter_string=f"tags.`mlflow.parentRunId` = '{run_id}'",
            max_results=10000,
        )
        objective = str(config.get("run", {}).get("objective", "mean"))
        scored = [r for r in children if objective in r.data.metrics]
        c.set_tag(run_id, "sweep.jobs", str(len(children)))
        if scored:
            best = max(scored, key=lambda r: r.data.metrics[objective])
            c.log_metric(run_id, f"best_{objective}", best.data.metrics[objective])
            c.set_tag(run_id, "sweep.best_run_id", best.info.run_id)
            c.set_tag(run_id, "sweep.best_run_name", best.info.run_name or "")
        c.set_terminated(run_id, "FINISHED")
        os.environ.pop(PARENT_ENV, None)
        self._parent = None
