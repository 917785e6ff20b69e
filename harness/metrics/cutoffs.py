"""Every retrieval metric of one query in one pass (``at_cutoffs``): what the evaluation
loop runs on every sample of a streamed dataset, so it is kept cheap. The values equal, to
the bit, those of the per-metric functions of ``harness.metrics.retrieval`` (the same
additions in the same order; ``tests/metrics/test_retrieval_one_pass.py``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from harness.core.metric_names import retrieval_names


def at_cutoffs(
    retrieved: Sequence[str], grades: Mapping[str, float], ks: Sequence[int], min_grade: float = 1
) -> dict[str, float]:
    """``<metric>_at_<k>`` for each k and each of ``CUTOFF_METRICS`` (recall, ndcg,
    precision, hit_rate, map), and ``mrr``, in one pass.

    The same values, to the bit, as ``recall_at_k``, ``ndcg_at_k``, ``precision_at_k``,
    ``hit_rate_at_k``, ``average_precision_at_k`` and ``mrr`` (the same additions in the
    same order), computed once per sample instead of once per metric: the evaluation loop
    runs it on every sample of a streamed dataset (through ``cutoff_values``).
    """
    names, values = cutoff_values(retrieved, grades, ks, min_grade)
    return dict(zip(names, values, strict=True))


def cutoff_values(
    retrieved: Sequence[str], grades: Mapping[str, float], ks: Sequence[int], min_grade: float = 1
) -> tuple[tuple[str, ...], tuple[float, ...]]:
    """``at_cutoffs``' names and values, as two tuples (shared: do not change them).

    Only the first occurrences that gain something are kept (the others add nothing), and
    the values of each pattern of such hits are computed once per run (``_VALUES``; queries
    share a few thousand patterns).
    """
    total, positive = 0, []
    for g in grades.values():
        if g >= min_grade:
            total += 1
        if g > 0:
            positive.append(float(g))
    positive.sort(reverse=True)
    # (rank, grade) of each id's first occurrence that is relevant or has a gain
    hits: list[tuple[int, float]] = []
    seen: set[str] = set()
    everything = not min_grade > 0  # then an unjudged document (grade 0) counts as relevant
    for rank, doc in enumerate(retrieved, start=1):
        if everything or doc in grades:
            grade = grades.get(doc, 0)
            if (grade >= min_grade or grade > 0) and doc not in seen:
                seen.add(doc)
                hits.append((rank, grade))
            elif everything:
                seen.add(doc)
    cuts = tuple(ks)
    key = (tuple(hits), total, tuple(positive), cuts, min_grade)
    known = _VALUES.get(key)
    if known is None:
        known = _values(hits, total, key[2], cuts, min_grade)
        if len(_VALUES) >= _VALUES_MAX:
            _VALUES.clear()
        _VALUES[key] = known
    return _flat_names(cuts), known


def _values(hits: list[tuple[int, float]], total: int, positive: tuple[float, ...],
            cuts: tuple[int, ...], min_grade: float) -> tuple[float, ...]:
    """``cutoff_values``' values of a query whose first relevant or gaining occurrences
    are ``hits`` (rank, grade), with ``total`` relevant documents and ``positive`` grades."""
    out: list[float] = []
    for k in cuts:
        # the ideal DCG at k, the sum the per-metric ``ndcg_at_k`` makes
        idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(positive[:k], start=1))
        found, dcg, ap = 0, 0.0, 0.0
        for rank, grade in hits:
            if rank > k:
                break
            if grade >= min_grade:
                found += 1
                ap += found / rank
            if grade > 0:
                dcg += float(grade) / _log2_1p(rank)
        out += (found / total if total else 0.0, dcg / idcg if idcg > 0 else 0.0, found / k,
                1.0 if found else 0.0, ap / total if total else 0.0)  # CUTOFF_METRICS
    out.append(next((1.0 / r for r, g in hits if g >= min_grade), 0.0))
    return tuple(out)


#: ``math.log2(rank + 1)`` by rank (the same doubles: ``math.log2`` of the same argument).
_LOG2_1P = [math.log2(rank + 1) for rank in range(1025)]
#: ``at_cutoffs``' values by what they depend on (queries of one run share a few thousand
#: patterns of hits); cleared at ``_VALUES_MAX``.
_VALUES: dict[tuple[Any, ...], tuple[float, ...]] = {}
_VALUES_MAX = 65536
#: ``at_cutoffs``' names at each k, by ks, in the order of its rows' keys.
_NAMES: dict[tuple[int, ...], tuple[str, ...]] = {}


def _flat_names(ks: tuple[int, ...]) -> tuple[str, ...]:
    """``retrieval_names(ks)``, remembered as a tuple."""
    found = _NAMES.get(ks)
    if found is None:
        found = _NAMES[ks] = tuple(retrieval_names(ks))
    return found


def _log2_1p(rank: int) -> float:
    return _LOG2_1P[rank] if rank < 1025 else math.log2(rank + 1)
