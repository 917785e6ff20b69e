"""``tracking=mlflow``: runs logged to an MLflow store by a helper process (``tracker``, the
component; ``worker``, the helper; ``store``, the store and its runs; ``server``, a team's
tracking server; ``table``, the evaluation table)."""

from harness.tracking.mlflow.tracker import MlflowTracker

__all__ = ["MlflowTracker"]
