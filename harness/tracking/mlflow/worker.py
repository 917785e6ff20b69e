"""Background MLflow logger: ``python -m harness.tracking.mlflow.worker``.

Reads one JSON line (store, experiment, run name, tags, the job's start), imports MLflow
and opens the run (begun at the job's start) while the parent evaluates; then reads a
second line (the ``RunRecord``), logs it and prints ``{"run_id", "experiment_id"}``. End
of input without a record marks the run
KILLED; ``{"abort": STATUS}`` ends it with STATUS (``DELETE`` removes a run that never got
past bad input). When the store fails, it still waits for the record, then prints
``{"error": LINE}`` (the parent's ``error:`` line, see ``store.failure``) and exits 1.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import sys

from harness.core.types import RunRecord
from harness.tracking.mlflow import store
from harness.tracking.mlflow.store import client, close_run, failure, open_run


def _preload() -> None:
    """Import what opening the store needs before the header says which store it is."""
    import mlflow.tracking  # noqa: F401

    uri = os.environ.get("MLFLOW_TRACKING_URI", "sqlite:")
    if uri.split(":", 1)[0].split("+", 1)[0] in ("sqlite", "postgresql", "mysql", "mssql"):
        import mlflow.store.tracking.sqlalchemy_store  # noqa: F401


def main() -> int:
    """Serve one run; return the exit code."""
    # Ctrl-C, and SIGTERM or SIGHUP sent to the process group, reach this process too; the
    # parent decides how the run ends (its end of input alone marks the run KILLED).
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    # MLflow's imports build a great many objects and free almost none: collecting during
    # them costs ~20 % of the helper's start (the critical path of a run); after, the
    # imported objects are frozen out of every later collection
    gc.disable()
    _preload()
    gc.freeze()
    gc.enable()
    first = sys.stdin.readline()
    if not first.strip():
        return 0  # prewarmed but unclaimed (e.g. tracking=none)
    header = json.loads(first)
    uri = header["uri"]
    store.BUSY_TIMEOUT_S = float(header.get("busy_timeout_s", store.BUSY_TIMEOUT_S))
    run_id = experiment_id = error = None
    try:
        run_id, experiment_id = open_run(
            uri, header["experiment"], header["run_name"], header["tags"], header.get("start_ms")
        )
    except Exception as e:  # MLflow raises many types; the parent reports them as one line
        error = failure(uri, e)
    line = sys.stdin.readline()
    message = json.loads(line) if line.strip() else {"abort": "KILLED"}
    if "abort" in message:
        if run_id is not None:
            with contextlib.suppress(Exception):  # the run's fate is best effort here
                if message["abort"] == "DELETE":
                    client(uri).delete_run(run_id)
                else:
                    client(uri).set_terminated(run_id, message["abort"])
        return 0
    if run_id is None:
        return _reply({"error": error}, 1)
    try:
        close_run(uri, run_id, RunRecord(**message))
    except Exception as e:  # MLflow raises many types; the parent reports them as one line
        with contextlib.suppress(Exception):  # not left RUNNING, if it can be
            client(uri).set_terminated(run_id, "FAILED")
        return _reply({"error": failure(uri, e)}, 1)
    return _reply({"run_id": run_id, "experiment_id": experiment_id}, 0)


def _reply(message: dict[str, str | None], code: int) -> int:
    print(json.dumps(message), flush=True)
    return code


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    # Everything is written and the reply sent: skip the interpreter's teardown of MLflow,
    # SQLAlchemy and pandas (0.3-0.8 s), which the parent would otherwise wait for.
    os._exit(code)
