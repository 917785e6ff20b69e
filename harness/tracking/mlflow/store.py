"""The MLflow store: one client per store and process, experiments, runs opened and closed.

A local SQLite store is checked before MLflow opens it (MLflow retries an unopenable file
for minutes and reports a corrupt one as SQLAlchemy's "Background on this error"): its
folder, the file, and that it can be read and written. Every failure becomes one line
naming the store, the cause and what to do (``failure``).

Importing this module imports nothing from MLflow; its functions do.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.core.errors import TrackingError
from harness.core.metric_names import headline_of
from harness.core.redact import redact, redact_uri
from harness.core.text import clip
from harness.core.types import RunRecord
from harness.tracking.mlflow import server, sqlite_uri, ui, view
from harness.tracking.mlflow.experiments import refuse_deleted
from harness.tracking.mlflow.sqlite_uri import local_file as local_file  # compare's reader
from harness.tracking.mlflow.table import reader_views

_CLIENTS: dict[str, Any] = {}
_WRITABLE: set[str] = set()
#: Seconds to wait for a local store that another process holds locked (MLflow's own wait).
BUSY_TIMEOUT_S = 20.0
#: Local stores up to this size get SQLite's ``quick_check`` when first opened (~1 ms/MB).
CHECK_MAX_BYTES = 256 * 2**20

_ELSEWHERE = (
    "set tracking.tracking_uri=sqlite:///OTHER/mlflow.db (or $MLFLOW_TRACKING_URI) to use "
    "another store, or tracking=none to log nothing"
)
_ADVICE = {
    "corrupt": f"move it aside (the next run creates a new store), or {_ELSEWHERE}",
    "locked": f"wait until the process that holds it ends, or {_ELSEWHERE}",
    "readonly": f"make it and its folder writable, or {_ELSEWHERE}",
    "open": f"make it and its folder writable, or {_ELSEWHERE}",
    "path": f"fix the path, or {_ELSEWHERE}",
    "other": _ELSEWHERE,
}


def client(uri: str, *, write: bool = False) -> Any:
    """A cached ``MlflowClient`` for ``uri`` (the store opens once per process).

    Opening a fresh SQLite store creates its schema; processes doing that at once (parallel
    sweep jobs, two sweeps) corrupt each other's migrations (``duplicate column``), so the
    first open of a SQLite store happens under an exclusive file lock beside the database.

    Args:
        uri: The store.
        write: Check (once per process) that a local store can be written to; the
            functions here that log ask for it, readers (``harness.compare``) do not.

    Raises:
        TrackingError: A local store that cannot be used, in one line (``failure``).
    """
    uri = sqlite_uri.absolute(uri)  # the same file after the process changes folder
    if write:
        sqlite_uri.check_writable(uri)
    if uri not in _CLIENTS or (write and uri not in _WRITABLE):
        with _store_lock(uri, write):
            if uri not in _CLIENTS:
                import logging

                from mlflow.tracking import MlflowClient

                server.check(uri)  # a tracking server that is down or refuses us: one line
                # "Creating initial MLflow database tables..." is MLflow's business
                logging.getLogger("mlflow.store.db.utils").setLevel(logging.WARNING)
                c = MlflowClient(tracking_uri=uri)
                c.search_experiments(max_results=1)  # forces the schema check or creation
                _CLIENTS[uri] = c
        if write:
            _WRITABLE.add(uri)
    return _CLIENTS[uri]


@contextlib.contextmanager
def _store_lock(uri: str, write: bool) -> Iterator[None]:
    """For a local SQLite store: check its folder, hold an exclusive lock beside it and
    check the database inside (no-op for other stores)."""
    db = sqlite_uri.local_file(uri)
    if db is None:
        yield
        return
    import fcntl

    _check_folder(uri, db)
    try:
        handle = open(f"{db}.harness-lock", "a")  # noqa: SIM115 - held across the yield
    except OSError as e:
        folder = f"cannot write in its folder {db.parent} ({e.strerror})"
        raise _unusable(uri, "readonly", folder) from None
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            _check_database(uri, db, write)
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _check_folder(uri: str, db: Path) -> None:
    """The store's folder exists (created when missing) and the file is not a folder."""
    folders = (db.parent, *db.parent.parents)
    blocker = next((p for p in folders if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        raise _unusable(uri, "path", f"{blocker} is a file, not a folder")
    try:
        db.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        cause = f"cannot create its folder {db.parent} ({e.strerror})"
        raise _unusable(uri, "path", cause) from None
    if db.exists() and not db.is_file():
        raise _unusable(uri, "path", f"{db} is a folder, not a database file")


def _check_database(uri: str, db: Path, write: bool) -> None:
    """The file is a readable, intact SQLite database (that this process can write to)."""
    try:
        conn = sqlite3.connect(db, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error as e:
        raise TrackingError(failure(uri, e)) from None
    try:
        if (db.stat().st_size if db.exists() else 0) <= CHECK_MAX_BYTES:
            problems = [str(r[0]) for r in conn.execute("PRAGMA quick_check(3)").fetchall()]
            if problems != ["ok"]:
                detail = "; ".join(problems)
                raise _unusable(uri, "corrupt", f"the database file is corrupt ({detail})")
        else:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        if write:
            conn.execute("BEGIN IMMEDIATE")
            try:  # a write that is rolled back: read-only files pass BEGIN but fail here
                conn.execute("CREATE TABLE harness_write_check (x)")
            finally:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
    except sqlite3.Error as e:
        raise TrackingError(failure(uri, e)) from None
    finally:
        conn.close()


def _unusable(uri: str, kind: str, cause: str) -> TrackingError:
    return TrackingError(redact(f"MLflow store {redact_uri(uri)}: {cause}; {_ADVICE[kind]}"))


def failure(uri: str, error: BaseException) -> str:
    """One line on why the store at ``uri`` failed: the store (without credentials), the
    cause and what to do. A ``TrackingError`` already is such a line."""
    if isinstance(error, TrackingError):
        return str(error)
    cause = _sqlite_cause(error)
    if cause is not None:
        kind, text = cause
    elif isinstance(error, OSError):
        where = f" ({error.filename})" if error.filename else ""
        kind, text = "path", f"{error.strerror or error}{where}"
    else:
        kind, text = "other", _first_line(error)
    return str(_unusable(uri, kind, text))


def _sqlite_cause(error: BaseException) -> tuple[str, str] | None:
    """The kind and text of the SQLite error behind ``error`` (SQLAlchemy keeps it as
    ``orig``, MLflow as the cause), or ``None``."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [error]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, sqlite3.Error):
            return _kind(e), _describe(e)
        orig = getattr(e, "orig", None)
        todo += [orig if isinstance(orig, BaseException) else None, e.__cause__, e.__context__]
    return None


def _kind(e: sqlite3.Error) -> str:
    name = getattr(e, "sqlite_errorname", "") or ""
    for prefix, kind in (
        ("SQLITE_NOTADB", "corrupt"), ("SQLITE_CORRUPT", "corrupt"), ("SQLITE_BUSY", "locked"),
        ("SQLITE_LOCKED", "locked"), ("SQLITE_READONLY", "readonly"), ("SQLITE_CANTOPEN", "open"),
    ):
        if name.startswith(prefix):
            return kind
    return "other"


def _describe(e: sqlite3.Error) -> str:
    kind = _kind(e)
    if kind == "corrupt":
        return f"the database file is corrupt ({e})"
    if kind == "locked":
        return f"another process holds the database locked ({e}, waited {BUSY_TIMEOUT_S:g} s)"
    if kind == "readonly":
        return f"the database is read-only ({e})"
    if kind == "open":
        return f"SQLite cannot open the file or create its journal beside it ({e})"
    return f"SQLite failed ({e})"


def _first_line(error: BaseException) -> str:
    """The message of ``error`` without SQLAlchemy's ``[SQL: …]`` and background lines."""
    lines = [x.strip() for x in str(error).splitlines()]
    keep = [x for x in lines if x and not x.startswith(("[SQL:", "[parameters:", "(Background"))]
    text = keep[0] if keep else type(error).__name__
    return clip(text, 300)


def ensure_experiment(uri: str, name: str) -> str:
    """The id of experiment ``name``, created if needed (race-safe) with the tags that open
    it on the runs table (``ui``); one in MLflow's trash is refused (``experiments``)."""
    from mlflow.exceptions import MlflowException

    c = client(uri, write=True)
    exp = c.get_experiment_by_name(name)
    if exp is not None:
        refuse_deleted(uri, exp)
        ui.mark(c, exp)
        return str(exp.experiment_id)
    try:
        return str(c.create_experiment(name, tags=ui.experiment_tags()))
    except MlflowException:
        exp = c.get_experiment_by_name(name)  # another process created it meanwhile
        if exp is None:
            raise
        return str(exp.experiment_id)


def open_run(uri: str, experiment: str, run_name: str, tags: dict[str, str],
             start_ms: int | None = None) -> tuple[str, str]:
    """Create a RUNNING run begun at ``start_ms`` (epoch ms, default now; the job's start
    makes its duration the job's); return ``(run_id, experiment_id)``."""
    experiment_id = ensure_experiment(uri, experiment)
    c = client(uri, write=True)
    if "mlflow.parentRunId" not in tags:  # a sweep's job is named after its swept keys only
        run_name = view.distinguishing_first(run_name, _recent_names(c, experiment_id))
    run = c.create_run(experiment_id, start_time=start_ms, run_name=run_name, tags=tags)
    return run.info.run_id, experiment_id


def _recent_names(c: Any, experiment_id: str) -> list[str]:
    """The names of the experiment's latest single runs (no sweep parent, job or compare)."""
    runs = c.search_runs([experiment_id], max_results=view.RECENT_RUNS)  # newest first
    return [r.info.run_name for r in runs if r.info.run_name and not {
        "mlflow.parentRunId", "harness.compare", "harness.sweep"} & set(r.data.tags)]


def close_run(uri: str, run_id: str, record: RunRecord) -> None:
    """Log params, metrics, tags and artifacts of ``record``, then end the run."""
    import time

    from mlflow.entities import Metric, Param, RunTag
    from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH, MAX_PARAMS_TAGS_PER_BATCH

    c = client(uri, write=True)
    now = int(time.time() * 1000)
    params = [Param(k, v) for k, v in record.params.items() if len(v) <= MAX_PARAM_VAL_LENGTH]
    marks, prefix = view.coverage_marks(record.metrics, record.tags)
    tags = [RunTag(k, v) for k, v in {**record.tags, **marks}.items()]
    headline = headline_of(record.metrics, record.tags)
    order = view.metric_order(record.metrics, record.params.get("run.objective", ""), headline)
    metrics = [Metric(k, float(record.metrics[k]), now, 0) for k in order]  # key ones first
    step = MAX_PARAMS_TAGS_PER_BATCH
    for i in range(0, max(len(params), len(tags), 1), step):
        c.log_batch(run_id, params=params[i : i + step], tags=tags[i : i + step])
    for i in range(0, len(metrics), 1000):
        c.log_batch(run_id, metrics=metrics[i : i + 1000])
    for path in record.artifacts:
        c.log_artifact(run_id, path)
    c.log_batch(run_id, tags=[RunTag(k, v) for k, v in reader_views(c, run_id, record).items()])
    if prefix:  # a low-coverage run says so first in the runs list
        c.update_run(run_id, name=prefix + c.get_run(run_id).info.run_name)
    c.set_terminated(run_id, record.status)

