"""The MLflow side of ``compare``: open the store, select a sweep's runs, read their
per-query values, and log the outputs."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.core.errors import ConfigError, TrackingError, closest
from harness.core.redact import redact_uri
from harness.tracking.mlflow.store import client, local_file


def open_experiment(uri: str, experiment: str | None) -> tuple[Any, Any]:
    """The ``MlflowClient`` of ``uri`` and the experiment named ``experiment`` (``None``
    when no name is given).

    Raises:
        TrackingError: No SQLite file at ``uri``, or no such experiment (with a
            did-you-mean).
    """
    if (db := local_file(uri)) is not None and not db.is_file():
        raise TrackingError(f"no MLflow store at {uri} (set tracking_uri= or $MLFLOW_TRACKING_URI)")
    c = LiveRuns(client(uri))
    if experiment is None:
        return c, None
    exp = c.get_experiment_by_name(experiment)
    if exp is None:
        names = [e.name for e in c.search_experiments()]
        hint = closest(experiment, names)
        raise TrackingError(f"no experiment {experiment!r} in {redact_uri(uri)}{hint}")
    if getattr(exp, "lifecycle_stage", "active") == "deleted":
        raise TrackingError(
            f"experiment {experiment!r} is deleted (in MLflow's trash); restore it "
            f"(mlflow experiments restore --experiment-id {exp.experiment_id}) to compare its "
            "runs"
        )
    return c, exp


class DeletedRun(TrackingError):
    """A run named by its id is in MLflow's trash: never compared."""


class LiveRuns:
    """An ``MlflowClient`` whose ``get_run`` refuses a deleted run (searches leave them out
    already): a run in the trash is never compared, nor gated on, silently."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def get_run(self, run_id: str) -> Any:
        run = self.inner.get_run(run_id)
        if getattr(run.info, "lifecycle_stage", "active") == "deleted":
            raise DeletedRun(deleted_line(run_id))
        return run

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def deleted_line(run_id: str) -> str:
    """What to say about deleted run ``run_id``."""
    return (f"run {run_id} is deleted (in MLflow's trash): it is not compared; restore it "
            f"(mlflow runs restore --run-id {run_id}) or name another run")


def check_named_runs(uri: str, named: dict[str, str | None]) -> None:
    """Refuse a baseline or candidate given by the id of a deleted run, naming it (the
    comparison itself would only say that no run has that id)."""
    import re

    ids = {role: spec for role, spec in named.items()
           if spec and re.fullmatch(r"[0-9a-f]{32}", spec)}
    if not ids or ((db := local_file(uri)) is not None and not db.is_file()):
        return
    c = client(uri)
    for role, spec in ids.items():
        try:
            run = c.get_run(spec)
        except Exception:  # noqa: S112 - not an id of this store: the comparison says so
            continue
        if getattr(run.info, "lifecycle_stage", "active") == "deleted":
            raise ConfigError(f"{role}={spec}: {deleted_line(spec)}")


def search(c: Any, exp_id: str, filter_string: str) -> list[Any]:
    """Every run of the experiment matching ``filter_string`` (all result pages)."""
    runs: list[Any] = []
    token = None
    while True:
        page = c.search_runs([exp_id], filter_string, max_results=1000, page_token=token)
        runs += list(page)
        token = page.token
        if not token:
            return runs


def finished(c: Any, exp_ids: list[str]) -> list[Any]:
    """The finished runs of the experiments but sweep parents and compare runs."""
    runs = [r for e in exp_ids for r in search(c, e, "attributes.status = 'FINISHED'")]
    return [r for r in runs if r.data.tags.get("harness.sweep") != "parent"
            and r.data.tags.get("harness.compare") != "true"]


def select_runs(c: Any, exp_id: str, sweep: str) -> tuple[list[Any], str | None]:
    """The runs to compare and the parent run id (``None`` for ``sweep=all``)."""
    if sweep == "all":
        return finished(c, [exp_id]), None
    if sweep == "latest":
        found = c.search_runs([exp_id], "tags.`harness.sweep` = 'parent'", max_results=1,
                              order_by=["attributes.start_time DESC"])
        if not found:
            raise TrackingError("no sweep in this experiment; use sweep=all to compare single runs")
        parent = found[0].info.run_id
    else:
        try:
            run = c.get_run(sweep)
        except Exception:
            raise ConfigError(
                f"sweep: no run with id {sweep!r}; use latest, all or a parent run id"
            ) from None
        if run.data.tags.get("harness.sweep") != "parent":
            raise ConfigError(f"sweep: run {sweep} is not a sweep's parent run")
        parent, exp_id = sweep, run.info.experiment_id
    children = search(c, exp_id, f"tags.`mlflow.parentRunId` = '{parent}' "
                      "and attributes.status = 'FINISHED'")
    return children, parent


def per_query(c: Any, run_id: str, metric: str, tmp: Path,
              variant: str | None = None) -> dict[str, float] | None:
    """``{id: value}`` from the run's samples.jsonl; ``None`` when it has no such values.
    ``variant``: the ``score`` of that listed variant (a row's ``variants``; a row without
    them is a run of that variant alone) for ``mean``."""
    where = tmp / run_id / "samples.jsonl"
    try:
        path = where if where.is_file() else Path(
            c.download_artifacts(run_id, "samples.jsonl", str(tmp / run_id)))
    except Exception:
        return None
    # MLflow forbids "@" in metric names: ndcg_at_10, ndcg:10 or ndcg/10 may log row key ndcg@10
    keys = ["score"] if metric == "mean" else [metric] + [
        metric.replace(sep, "@") for sep in ("_at_", ":", "/") if sep in metric]
    values: dict[str, float] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            sample = str(row["id"])
            entries = row.get("variants") if variant is not None else None
            if isinstance(entries, dict):
                row = entries.get(variant) or {}
            v = next((row[k] for k in keys if k in row), None)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                values[sample] = float(v)
    return values or None


def log_outputs(c: Any, experiment_id: str, parent: str | None, files: Sequence[Path]) -> str:
    """Log ``files`` under ``compare/`` in the parent run, or in a new finished run named
    ``compare`` (tag ``harness.compare=true``) when there is none; return its id."""
    from harness import __version__

    tags = {"harness.compare": "true", "harness.version": __version__}
    target: str = parent or c.create_run(experiment_id, run_name="compare", tags=tags).info.run_id
    for f in files:
        c.log_artifact(target, str(f), artifact_path="compare")
    if not parent:
        c.set_terminated(target, "FINISHED")
    return target
