"""An experiment in MLflow's trash is never logged into.

MLflow keeps a deleted experiment's name taken (``create_experiment`` refuses it) and
refuses runs in it with a message about lifecycle states. The harness says what it is and
what to do: restore the experiment or pick another name. A local SQLite store is read
directly when the tracker is built, before the run's work (no MLflow import: a
millisecond); any other store is checked when the run is opened.

Importing this module imports nothing from MLflow.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from harness.core.errors import TrackingError
from harness.core.redact import redact_uri
from harness.tracking.mlflow.sqlite_uri import check_writable, local_file


def deleted(uri: str, name: str, experiment_id: str) -> TrackingError:
    """The one line for experiment ``name`` (id ``experiment_id``) in the trash of ``uri``."""
    return TrackingError(
        f"MLflow experiment {name!r} in {redact_uri(uri)} is deleted (in MLflow's trash); "
        f"restore it (mlflow experiments restore --experiment-id {experiment_id}, with "
        "MLFLOW_TRACKING_URI set to this store) or log to another experiment with "
        "experiment_name=NAME"
    )


def refuse_deleted(uri: str, experiment: Any) -> None:
    """Raise ``deleted`` for an MLflow ``Experiment`` in the trash."""
    if getattr(experiment, "lifecycle_stage", "active") == "deleted":
        raise deleted(uri, str(experiment.name), str(experiment.experiment_id))


def check_local(uri: str, name: str) -> None:
    """For a local SQLite store: refuse a URI that opens it read-only and, when it exists,
    experiment ``name`` if it is in the trash, before any work (read-only; a store that
    cannot be read is left to MLflow's open, which names its fault)."""
    check_writable(uri)
    db = local_file(uri)  # relative: the working directory's, as MLflow reads it
    if db is None or not db.is_file():
        return
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1.0)
    except sqlite3.Error:
        return
    try:
        row = conn.execute("SELECT experiment_id, lifecycle_stage FROM experiments "
                           "WHERE name = ?", (name,)).fetchone()
    except sqlite3.Error:  # no such table (a new store), locked, not a database: MLflow's
        return
    finally:
        conn.close()
    if row is not None and row[1] == "deleted":
        error = deleted(uri, name, str(row[0]))
        raise TrackingError(f"{error}; nothing was run")
