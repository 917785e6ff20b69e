"""Reading back what runs logged to an MLflow store."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mlflow.entities import Run
    from mlflow.tracking import MlflowClient


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
