"""Context precision where RAG engineers already work: ``assert_context_precision`` (score
samples with any variant, fail below a floor), ``check_config`` (the same for a config
file's run), the pytest plugin (``harness.testing.plugin``: the ``harness_eval`` fixture, the
``harness_config`` marker, a summary at the end of the session), ``evaluate_traces`` (score
an MLflow experiment's traces and write the verdicts back onto them) and ``ContextPrecision``
(a variant as an MLflow GenAI scorer).

Importing this package loads only the standard library; the harness loads on first use.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ContextPrecision", "FloorError", "assert_context_precision", "check_config",
           "evaluate_traces", "run_overrides"]


def __getattr__(name: str) -> Any:
    if name == "FloorError":
        from harness.testing.checks import FloorError

        return FloorError
    if name in ("assert_context_precision", "check_config", "run_overrides"):
        from harness.testing import asserts

        return getattr(asserts, name)
    if name == "evaluate_traces":
        from harness.testing.traces import evaluate_traces

        return evaluate_traces
    if name == "ContextPrecision":  # loads mlflow.genai
        from harness.testing.mlflow_scorers import ContextPrecision

        return ContextPrecision
    raise AttributeError(f"module 'harness.testing' has no attribute {name!r}")
