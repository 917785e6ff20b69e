"""The Hydra callback that guards output folders and reports a sweep's failed jobs.

Before Hydra writes anything into a run's folder (``.hydra/``, the log), the folder is
checked: it must be writable and must not hold another run's outputs or a run in
progress; it is then claimed for this run. A sweep's folder is checked the same way. A
sweep goes on when one of its jobs fails (the job records its error in its folder); at
the end the guard says how many failed, and the command exits non-zero.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NoReturn

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from harness.core.errors import HarnessError
from harness.run.outputs import FAILED, check_folder, claim, failed_jobs


def _stop(error: HarnessError) -> NoReturn:
    from harness.core.redact import redact

    print(f"error: {redact(str(error))}", file=sys.stderr)
    sys.exit(2)


def _gate_only(path: Path) -> bool:
    from harness.core.errors import GATE_FAILED

    try:
        return path.read_text("utf-8").startswith(f"error: {GATE_FAILED}")
    except OSError:
        return False


class RunGuard(Callback):
    """Check and claim output folders; count a sweep's failed jobs."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Check and claim ``hydra.run.dir`` before Hydra writes into it."""
        try:
            claim(check_folder(str(config.hydra.run.dir), "hydra.run.dir"))
        except HarnessError as e:
            _stop(e)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Check ``hydra.sweep.dir`` before any job starts."""
        sweep_dir = str(config.hydra.sweep.dir)
        try:
            path = check_folder(sweep_dir, "hydra.sweep.dir")
        except HarnessError as e:
            _stop(e)
        if (path / "multirun.yaml").exists() or failed_jobs(path):
            _stop(HarnessError(
                f"hydra.sweep.dir={sweep_dir}: the folder already holds an earlier sweep; "
                "choose a new folder (or leave it unset for a fresh one)"
            ))

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Say how many jobs failed and end the command with code 2 (4 when every failed job
        only failed its gate). Hydra calls this callback last (end callbacks run in
        reverse order), after the sweep's parent run is closed."""
        failed = failed_jobs(Path(str(config.hydra.sweep.dir)))
        if not failed:
            return
        gates = sum(_gate_only(p / FAILED) for p in failed)
        names = ", ".join(str(p) for p in failed[:5]) + (" …" if len(failed) > 5 else "")
        print(
            f"error: {len(failed)} job(s) of the sweep failed ({names}); each one's "
            f"error is in its folder's {FAILED}, the other jobs ran",
            file=sys.stderr,
        )
        sys.exit(4 if gates == len(failed) else 2)
