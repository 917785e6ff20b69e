"""The Hydra callback that makes a sweep one parent run with a child run per job.

``on_multirun_start`` runs once in the launching process, before jobs fan out, and asks
the configured tracker to open the sweep (``Tracker.begin_sweep``); ``on_multirun_end``
closes it. Hydra reports a callback's exceptions as warnings, so this is best effort: if
it fails, jobs still log, without a parent.
"""

from __future__ import annotations

from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from harness.protocols import Tracker


class SweepTracking(Callback):
    """Open the tracker's parent run for a multirun; close it with the best child."""

    def __init__(self) -> None:
        self._tracker: Tracker | None = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Open the sweep's parent run before any job starts."""
        if config.get("tracking") is None:
            return
        from hydra.utils import execution_whitelist, instantiate

        from harness import __version__
        from harness.registry import TRUSTED_TARGETS

        with execution_whitelist(TRUSTED_TARGETS):
            tracker: Tracker = instantiate(config.tracking, _convert_="all")
        params = config.hydra.sweeper.get("params") or {}
        if isinstance(params, DictConfig):
            params = OmegaConf.to_container(params, resolve=False)
        sweep_dir = str(config.hydra.sweep.dir)
        tags = {
            "harness.version": __version__,
            "harness.sweep": "parent",
            "hydra.sweep_dir": sweep_dir,
            "hydra.sweeper": str(config.hydra.sweeper.get("_target_", "")),
            "hydra.launcher": str(config.hydra.launcher.get("_target_", "")),
            "sweep.overrides": " ".join(config.hydra.overrides.task)[:5000],
            "sweep.params": str(params)[:5000],
        }
        tracker.begin_sweep(sweep_dir, tags)
        self._tracker = tracker

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Record the best child run on the parent and close it."""
        if self._tracker is None:
            return
        from pathlib import Path

        from harness.guard import failed_jobs

        tracker, self._tracker = self._tracker, None
        failed = len(failed_jobs(Path(str(config.hydra.sweep.dir))))
        tracker.end_sweep(str(config.get("run", {}).get("objective", "mean")), failed)
