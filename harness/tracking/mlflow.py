"""MLflow tracking. ``import mlflow`` costs about 2 s, so it happens only here, and by
default in a background process started before the evaluation, so that the import and
the opening of the store overlap with the work instead of adding to it.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

from harness.errors import TrackingError
from harness.tracking.base import RunRecord, TrackedRun

_CLIENTS: dict[str, Any] = {}
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


def redact_uri(uri: str) -> str:
    """Drop credentials from a URI (``scheme://user:pass@host`` -> ``scheme://***@host``)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(uri)
    if parts.username or parts.password:
        host = parts.hostname or ""
        netloc = f"***@{host}" + (f":{parts.port}" if parts.port else "")
        return urlunsplit(parts._replace(netloc=netloc))
    return uri


def client(uri: str) -> Any:
    """A cached ``MlflowClient`` for ``uri`` (the store opens once per process).

    Opening a fresh SQLite store creates its schema, and several processes doing that at
    once (parallel sweep jobs, two sweeps) corrupt each other's migrations (``duplicate
    column``, ``_alembic_tmp_experiments already exists``). So the first open of a SQLite
    store happens under an exclusive file lock beside the database.
    """
    if uri not in _CLIENTS:
        from mlflow.tracking import MlflowClient

        with _store_lock(uri):
            c = MlflowClient(tracking_uri=uri)
            c.search_experiments(max_results=1)  # forces the schema check or creation
        _CLIENTS[uri] = c
    return _CLIENTS[uri]


@contextlib.contextmanager
def _store_lock(uri: str) -> Iterator[None]:
    """An exclusive lock for opening a local SQLite store (no-op for other stores)."""
    prefix = "sqlite:///"
    if not uri.startswith(prefix) or uri == f"{prefix}:memory:":
        yield
        return
    import fcntl
    from pathlib import Path

    db = Path(uri[len(prefix):]).expanduser()
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{db}.harness-lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_experiment(uri: str, name: str) -> str:
    """Return the id of experiment ``name``, creating it if needed (race-safe)."""
    from mlflow.exceptions import MlflowException

    c = client(uri)
    exp = c.get_experiment_by_name(name)
    if exp is not None:
        return str(exp.experiment_id)
    try:
        return str(c.create_experiment(name))
    except MlflowException:
        exp = c.get_experiment_by_name(name)  # another process created it meanwhile
        if exp is None:
            raise
        return str(exp.experiment_id)


def open_run(uri: str, experiment: str, run_name: str, tags: dict[str, str]) -> tuple[str, str]:
    """Create a RUNNING run; return ``(run_id, experiment_id)``."""
    experiment_id = ensure_experiment(uri, experiment)
    run = client(uri).create_run(experiment_id, run_name=run_name, tags=tags)
    return run.info.run_id, experiment_id


def close_run(uri: str, run_id: str, record: RunRecord) -> None:
    """Log params, metrics, tags and artifacts of ``record``, then end the run."""
    import time

    from mlflow.entities import Metric, Param, RunTag
    from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH, MAX_PARAMS_TAGS_PER_BATCH

    c = client(uri)
    now = int(time.time() * 1000)
    params = [Param(k, v) for k, v in record.params.items() if len(v) <= MAX_PARAM_VAL_LENGTH]
    tags = [RunTag(k, v) for k, v in record.tags.items()]
    metrics = [Metric(k, float(v), now, 0) for k, v in record.metrics.items()]
    step = MAX_PARAMS_TAGS_PER_BATCH
    for i in range(0, max(len(params), len(tags), 1), step):
        c.log_batch(run_id, params=params[i : i + step], tags=tags[i : i + step])
    for i in range(0, len(metrics), 1000):
        c.log_batch(run_id, metrics=metrics[i : i + 1000])
    for path in record.artifacts:
        c.log_artifact(run_id, path)
    c.set_terminated(run_id, record.status)


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
            from harness.tracking.callbacks import parent_run_id

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
