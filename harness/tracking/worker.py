"""Background MLflow logger: ``python -m harness.tracking.worker``.

Reads one JSON line (store, experiment, run name, tags), imports MLflow and opens the run
while the parent evaluates; then reads a second line (the ``RunRecord``), logs it and
prints ``{"run_id", "experiment_id"}``. End of input without a record marks the run
KILLED; ``{"abort": STATUS}`` ends it with STATUS (``DELETE`` removes a run that never got
past bad input).
"""

from __future__ import annotations

import json
import os
import signal
import sys

from harness.tracking.store import client, close_run, open_run
from harness.types import RunRecord


def _preload() -> None:
    """Import what opening the store needs before the header says which store it is."""
    import mlflow.tracking  # noqa: F401

    uri = os.environ.get("MLFLOW_TRACKING_URI", "sqlite:")
    if uri.split(":", 1)[0].split("+", 1)[0] in ("sqlite", "postgresql", "mysql", "mssql"):
        import mlflow.store.tracking.sqlalchemy_store  # noqa: F401


def main() -> None:
    """Serve one run."""
    # Ctrl-C reaches the whole process group; the parent decides how the run ends.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _preload()
    first = sys.stdin.readline()
    if not first.strip():
        return  # prewarmed but unclaimed (e.g. tracking=none)
    header = json.loads(first)
    uri = header["uri"]
    run_id, experiment_id = open_run(uri, header["experiment"], header["run_name"], header["tags"])
    line = sys.stdin.readline()
    message = json.loads(line) if line.strip() else {"abort": "KILLED"}
    if "abort" in message:
        if message["abort"] == "DELETE":
            client(uri).delete_run(run_id)
        else:
            client(uri).set_terminated(run_id, message["abort"])
        return
    close_run(uri, run_id, RunRecord(**message))
    print(json.dumps({"run_id": run_id, "experiment_id": experiment_id}), flush=True)


if __name__ == "__main__":
    main()
