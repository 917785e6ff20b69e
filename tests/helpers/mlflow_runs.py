"""Reading back what runs logged to an MLflow store, and pointing MLflow's process-wide
state at one for a while."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mlflow.entities import Run
    from mlflow.tracking import MlflowClient


@contextlib.contextmanager
def active_store(uri: str, experiment: str) -> Iterator[str]:
    """Point MLflow's process-wide state at ``experiment`` of ``uri`` (what ``mlflow.trace``
    and ``mlflow.genai.evaluate`` log to) and yield the experiment's id; put all of it back
    afterwards: the tracking URI as it was (unset included: a later test's
    ``$MLFLOW_TRACKING_URI`` then still counts), the active experiment, and the
    ``MLFLOW_TRACKING_URI`` / ``MLFLOW_EXPERIMENT_ID`` variables MLflow 3 sets (a later
    test's subprocess would inherit them)."""
    import mlflow
    from mlflow.tracking import fluent
    from mlflow.tracking._tracking_service import utils

    names = ("MLFLOW_EXPERIMENT_ID", "MLFLOW_TRACKING_URI")
    saved = (utils._tracking_uri, fluent._active_experiment_id)
    env = {name: os.environ.get(name) for name in names}
    mlflow.set_tracking_uri(uri)
    try:
        yield str(mlflow.set_experiment(experiment).experiment_id)
    finally:
        utils._tracking_uri, fluent._active_experiment_id = saved
        for name, value in env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def client(uri: str) -> MlflowClient:
    """A client of the store at ``uri`` (MLflow is imported on first use: 2 s)."""
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri)


def experiment_id(uri: str, experiment: str) -> str | None:
    """The id of ``experiment`` in the store at ``uri``, or None if it does not exist."""
    exp = client(uri).get_experiment_by_name(experiment)
    return None if exp is None else str(exp.experiment_id)


def runs(
    uri: str,
    experiment: str,
    filter_string: str = "",
    order_by: list[str] | None = None,
    max_results: int = 1000,
) -> list[Run]:
    """The runs of ``experiment`` (which must exist) in the store at ``uri``."""
    exp_id = experiment_id(uri, experiment)
    assert exp_id is not None, f"no MLflow experiment {experiment!r} in {uri}"
    found = client(uri).search_runs(
        [exp_id], filter_string, order_by=order_by, max_results=max_results
    )
    return list(found)
