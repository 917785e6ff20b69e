"""Non-LLM context precision: ragas ``NonLLMContextPrecisionWithReference``, vectorised."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Annotated, Any, Literal

from harness.core.errors import ConfigError, closest
from harness.core.protocols import OnDone
from harness.core.types import RagSample, SampleResult, unscored
from harness.core.validation import Range, check_value
from harness.metrics.base import BaseMetric, missing_fields
from harness.metrics.ranking import average_precision

#: Option value -> rapidfuzz.distance class name.
MEASURES = {
    "levenshtein": "Levenshtein",
    "hamming": "Hamming",
    "jaro": "Jaro",
    "jaro_winkler": "JaroWinkler",
    "indel": "Indel",
}

Measure = Literal["levenshtein", "hamming", "jaro", "jaro_winkler", "indel"]
Threshold = Annotated[float, Range(ge=0, le=1)]
Eps = Annotated[float, Range(ge=0)]
#: rapidfuzz's threads: -1 (all cores) or a count >= 1.
Workers = Literal[-1] | Annotated[int, Range(ge=1)]


class StringContextPrecision(BaseMetric):
    """Relevance by string similarity to the reference contexts.

    A retrieved chunk's similarity is the maximum, over the reference contexts, of
    ``1 - rapidfuzz.distance.<Measure>.normalized_distance(chunk, reference)`` with
    rapidfuzz's defaults (no preprocessing: case- and whitespace-sensitive). The chunk is
    relevant iff that similarity is ``>= threshold``. The score is average precision over
    the retrieved order with ``eps`` in the denominator: with the defaults, bit-identical
    to ragas. All pairs of a batch go to ``rapidfuzz.process.cpdist`` in one call, which
    runs in C on ``workers`` threads.

    Args:
        name: The metric option name, recorded in outputs.
        measure: levenshtein (default), hamming, jaro, jaro_winkler or indel.
        threshold: Similarity at or above which a chunk counts as relevant (inclusive;
            in [0, 1]).
        eps: Added to the average-precision denominator (ragas: 1e-10; finite, >= 0).
        workers: Threads for rapidfuzz (-1: all cores, else >= 1).
    """

    requires = frozenset({"retrieved_contexts", "reference_contexts"})

    def __init__(
        self,
        name: str,
        measure: Measure = "levenshtein",
        threshold: Threshold = 0.5,
        eps: Eps = 1e-10,
        workers: Workers = -1,
    ) -> None:
        if not isinstance(measure, str) or measure not in MEASURES:
            hint = closest(measure, MEASURES) if isinstance(measure, str) else ""
            raise ConfigError(
                f"metric.measure: unknown measure {measure!r}{hint}; "
                f"choose one of {', '.join(MEASURES)}"
            )
        check_value("metric.threshold", Threshold, threshold)
        check_value("metric.eps", Eps, eps)
        check_value("metric.workers", Workers, workers)
        self.name, self.measure, self.threshold = name, measure, threshold
        self.eps, self.workers = eps, workers
        self.human_score = partial(average_precision, eps=float(eps))

    def _distance(self) -> Any:
        from rapidfuzz import distance

        classes = {
            "levenshtein": distance.Levenshtein,
            "hamming": distance.Hamming,
            "jaro": distance.Jaro,
            "jaro_winkler": distance.JaroWinkler,
            "indel": distance.Indel,
        }
        return classes[self.measure].normalized_distance

    def score_batch(
        self, samples: Sequence[RagSample], on_done: OnDone | None = None
    ) -> list[SampleResult]:
        """Score a batch: one ``cpdist`` call over every (chunk, reference) pair."""
        import numpy as np
        from rapidfuzz import process

        chunks: list[str] = []
        refs: list[str] = []
        plans: list[tuple[int, int] | SampleResult] = []
        for s in samples:
            why = missing_fields(s, self.requires)
            if why is None and not s.reference_contexts:
                why = "reference_contexts is empty: nothing to compare the chunks with"
            if why:
                plans.append(unscored(s.id, why))
                continue
            retrieved, reference = s.retrieved_contexts or (), s.reference_contexts or ()
            plans.append((len(retrieved), len(reference)))
            for chunk in retrieved:
                chunks.extend([chunk] * len(reference))
                refs.extend(reference)
        if chunks:
            dist = process.cpdist(
                chunks, refs, scorer=self._distance(), dtype=np.float64, workers=self.workers
            )
            sims = (1.0 - dist).tolist()
        else:
            sims = []
        results: list[SampleResult] = []
        pos = 0
        for s, plan in zip(samples, plans, strict=True):
            if isinstance(plan, SampleResult):
                results.append(plan)
                continue
            n_chunks, n_refs = plan
            best = [max(sims[pos + i * n_refs : pos + (i + 1) * n_refs]) for i in range(n_chunks)]
            pos += n_chunks * n_refs
            verdicts = [1 if b >= self.threshold else 0 for b in best]
            score = average_precision(verdicts, self.eps)
            results.append(SampleResult(s.id, score, verdicts, None, {"similarities": best}))
        return results
