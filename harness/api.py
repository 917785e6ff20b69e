"""The Python API: ``from harness import evaluate``.

It composes the same Hydra config as the CLI (the metric chosen by its option name, any
override in CLI syntax), builds the same components and scores through the same loop; only
the samples come from memory and nothing is written unless asked.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass

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
        mean: float | None = self.summary["mean"]
        return mean


def evaluate(
    samples: Sequence[Any],
    metric: str | Sequence[str] = "id_based",
    *,
    overrides: Sequence[str] = (),
    fields: Mapping[str, str] | None = None,
    mlflow: bool = False,
    output_dir: str | Path | None = None,
) -> EvaluationResult:
    """Score ``samples`` with a metric variant, as ``python -m harness metric=NAME`` would.

    Args:
        samples: Dicts (or objects with ``model_dump``/``to_dict``) with ragas field names
            (``user_input``, ``retrieved_contexts``, ``reference``...), ragas's legacy
            names (``question``, ``contexts``, ``answer``, ``ground_truth``) or deepeval
            ``LLMTestCase`` names (``input``, ``actual_output``, ``expected_output``,
            ``retrieval_context``).
        metric: The option name: ``id_based``, ``id_ranked``, ``non_llm``,
            ``llm_with_reference``, ``llm_without_reference``, ``contextual_precision``;
            or a list of them (``["id_ranked", "non_llm"]``, or ``"[id_ranked,non_llm]"``):
            every one scored on the same samples, the first the headline (``mean``,
            ``scores``), each one's numbers in ``summary["variants"]`` and each row's
            ``variants``.
        overrides: Any other setting in CLI syntax, e.g. ``["metric.threshold=0.7",
            "judge=local", "judge.base_url=http://localhost:8000/v1", "judge.model=M"]``.
        fields: Harness field -> key in your records, where they differ.
        mlflow: Log the run to MLflow (the ``tracking`` group: ``$MLFLOW_TRACKING_URI`` or
            ``sqlite:///mlflow.db``; ``experiment_name=...`` in ``overrides``).
        output_dir: Keep ``samples.jsonl``, ``summary.json`` (and plots) here; default: a
            temporary folder, removed afterwards.

    Returns:
        The rows and the summary. Raises ``harness.core.errors.HarnessError`` on bad input;
        ``harness.core.errors.ConfigError`` (led by a did-you-mean hint) for overrides Hydra
        cannot compose.
    """
    import tempfile

    from harness.config.build import instantiate
    from harness.config.compose import composed, custom_settings, job_config
    from harness.config.variants import (
        build_parts,
        compose_variants,
        metric_options,
        variant_config,
    )
    from harness.core.errors import ConfigError
    from harness.core.settings import Job
    from harness.datasets.memory import RecordsDataset

    if not isinstance(metric, str):
        metric = "[" + ",".join(str(m) for m in metric) + "]"
    tracking = "tracking=mlflow" if mlflow else "tracking=none"
    args = [f"metric={metric}", tracking, "run.quiet=true", "run.progress=false",
            "run.report=false", *custom_settings(list(overrides))]
    variants = compose_variants(args, composed, metric_options())
    cfg, parts = build_parts(composed(args) if variants is None else variants.configs[0],
                             variants, RecordsDataset(samples, fields))
    config = variant_config(variants, job_config(cfg))
    if variants is not None:
        metric = variants.choice
    if parts.settings.shards > 1:
        parts.close()
        raise ConfigError("run.shards: the Python API scores samples in this process; shard a "
                          "big dataset file from the command line (python -m harness "
                          "run.shards=N dataset=jsonl dataset.path=FILE)")
    choices = {"dataset": "records", "retriever": "precomputed", "metric": metric,
               "tracking": tracking.split("=")[1]}
    with tempfile.TemporaryDirectory(prefix="harness-") as tmp:
        out_dir = Path(output_dir) if output_dir is not None else Path(tmp)
        out_dir.mkdir(parents=True, exist_ok=True)
        job = Job(config, out_dir, choices, f"api metric={metric}",
                  build=lambda group: instantiate(cfg, group))
        try:
            summary = parts.task.run(parts, job)[0].as_json()
        finally:
            parts.close()
        text = (out_dir / "samples.jsonl").read_text("utf-8")
    return EvaluationResult(summary, [json.loads(line) for line in text.splitlines()])


async def aevaluate(
    samples: Sequence[Any], metric: str | Sequence[str] = "id_based", **kwargs: Any
) -> EvaluationResult:
    """``evaluate`` for async code: runs in a worker thread, never blocking the loop."""
    return await asyncio.to_thread(evaluate, samples, metric, **kwargs)
