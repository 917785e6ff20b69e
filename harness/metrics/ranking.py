"""The ranked aggregation every variant shares (docs/reference/metrics.md section 1).

One implementation, imported by every metric variant and by the tests.
"""

from __future__ import annotations

from collections.abc import Sequence


def average_precision(verdicts: Sequence[int] | Sequence[float], eps: float = 0.0) -> float:
    """Average precision over the retrieved order.

    ``score = sum_k P@k * v_k / (sum_k v_k + eps)`` with ``P@k = (v_1 + ... + v_k) / k``.

    The arithmetic order is fixed so that 0/1 verdicts give bit-identical doubles to
    ragas (``eps=1e-10``) and deepeval (``eps=0``): terms accumulate left to right from
    0.0, each ``prefix / k`` (an integer over an integer for 0/1 verdicts), and the sum is
    divided once by ``count + eps``. Soft verdicts (probabilities in [0, 1]) use the same
    formula with real-valued ``v_k``.

    Args:
        verdicts: Relevance of the chunk at each rank, rank 1 first.
        eps: Added to the denominator; ragas uses 1e-10, deepeval 0.

    Returns:
        The score in [0, 1]; 0.0 when nothing is relevant (or nothing was retrieved).
    """
    numerator = 0.0
    prefix: int | float = 0
    for k, v in enumerate(verdicts, start=1):
        prefix += v
        if v:
            numerator += (prefix / k) * v
    denominator = prefix + eps
    if denominator == 0:
        return 0.0
    return numerator / denominator


def set_precision(verdicts: Sequence[int]) -> float:
    """Share of relevant items: ragas ``IDBasedContextPrecision`` (not rank-aware).

    Args:
        verdicts: One 0/1 verdict per *distinct* retrieved id.

    Returns:
        ``sum(verdicts) / len(verdicts)``; the caller decides what an empty list means.
    """
    return sum(verdicts) / len(verdicts)
