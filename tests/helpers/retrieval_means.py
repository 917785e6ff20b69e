"""The mean of ``harness.metrics.retrieval.sample_metrics`` over samples: a test helper (the
run logs its own means; this one lets a test score a retriever's samples directly)."""

from __future__ import annotations

from collections.abc import Sequence

from harness.core.types import RagSample
from harness.metrics.retrieval import sample_metrics


def mean_metrics(
    samples: Sequence[RagSample], ks: Sequence[int] = (1, 10, 100), min_grade: float = 1
) -> dict[str, float]:
    """The mean of ``sample_metrics`` over samples (each query weighs the same, as in BEIR)."""
    if not samples:
        return {}
    totals: dict[str, float] = {}
    for sample in samples:
        for name, value in sample_metrics(sample, ks, min_grade).items():
            totals[name] = totals.get(name, 0.0) + value
    return {name: total / len(samples) for name, total in totals.items()}
