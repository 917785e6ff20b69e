"""The Python API: ``from harness import evaluate``.

It composes the same Hydra config as the CLI (the metric chosen by its option name, any
override in CLI syntax), builds the same components and scores through the same loop; only
the samples come from memory and nothing is written unless asked.
"""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class EvaluationResult:
    """What ``evaluate`` returns: one row per sample (as in ``samples.jsonl``) and the
    summary (as in ``summary.json``)."""

    summary: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def scores(self) -> list[float | None]:
        """Per-sample scores in input order (``None``: unscored, see the row's ``error``)."""
        return [r["score"] for r in self.rows]

    @property
    def mean(self) -> float | None:
        """The mean over scored samples."""
        return self.summary["mean"]


def evaluate(
    samples: Sequence[Any],
    metric: str = "id_based",
    *,
    overrides: Sequence[str] = (),
    fields: Mapping[str, str] | None = None,
) -> EvaluationResult:
    """Score ``samples`` with a metric variant, as ``python -m harness metric=NAME`` would.

    Args:
        samples: Dicts (or objects with ``model_dump``/``to_dict``) with ragas field names
            (``user_input``, ``retrieved_contexts``, ``reference``...), ragas's legacy
            names (``question``, ``contexts``, ``answer``, ``ground_truth``) or deepeval
            ``LLMTestCase`` names (``input``, ``actual_output``, ``expected_output``,
            ``retrieval_context``).
        metric: The option name: ``id_based``, ``id_ranked``, ``non_llm``,
            ``llm_with_reference``, ``llm_without_reference``, ``contextual_precision``.
        overrides: Any other setting in CLI syntax, e.g. ``["metric.threshold=0.7",
            "judge=local", "judge.base_url=http://localhost:8000/v1", "judge.model=M"]``.
        fields: Harness field -> key in your records, where they differ.

    Returns:
        The rows and the summary. Raises ``harness.errors.HarnessError`` on bad input.
    """
    from hydra import compose, initialize_config_dir

    from harness.cli import CONFIG_DIR
    from harness.datasets.memory import RecordsDataset
    from harness.runner import build, plan, score

    with initialize_config_dir(config_dir=CONFIG_DIR):
        cfg = compose("config", overrides=[f"metric={metric}", "tracking=none", *overrides])
    parts = build(cfg, dataset=RecordsDataset(samples, fields))
    sink = io.StringIO()
    try:
        batches, _ = plan(parts)
        tally = score(parts, batches, sink)
    finally:
        close = getattr(parts.metric, "close", None)
        if close is not None:
            close()
    summary = {**tally.summary(), "metric": metric}
    describe = getattr(parts.metric, "describe", None)
    if describe is not None:
        summary.update(describe())
        summary["judge"] = {**summary["judge"], **parts.metric.stats()}
    rows = [json.loads(line) for line in sink.getvalue().splitlines()]
    return EvaluationResult(summary, rows)


async def aevaluate(
    samples: Sequence[Any],
    metric: str = "id_based",
    *,
    overrides: Sequence[str] = (),
    fields: Mapping[str, str] | None = None,
) -> EvaluationResult:
    """``evaluate`` for async code: runs in a worker thread, never blocking the loop."""
    return await asyncio.to_thread(evaluate, samples, metric, overrides=overrides, fields=fields)
