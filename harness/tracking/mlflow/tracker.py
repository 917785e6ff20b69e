"""MLflow tracking. ``import mlflow`` costs about 2 s, so it happens only here, and by
default in a background process started before the evaluation, so that the import and
the opening of the store overlap with the work instead of adding to it.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from harness.core.errors import TrackingError
from harness.core.redact import redact, redact_uri
from harness.core.text import one_line
from harness.core.types import RunRecord, TrackedRun
from harness.tracking.mlflow import store
from harness.tracking.mlflow.store import client, close_run, failure, open_run

_PREWARMED: subprocess.Popen[str] | None = None


def _spawn_worker() -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "harness.tracking.mlflow.worker"],
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
    """End a prewarmed helper that no run claimed, without waiting for its imports: it has
    opened nothing yet."""
    global _PREWARMED
    proc, _PREWARMED = _PREWARMED, None
    if proc is not None:
        proc.kill()
        proc.communicate()


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
        # the tracker is built with the job's parts: the run starts when the job does
        self.started_ms = int(time.time() * 1000)
        self._proc: subprocess.Popen[str] | None = None
        self._pending: tuple[str, dict[str, str]] | None = None
        self.sweep = MlflowSweep(tracking_uri, experiment)

    keeps_artifacts = True

    @staticmethod
    def prewarm(settings: dict[str, str]) -> Callable[[], None] | None:
        """Start the background logger's MLflow imports now (see ``prewarm``), unless the
        run logs in this process (``tracking.background=false``); returns how to end it
        unclaimed."""
        if settings.get("background", "").lower() == "false":
            return None
        prewarm()
        return discard_prewarmed

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

        In a sweep the run becomes a child of the sweep's parent run. An experiment in
        MLflow's trash is refused here, before the work, where the store is a local file.
        """
        from harness.tracking.mlflow.experiments import check_local

        check_local(self.tracking_uri, self.experiment)
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
            "start_ms": self.started_ms,
            "busy_timeout_s": store.BUSY_TIMEOUT_S,
        }
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(json.dumps(header) + "\n")
            self._proc.stdin.flush()
        except OSError:
            pass  # the helper died (its stderr says why); ``finish`` reports it

    def finish(self, record: RunRecord) -> TrackedRun:
        """Log ``record`` and close the run.

        Raises:
            TrackingError: MLflow failed: one line naming the store, the cause, what to do,
                and where the run's results (already written) are.
        """
        if self._proc is None:
            run_name, tags = self._pending or ("default", {})
            run_id = exp_id = ""
            try:
                run_id, exp_id = open_run(self.tracking_uri, self.experiment, run_name, tags,
                                          self.started_ms)
                close_run(self.tracking_uri, run_id, record)
            except Exception as e:  # MLflow raises many types; report them as one
                if run_id:
                    with contextlib.suppress(Exception):  # not left RUNNING, if it can be
                        client(self.tracking_uri).set_terminated(run_id, "FAILED")
                raise TrackingError(_kept(failure(self.tracking_uri, e), record)) from None
            return self._tracked(run_id, exp_id)
        proc, self._proc = self._proc, None
        out, err = proc.communicate(json.dumps(record.to_json()) + "\n")
        reply = _last_json(out)
        if proc.returncode == 0 and "run_id" in reply:
            return self._tracked(str(reply["run_id"]), str(reply["experiment_id"]))
        if "error" in reply:  # text from another process: redacted here, with our secrets
            cause = one_line(redact(str(reply["error"])), None)
        else:  # the helper itself failed (it could not import MLflow, or was killed)
            lines = [line.strip() for line in err.splitlines() if line.strip()]
            last = lines[-1] if lines else f"exit code {proc.returncode}"
            cause = (f"MLflow logging failed ({redact_uri(self.tracking_uri)}): "
                     f"{one_line(redact(last))}")
        raise TrackingError(_kept(cause, record))

    def _tracked(self, run_id: str, experiment_id: str) -> TrackedRun:
        """Where the run was recorded, with the console's rows that lead to it."""
        from harness.tracking.mlflow.ui import ui_lines

        lines = (("mlflow run", f"{run_id} (experiment {experiment_id})"),
                 ("mlflow store", str(self.describe()["tracking_uri"])),
                 *ui_lines(self.tracking_uri, experiment_id, run_id))
        return TrackedRun(run_id, experiment_id, self.tracking_uri, lines)

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


