"""The Hydra callback that makes a sweep one parent run with a child run per job.

``on_multirun_start`` runs once in the launching process, before jobs fan out: it tells
the jobs which keys are swept (their run names) and asks the configured tracker to open
the sweep (``Tracker.sweep.begin_sweep``) with those keys as params; ``on_multirun_end`` closes
it and prints the jobs ranked (with any tracker, ``tracking=none`` too). Hydra reports a
callback's exceptions as warnings, so this is best effort: if it fails, jobs still log,
without a parent.
"""

from __future__ import annotations

import sys
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from harness.core.protocols import SweepTracker, Tracker


class SweepTracking(Callback):
    """Open the tracker's parent run for a multirun; close it with the best child."""

    def __init__(self) -> None:
        self._sweep: SweepTracker | None = None
        self._stopped = False  # the tracker stopped the command before any job ran

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Publish the swept keys; open the sweep's parent run before any job starts."""
        from harness.tracking.names import publish_swept, swept_params

        params = config.hydra.sweeper.get("params") or {}
        if isinstance(params, DictConfig):
            params = OmegaConf.to_container(params, resolve=False)
        assert isinstance(params, dict)
        swept = swept_params(list(config.hydra.overrides.task), params)
        publish_swept(swept)
        if config.get("tracking") is None or _dry(config):  # a dry sweep tracks nothing
            return
        from harness import __version__
        from harness.config.build import instantiate
        from harness.core.redact import redact
        from harness.core.secrets import reveal

        # as each job builds it (harness.config.build): trusted, checked against its class
        tracker: Tracker = instantiate(config, "tracking")
        if tracker.sweep is None:  # a tracker without a sweep part: no parent run
            return
        sweep_dir = str(config.hydra.sweep.dir)
        # unresolved: a credential-bearing override is a reference to its hidden value here
        task = OmegaConf.to_container(config.hydra.overrides.task, resolve=False)
        assert isinstance(task, list)
        tags = {
            "harness.version": __version__,
            "harness.sweep": "parent",
            "hydra.sweep_dir": sweep_dir,
            "hydra.sweeper": str(config.hydra.sweeper.get("_target_", "")),
            "hydra.launcher": str(config.hydra.launcher.get("_target_", "")),
            "sweep.overrides": reveal(redact(" ".join(map(str, task))))[:5000],
            "sweep.params": reveal(redact(str(params)))[:5000],
        }
        try:
            tracker.sweep.begin_sweep(sweep_dir, tags, swept)
        except SystemExit:  # a store that cannot be used ends the command before any job
            self._stopped = True
            raise
        self._sweep = tracker.sweep

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Write the sweep's report.html; record the best child run on the parent, close it;
        print the jobs ranked by the objective."""
        import os
        from pathlib import Path

        from harness.run.outputs import failed_jobs
        from harness.tracking.names import SWEEP_KEYS_ENV, swept_keys

        ending = sys.exc_info()[1]  # Hydra calls this from a finally: what ends the sweep
        try:
            sweep_dir = Path(str(config.hydra.sweep.dir))
        except Exception:  # noqa: BLE001 - it did not resolve: the guard has said so
            sweep_dir, ending = Path(), ending or RuntimeError("hydra.sweep.dir")
        interrupted = isinstance(ending, KeyboardInterrupt) or (
            isinstance(ending, SystemExit) and isinstance(ending.code, int)
            and ending.code >= 128)
        if self._stopped or interrupted or ending is not None or not _jobs_started(sweep_dir):
            # a line says why (a signal, the store, the sweeper): no report, no ranking, and
            # the parent run says the sweep did not finish
            self._stopped = False
            os.environ.pop(SWEEP_KEYS_ENV, None)
            sweep, self._sweep = self._sweep, None
            if sweep is not None:
                _abort(sweep, "KILLED" if interrupted else "FAILED", _objective(config))
            return
        if _dry(config):  # no report, no parent run: the jobs' estimates and their total
            os.environ.pop(SWEEP_KEYS_ENV, None)
            _dry_total(config, sweep_dir)
            return
        report = None
        if config.get("run", {}).get("report", True):
            from harness.report.sweep import sweep_report

            report = sweep_report(str(config.hydra.sweep.dir))
        objective = _objective(config)
        swept = swept_keys()
        os.environ.pop(SWEEP_KEYS_ENV, None)
        sweep, self._sweep = self._sweep, None
        if sweep is not None:
            sweep.end_sweep(objective, len(failed_jobs(sweep_dir)))
        if not config.get("run", {}).get("quiet", False):
            from harness.report.console import read_jobs, render

            lines = [f"{'report':<14}{report.absolute()}"] if report is not None else []
            lines += sweep.console_lines() if sweep is not None else []
            print(render(read_jobs(sweep_dir, objective), objective, sweep_dir, swept, lines))


def _dry(config: DictConfig) -> bool:
    """Whether the sweep is a dry run (``run.dry_run``)."""
    return bool(config.get("run", {}).get("dry_run", False))


def _dry_total(config: DictConfig, sweep_dir: Any) -> None:
    """A dry sweep's end: the jobs' estimates and their total, written and printed."""
    from harness.report.bill import sweep_estimate_lines
    from harness.run.estimate import ESTIMATE, sweep_estimate
    from harness.run.outputs import write_json

    estimate = sweep_estimate(sweep_dir)
    path = write_json(sweep_dir / ESTIMATE, estimate)
    if not config.get("run", {}).get("quiet", False):
        print(sweep_estimate_lines(estimate, str(path)))


def _abort(sweep: SweepTracker, status: str, objective: str) -> None:
    """End the parent run with ``status`` (a declared member of ``SweepTracker``)."""
    sweep.abort_sweep(status)


def _jobs_started(sweep_dir: Any) -> bool:
    """Whether any job of the sweep started (each makes its folder in the sweep's)."""
    try:
        return any(p.is_dir() for p in sweep_dir.iterdir())
    except OSError:
        return False


def _objective(config: DictConfig) -> str:
    """``run.objective`` as ``ndcg_at_10,-retrieval_p95_ms``; ``mean`` when it is bad (each
    job has said why)."""
    from harness.core.errors import ConfigError
    from harness.core.objectives import spec

    value = config.get("run", {}).get("objective", "mean")
    if OmegaConf.is_config(value):
        value = OmegaConf.to_container(value)
    try:
        return spec(value)
    except ConfigError:
        return "mean"
