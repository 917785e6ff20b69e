"""Evaluate your production traces: score the RETRIEVER spans of an MLflow experiment's
traces with any variant and write the verdicts back onto the traces as feedback.

``python -m harness dataset=mlflow_traces ...`` scores them too, but writing back needs a
step after scoring that the command does not have yet; this runs the same job and then
writes (``harness.datasets.mlflow_feedback``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.testing.asserts import merged, run_overrides

if TYPE_CHECKING:
    from harness.api import EvaluationResult
    from harness.datasets.mlflow_feedback import Written

#: The store when neither the argument nor ``$MLFLOW_TRACKING_URI`` names one (as in conf/).
DEFAULT_STORE = "sqlite:///mlflow.db"


def evaluate_traces(
    experiment_name: str,
    metric: str = "llm_without_reference",
    *,
    tracking_uri: str | None = None,
    overrides: Sequence[str] = (),
    feedback: bool = True,
) -> tuple[EvaluationResult, Written | None]:
    """Score the traces of ``experiment_name`` and (``feedback``) write the verdicts back.

    Args:
        experiment_name: The experiment your app traces into.
        metric: The variant (``llm_without_reference`` needs no expectations).
        tracking_uri: The store; default ``$MLFLOW_TRACKING_URI``, else ``sqlite:///mlflow.db``.
        overrides: Further settings in CLI syntax: the judge, ``dataset.tags={env: prod}``,
            ``dataset.since=...``.
        feedback: Write ``context_precision/<metric>`` assessments onto the traces.

    Returns:
        The run's rows and summary, and what was written (``None`` without ``feedback``).
    """
    from harness.datasets.mlflow_feedback import write_feedback

    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_STORE
    result = run_overrides(metric, merged(
        ["dataset=mlflow_traces", f"dataset.experiment_name={quoted(experiment_name)}",
         f"dataset.tracking_uri={quoted(uri)}"], overrides))
    written = write_feedback(result.rows, uri, result.summary["metric"]) if feedback else None
    return result, written


def quoted(value: str) -> str:
    """``value`` as a Hydra override value that stays a string, whatever it holds."""
    if re.fullmatch(r"[\w./:@+-]+", value) and not value[0].isdigit():
        return value
    # Hydra reads a backslash as an escape only in a run of them before a quote or the end
    return "'" + re.sub(r"(\\*)('|$)", lambda m: m[1] * 2 + ("\\'" if m[2] else ""),
                        value) + "'"
