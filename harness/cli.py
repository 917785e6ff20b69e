"""``python -m harness``: compose the config with Hydra, then run one job per config."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Absolute, because Hydra resolves a relative config_path against the module of the
#: task function, which breaks under ``python -m``.
CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "conf")

#: What config ``_target_`` values may name (Hydra 1.4's execution whitelist): our own
#: components. A config cannot make the harness call arbitrary Python.
TRUSTED_TARGETS = ("harness.*",)

#: Arguments after which no MLflow run will be logged, so no logger is prewarmed.
_NO_TRACKING = {
    "-h", "--help", "--hydra-help", "-i", "--info", "-c", "--cfg", "--version",
    "-m", "--multirun", "--shell-completion", "-sc", "tracking=none",
}


def _hydra_app() -> Callable[[], Any]:
    import hydra
    from omegaconf import DictConfig

    @hydra.main(config_path=CONFIG_DIR, config_name="config", execution_whitelist=TRUSTED_TARGETS)
    def task(cfg: DictConfig) -> float | None:
        from harness.runner import main as run_main

        return run_main(cfg)

    return task


def _on_signal(signum: int, frame: Any) -> None:
    from harness.errors import Interrupted

    raise Interrupted(signum)


def main() -> None:
    """Console entry point."""
    import signal

    from harness.tracking import mlflow as mlflow_tracking

    # SIGTERM (a scheduler, `kill`) stops the run as cleanly as Ctrl-C: the MLflow run is
    # marked KILLED and the rows written so far stay in samples.jsonl.
    signal.signal(signal.SIGTERM, _on_signal)
    if not _NO_TRACKING.intersection(sys.argv[1:]):
        # Start MLflow's 2-3 s of imports first, in parallel with Hydra and the work.
        mlflow_tracking.prewarm()
    try:
        _hydra_app()()
    finally:
        mlflow_tracking.discard_prewarmed()
