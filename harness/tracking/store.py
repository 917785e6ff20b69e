"""The MLflow store: one client per store and process, experiments, runs opened and closed.

Importing this module imports nothing from MLflow; its functions do.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from harness.types import RunRecord

_CLIENTS: dict[str, Any] = {}


def client(uri: str) -> Any:
    """A cached ``MlflowClient`` for ``uri`` (the store opens once per process).

    Opening a fresh SQLite store creates its schema, and several processes doing that at
    once (parallel sweep jobs, two sweeps) corrupt each other's migrations (``duplicate
    column``, ``_alembic_tmp_experiments already exists``). So the first open of a SQLite
    store happens under an exclusive file lock beside the database.
    """
    uri = absolute(uri)
    if uri not in _CLIENTS:
        from mlflow.tracking import MlflowClient

        with _store_lock(uri):
            c = MlflowClient(tracking_uri=uri)
            c.search_experiments(max_results=1)  # forces the schema check or creation
        _CLIENTS[uri] = c
    return _CLIENTS[uri]


def absolute(uri: str) -> str:
    """A local SQLite store's URI with an absolute path: ``sqlite:///mlflow.db`` means the
    working directory's database, also after the process changes directory."""
    prefix = "sqlite:///"
    path = uri[len(prefix) :]
    if not uri.startswith(prefix) or path == ":memory:" or path.startswith("/"):
        return uri
    from pathlib import Path

    return prefix + str(Path(path).expanduser().absolute())


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
