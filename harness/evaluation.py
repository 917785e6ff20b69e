"""The evaluation loop: batches of samples in, per-sample rows and a summary out.

It knows nothing of Hydra or MLflow, so the CLI, the Python API and tests share it.
"""

from __future__ import annotations

import json
import math
import time
from array import array
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import IO, Any

from harness.metrics.base import Metric
from harness.types import RagSample

_MAX_REASONS = 20


@dataclass
class Tally:
    """Running counts of a run; ``mean`` is over scored samples only."""

    metric: str
    n_samples: int = 0
    scores: array = field(default_factory=lambda: array("d"))
    reasons: Counter[str] = field(default_factory=Counter)
    successes: int | None = None
    started: float = field(default_factory=time.perf_counter)
    duration_s: float = 0.0

    @property
    def n_scored(self) -> int:
        """Samples that got a score."""
        return len(self.scores)

    @property
    def n_unscored(self) -> int:
        """Samples without a score (their reasons are in ``reasons``)."""
        return self.n_samples - self.n_scored

    @property
    def mean(self) -> float | None:
        """Exactly rounded mean of the scores, or ``None`` when nothing was scored."""
        return math.fsum(self.scores) / len(self.scores) if self.scores else None

    def add_reason(self, reason: str) -> None:
        """Count an unscored sample's reason (distinct reasons are capped)."""
        if reason in self.reasons or len(self.reasons) < _MAX_REASONS:
            self.reasons[reason] += 1
        else:
            self.reasons["(other reasons)"] += 1

    def summary(self) -> dict[str, Any]:
        """The core of ``summary.json``."""
        rate = self.n_samples / self.duration_s if self.duration_s > 0 else None
        extra = {}
        if self.successes is not None:
            extra["success_rate"] = self.successes / self.n_scored if self.n_scored else None
        return {
            "metric": self.metric,
            "mean": self.mean,
            "n_samples": self.n_samples,
            "n_scored": self.n_scored,
            "n_unscored": self.n_unscored,
            "unscored_reasons": dict(self.reasons.most_common()),
            "duration_s": round(self.duration_s, 6),
            "samples_per_s": None if rate is None else round(rate, 1),
            **extra,
        }


def evaluate(
    batches: Iterable[list[RagSample]],
    metric: Metric,
    sink: IO[str] | None = None,
    progress: Callable[[int], None] | None = None,
) -> Tally:
    """Score every batch with ``metric``, writing one JSON row per sample to ``sink``.

    Args:
        batches: Samples, in input order.
        metric: The variant to score with.
        sink: Where ``samples.jsonl`` rows go (``None``: nowhere); flushed per batch.
        progress: Called with the number of samples just finished (a progress bar).

    Returns:
        The tally: counts, scores and unscored reasons.
    """
    tally = Tally(metric.name)
    dumps = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode
    per_sample = getattr(metric, "reports_progress", False)
    for batch in batches:
        if per_sample:
            results = metric.score_batch(batch, on_done=progress)  # type: ignore[call-arg]
        else:
            results = metric.score_batch(batch)
        lines = []
        for result in results:
            if result.score is None:
                tally.add_reason(result.error or "unscored")
            else:
                tally.scores.append(result.score)
                success = result.details.get("success")
                if success is not None:
                    tally.successes = (tally.successes or 0) + bool(success)
            if sink is not None:
                lines.append(dumps(result.to_row()))
        tally.n_samples += len(results)
        if sink is not None:
            sink.write("\n".join(lines) + "\n")
            sink.flush()
        if progress is not None and not per_sample:
            progress(len(results))
    tally.duration_s = time.perf_counter() - tally.started
    return tally
