"""MLflow tracking. ``import mlflow`` costs about 2 s, so it happens only here, and by
default in a background process started before the evaluation, so that the import and
the opening of the store overlap with the work instead of adding to it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from harness.errors import TrackingError
from harness.redact import redact_uri
from harness.tracking.store import close_run, open_run
from harness.types import RunRecord, TrackedRun

_PREWARMED: subprocess.Popen[str] | None = None


def _spawn_worker() -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "harness.tracking.worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def prewarm() -> None:
    """Start the background logger now, before the config is even composed.

    The helper imports MLflow while Hydra composes and the evaluation runs; if the run
    turns out not to track to MLflow, ``discard_prewarmed`` ends it unused.
    """
    global _PREWARMED
    if _PREWARMED is None:
        _PREWARMED = _spawn_worker()


def discard_prewarmed() -> None:
    """End a prewarmed helper that no run claimed (it exits on end-of-input)."""
    global _PREWARMED
    proc, _PREWARMED = _PREWARMED, None
    if proc is not None:
        proc.communicate("")


class MlflowTracker:
    """Log each run to MLflow (``tracking=mlflow``, the default).

    Args:
        tracking_uri: The store; by default ``$MLFLOW_TRACKING_URI`` or
            ``sqlite:///mlflow.db`` in the working directory (MLflow's own default).
        experiment: The MLflow experiment name.
        background: Open the store in a helper process while the evaluation runs
            (``auto``: for single runs; multirun jobs reuse one in-process client).
    """

    def __init__(self, tracking_uri: str, experiment: str, background: str | bool = "auto") -> None:
        if not tracking_uri:
            raise TrackingError("tracking.tracking_uri is empty")
        self.tracking_uri, self.experiment = tracking_uri, experiment
        self.background = background
        self._proc: subprocess.Popen[str] | None = None
        self._pending: tuple[str, dict[str, str]] | None = None
        self._parent: str | None = None

    keeps_artifacts = True

    @staticmethod
    def prewarm() -> None:
        """Start the background logger's MLflow imports now (see ``prewarm``)."""
        prewarm()

    def describe(self) -> dict[str, Any]:
        """Non-secret settings."""
        return {
            "backend": "mlflow",
            "tracking_uri": redact_uri(self.tracking_uri),
            "experiment": self.experiment,
        }

    def begin(
        self,
        run_name: str,
        tags: dict[str, str],
        *,
        multirun: bool = False,
        sweep_dir: str | None = None,
    ) -> None:
        """Start opening the run: in a helper process, or remember it for ``finish``.

        In a sweep the run becomes a child of the sweep's parent run.
        """
        if multirun:
            from harness.tracking.sweep import parent_run_id

            parent = parent_run_id(sweep_dir)
            if parent:
                tags = {**tags, "mlflow.parentRunId": parent}
        use_worker = self.background is True or (self.background == "auto" and not multirun)
        if not use_worker:
            self._pending = (run_name, tags)
            return
        global _PREWARMED
        self._proc, _PREWARMED = _PREWARMED or _spawn_worker(), None
        header = {
            "uri": self.tracking_uri,
            "experiment": self.experiment,
            "run_name": run_name,
            "tags": tags,
        }
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(header) + "\n")
        self._proc.stdin.flush()

    def finish(self, record: RunRecord) -> TrackedRun:
        """Log ``record`` and close the run; raise ``TrackingError`` if MLflow failed."""
        if self._proc is None:
            run_name, tags = self._pending or ("default", {})
            try:
                run_id, exp_id = open_run(self.tracking_uri, self.experiment, run_name, tags)
                close_run(self.tracking_uri, run_id, record)
            except Exception as e:  # MLflow raises many types; report them as one
                raise TrackingError(f"MLflow logging failed: {e}") from e
            return TrackedRun(run_id, exp_id, self.tracking_uri)
        proc, self._proc = self._proc, None
        out, err = proc.communicate(json.dumps(record.to_json()) + "\n")
        if proc.returncode != 0:
            lines = [line for line in err.strip().splitlines() if line.strip()]
            raise TrackingError(
                f"MLflow logging failed ({redact_uri(self.tracking_uri)}): "
                + (lines[-1] if lines else f"exit code {proc.returncode}")
            )
        result = json.loads(out.strip().splitlines()[-1])
        return TrackedRun(result["run_id"], result["experiment_id"], self.tracking_uri)

    def abort(self, status: str = "KILLED") -> None:
        """End the run opened by ``begin`` without results.

        Args:
            status: ``KILLED`` (interrupted), ``FAILED``, or ``DELETE`` for a run that
                never got past bad input and should not litter the experiment.
        """
        self._pending = None
        if self._proc is not None:
            proc, self._proc = self._proc, None
            proc.communicate(json.dumps({"abort": status}) + "\n")

    def begin_sweep(self, sweep_dir: str, tags: dict[str, str]) -> None:
        """Create the experiment and the sweep's parent run, before the jobs start."""
        from harness.tracking.sweep import open_parent

        self._parent = open_parent(self.tracking_uri, self.experiment, sweep_dir, tags)

    def end_sweep(self, objective: str) -> None:
        """Note the best child by ``objective`` on the parent run and end it."""
        from harness.tracking.sweep import close_parent

        parent, self._parent = self._parent, None
        if parent is not None:
            close_parent(self.tracking_uri, parent, objective)
