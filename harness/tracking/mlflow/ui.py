"""How the harness's experiments open in MLflow's web UI (checked against MLflow 3.x).

* ``mlflow.experimentKind=custom_model_development``: MLflow 3's UI opens an experiment of
  unknown kind on its GenAI overview ("0 traces"); of this kind, on the runs table.
* ``mlflow.sharedViewState.harness``: a saved view of the classic runs table whose columns
  are the key metrics, of the runs that scored something (the UI's own "share view"
  format: JSON with ``selectedColumns`` and ``searchFilter``), opened by
  ``?viewStateShareKey=harness`` on that table. The printed link ``runs_link`` does not
  use it: a link with a share key always shows MLflow's "You're viewing a shared view"
  banner, and MLflow 3.17 has no experiment-wide default view. It opens the *Evaluation
  runs* table instead, which shows every metric as a column by default (``view``).

A tag the user (or another tool) set already is never overwritten. Importing this module
imports nothing from MLflow.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from harness.tracking.mlflow import sqlite_uri

KIND_TAG = "mlflow.experimentKind"
KIND = "custom_model_development"
VIEW_KEY = "harness"
VIEW_TAG = f"mlflow.sharedViewState.{VIEW_KEY}"
#: The columns of the saved view: what a run scored and on how many samples, its main
#: retrieval metrics and latency, how long it took (a metric no run logged stays empty).
KEY_METRICS = ("mean", "n_scored", "n_unscored", "ndcg_at_10", "recall_at_10", "mrr",
               "retrieval_p95_ms", "duration_s")
#: Where ``mlflow ui`` serves by default.
LOCAL_UI = "http://127.0.0.1:5000"


def column(group: str, name: str) -> str:
    """A runs-table column as the UI names it: ``metrics.`mean```."""
    return f"{group}.`{name}`"


#: The saved view's filter: runs that scored something (a run that failed before scoring
#: anything, a ``compare`` run, is left out; the filter shows in the search box, to clear).
SCORED = "metrics.n_scored > 0"


def view_state() -> str:
    """The saved view's JSON: the dataset column, then the key metrics; scored runs."""
    columns = [column("attributes", "Dataset"), *(column("metrics", m) for m in KEY_METRICS)]
    return json.dumps({"selectedColumns": columns, "searchFilter": SCORED})


def experiment_tags() -> dict[str, str]:
    """The tags of an experiment the harness creates."""
    return {KIND_TAG: KIND, VIEW_TAG: view_state()}


def mark(c: Any, experiment: Any) -> None:
    """Give an existing experiment (created by MLflow, another tool or an older harness) the
    tags it lacks, best effort; a kind or view someone set stays as it is."""
    missing = {k: v for k, v in experiment_tags().items() if k not in (experiment.tags or {})}
    try:
        for key, value in missing.items():
            c.set_experiment_tag(experiment.experiment_id, key, value)
    except Exception:  # MLflow raises many types; how the UI opens is no reason to lose a run
        # (a team server may let this user log runs but not edit the experiment)
        return


def _server(uri: str) -> str | None:
    """The web address of a tracking server (credentials, query and fragment dropped);
    ``None`` for a local store or a non-HTTP one."""
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    netloc = parts.hostname + (f":{port}" if port else "")
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def _absolute(uri: str) -> str:
    """A local store with an absolute path (``mlflow ui`` may be run from elsewhere)."""
    if uri.startswith(sqlite_uri.PREFIX):
        return sqlite_uri.absolute(uri)
    for prefix in ("file://", ""):
        if uri.startswith(prefix) and (prefix or ":" not in uri):
            path = uri[len(prefix):]
            if path and path != ":memory:" and not path.startswith("/"):
                return prefix + str(Path(path).expanduser().absolute())
            return uri
    return uri


def run_link(base: str, experiment_id: str, run_id: str) -> str:
    """The run's own page."""
    return f"{base}/#/experiments/{experiment_id}/runs/{run_id}"


def runs_link(base: str, experiment_id: str) -> str:
    """The experiment's *Evaluation runs* table: each run's metrics as columns, the key
    ones first (``view``), and no saved view in the link (so no shared-view banner)."""
    return f"{base}/#/experiments/{experiment_id}/evaluation-runs"


def view_link(base: str, experiment_id: str) -> str:
    """The classic runs table with the harness's saved view (MLflow shows its shared-view
    banner above it)."""
    return (f"{base}/#/experiments/{experiment_id}/runs?workflowType=machine_learning"
            f"&viewStateShareKey={VIEW_KEY}")


def ui_lines(uri: str, experiment_id: str, run_id: str) -> list[tuple[str, str]]:
    """The console's rows that lead to the run: for a server, links to the run and to the
    runs table; for a local store, the ``mlflow ui`` command first, then the same links on
    the address it serves (none for a store the UI cannot show, e.g. ``databricks``)."""
    base = _server(uri)
    rows: list[tuple[str, str]] = []
    if base is None:
        # a bare path is a local file store; "databricks" is a workspace, not a path
        scheme = uri.split(":", 1)[0].split("+", 1)[0] if ":" in uri else (
            "databricks" if uri.startswith("databricks") else "file")
        if scheme not in ("sqlite", "file", "postgresql", "mysql", "mssql"):
            return []
        if scheme in ("postgresql", "mysql", "mssql"):
            from harness.core.redact import redact_uri

            uri = redact_uri(uri)  # the user fills their password back in
        rows.append(("mlflow ui", f"mlflow ui --backend-store-uri {shlex.quote(_absolute(uri))}"
                                  f" (serves {LOCAL_UI})"))
        base = LOCAL_UI
    rows += [("mlflow view", run_link(base, experiment_id, run_id)),
             ("mlflow runs", runs_link(base, experiment_id))]
    return rows