class MlflowSweep:
    """The sweep part of ``MlflowTracker`` (``Tracker.sweep``): one parent run per sweep."""

    def __init__(self, tracking_uri: str, experiment: str) -> None:
        self.tracking_uri, self.experiment = tracking_uri, experiment
        self._parent: str | None = None
        self._sweep_dir: str | None = None
        self._opened: str | None = None  # the parent's id, kept after it is closed

    def begin_sweep(
        self, sweep_dir: str, tags: dict[str, str], params: dict[str, str] | None = None
    ) -> None:
        """Create the experiment and the sweep's parent run, before the jobs start.

        A store that cannot be used stops the command here, with its one line and exit
        code 2, before any job runs (Hydra would turn an exception raised in its callback
        into a warning, and every job would then fail on the same store).
        """
        from harness.tracking.sweep import open_parent

        self._sweep_dir = sweep_dir
        try:
            self._parent = self._opened = open_parent(
                self.tracking_uri, self.experiment, sweep_dir, tags, params or {}
            )
        except Exception as e:  # MLflow raises many types; report them as one
            _stop(f"{failure(self.tracking_uri, e)}; no job of the sweep has run")

    def end_sweep(self, objective: str, failed_jobs: int = 0) -> None:
        """Note the best child by ``objective`` and the number of failed jobs on the parent
        run and end it (FAILED when a job failed)."""
        from harness.tracking.sweep import close_parent

        parent, self._parent = self._parent, None
        if parent is None:
            return
        try:
            close_parent(self.tracking_uri, parent, objective, failed_jobs)
        except Exception as e:  # MLflow raises many types; report them as one
            where = f" in {self._sweep_dir}" if self._sweep_dir else ""
            _stop(
                f"{failure(self.tracking_uri, e)}; the sweep's parent run could not be closed, "
                f"the jobs' results are written{where}"
            )


    def console_lines(self) -> list[str]:
        """``mlflow parent <id>`` once the parent run is opened."""
        return [f"mlflow parent {self._opened}"] if self._opened else []

    def abort_sweep(self, status: str = "KILLED") -> None:
        """End the sweep's parent run with ``status`` (``KILLED``: the sweep was interrupted;
        ``FAILED``: no job could run), best effort: the command is ending already."""
        import os

        from harness.tracking.sweep import PARENT_ENV

        parent, self._parent = self._parent, None
        os.environ.pop(PARENT_ENV, None)
        if parent is not None:
            with contextlib.suppress(Exception):  # MLflow raises many types
                client(self.tracking_uri, write=True).set_terminated(parent, status)


def _stop(line: str) -> NoReturn:
    """End the command from a Hydra callback with one error line (see ``begin_sweep``)."""
    print(f"error: {redact(line)}", file=sys.stderr)
    raise SystemExit(2)


def _last_json(out: str) -> dict[str, Any]:
    """The helper's reply: the JSON object on its last line of output (``{}`` if none)."""
    lines = out.strip().splitlines()
    try:
        reply = json.loads(lines[-1]) if lines else {}
    except ValueError:
        return {}
    return reply if isinstance(reply, dict) else {}


def _kept(cause: str, record: RunRecord) -> str:
    """``cause``, and that the run's results are written all the same (and where)."""
    names = [Path(p).name for p in record.artifacts[:3]]
    if not names:
        return f"{cause}; only the logging failed"
    folder = Path(record.artifacts[0]).parent
    return (
        f"{cause}. Only the logging failed: the run's results are written in {folder} "
        f"({', '.join(names)})"
    )
