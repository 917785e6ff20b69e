"""Retrieval metrics over graded judgments: recall@k, nDCG@k, MRR, precision@k, hit rate@k
and MAP@k.

Pure functions of

- ``retrieved``: the retrieved document ids in rank order (a sample's
  ``retrieved_context_ids``; with chunking one document can appear several times);
- ``grades``: ``{document id: grade}`` for the judged documents (BEIR qrels; grade 0 is a
  judged negative, unjudged documents count as grade 0);
- ``k``: the rank cut-off (``None``: the whole list);
- ``min_grade``: the lowest grade that counts as relevant for the binary metrics
  (trec_eval's ``relevance_level``, 1 by default; TREC DL uses 2).

A document id that appears again lower in the list counts once, at its first rank: its
later occurrences take up their rank positions but add nothing (like a non-relevant
document). Without repeats the values equal trec_eval's (``pytrec_eval``) on a run whose
scores follow the list order: ``recall_k``, ``P_k``, ``ndcg_cut_k``, ``recip_rank``,
``map_cut_k`` and ``success_k`` (hit rate; checked in ``tests/metrics/test_retrieval.py``
and, against ranx, in ``tests/datasets/test_trec.py``). A query with no relevant document
scores 0.0 everywhere, as in trec_eval. A ``k`` deeper than the list scores it as trec_eval
does, as if padded with non-relevant documents: ``P_k`` still divides by ``k``, ``recall_k``
is the list's recall, the ideal of ``ndcg_cut_k`` takes min(k, relevant) documents
(``tests/metrics/test_beyond_depth.py``).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from harness.core.metric_names import CUTOFF_METRICS
from harness.core.types import RagSample
from harness.metrics.cutoffs import at_cutoffs, cutoff_values

__all__ = [
    "above_depth", "at_cutoffs", "average_precision_at_k", "cutoff_values", "dropped_names",
    "hit_rate_at_k", "mrr", "ndcg_at_k", "precision_at_k", "recall_at_k", "retrieval_summary",
    "sample_grades", "sample_metrics",
]


def _first_occurrences(retrieved: Sequence[str], k: int | None) -> list[tuple[int, str]]:
    """``(1-based rank, id)`` of each id's first occurrence within the first ``k`` ranks."""
    if k is not None and k < 1:
        raise ValueError(f"k must be >= 1 or None, got {k}")
    top = retrieved if k is None else retrieved[:k]
    seen: set[str] = set()
    out = []
    for rank, doc in enumerate(top, start=1):
        if doc not in seen:
            seen.add(doc)
            out.append((rank, doc))
    return out


def _n_relevant(grades: Mapping[str, float], min_grade: float) -> int:
    return sum(1 for g in grades.values() if g >= min_grade)


def recall_at_k(
    retrieved: Sequence[str], grades: Mapping[str, float], k: int | None, min_grade: float = 1
) -> float:
    """Share of the relevant documents (grade >= ``min_grade``) found in the first ``k`` ranks."""
    total = _n_relevant(grades, min_grade)
    if total == 0:
        return 0.0
    found = sum(1 for _, d in _first_occurrences(retrieved, k) if grades.get(d, 0) >= min_grade)
    return found / total


def precision_at_k(
    retrieved: Sequence[str], grades: Mapping[str, float], k: int, min_grade: float = 1
) -> float:
    """Relevant documents in the first ``k`` ranks, over ``k`` (trec_eval ``P_k``: a short
    list is not padded away, the denominator stays ``k``)."""
    found = sum(1 for _, d in _first_occurrences(retrieved, k) if grades.get(d, 0) >= min_grade)
    return found / k


def hit_rate_at_k(
    retrieved: Sequence[str], grades: Mapping[str, float], k: int, min_grade: float = 1
) -> float:
    """1.0 when a relevant document is in the first ``k`` ranks, else 0.0 (trec_eval
    ``success_k``)."""
    return 1.0 if precision_at_k(retrieved, grades, k, min_grade) > 0 else 0.0


def average_precision_at_k(
    retrieved: Sequence[str], grades: Mapping[str, float], k: int | None, min_grade: float = 1
) -> float:
    """Average precision at ``k`` (trec_eval ``map_cut_k``; ``None``: ``map``): the sum of
    the precision at the rank of each relevant document in the first ``k`` ranks, over
    the number of relevant documents of the query (retrieved or not)."""
    total = _n_relevant(grades, min_grade)
    found, ap = 0, 0.0
    for rank, doc in _first_occurrences(retrieved, k):
        if grades.get(doc, 0) >= min_grade:
            found += 1
            ap += found / rank
    return ap / total if total else 0.0


def ndcg_at_k(
    retrieved: Sequence[str],
    grades: Mapping[str, float],
    k: int | None,
    min_grade: float | None = None,
) -> float:
    """Normalised discounted cumulative gain at ``k``, trec_eval's ``ndcg_cut`` (BEIR's nDCG).

    ``DCG@k = sum over ranks r <= k of gain(doc at r) / log2(r + 1)``, with the linear gain
    ``gain = grade`` (grades <= 0 and unjudged documents gain 0). The ideal DCG sorts all
    judged grades of the query, whether retrieved or not, and cuts them at ``k``.

    Args:
        retrieved: Document ids in rank order.
        grades: The judged documents' grades.
        k: The cut-off (``None``: the whole list, trec_eval's ``ndcg``).
        min_grade: ``None`` (the default) uses every positive grade as gain, as trec_eval
            does whatever its relevance level; a number zeroes the gain of grades below it.
    """

    def gain(grade: float) -> float:
        if grade <= 0 or (min_grade is not None and grade < min_grade):
            return 0.0
        return float(grade)

    dcg = 0.0
    for rank, doc in _first_occurrences(retrieved, k):
        g = gain(grades.get(doc, 0))
        if g:
            dcg += g / math.log2(rank + 1)
    ideal_gains = sorted((gain(g) for g in grades.values()), reverse=True)
    if k is not None:
        ideal_gains = ideal_gains[:k]
    idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal_gains, start=1) if g)
    return dcg / idcg if idcg > 0 else 0.0


def mrr(
    retrieved: Sequence[str],
    grades: Mapping[str, float],
    k: int | None = None,
    min_grade: float = 1,
) -> float:
    """Reciprocal rank of the first relevant document (grade >= ``min_grade``), 0 if none.

    ``k=None`` looks at the whole list (trec_eval's ``recip_rank``); ``k`` looks only at
    the first ``k`` ranks (``MRR@k``, as BEIR and MS MARCO report it).
    """
    for rank, doc in _first_occurrences(retrieved, k):
        if grades.get(doc, 0) >= min_grade:
            return 1.0 / rank
    return 0.0


def sample_grades(sample: RagSample) -> dict[str, float]:
    """``{reference id: grade}`` of a sample; every reference id is grade 1 without grades."""
    ids = sample.reference_context_ids or ()
    grades = sample.reference_context_grades
    if grades is None:
        return dict.fromkeys(ids, 1.0)
    return dict(zip(ids, grades, strict=True))


def sample_metrics(
    sample: RagSample, ks: Sequence[int] = (1, 10, 100), min_grade: float = 1
) -> dict[str, Any]:
    """Every metric of one sample at each ``k``: ``recall@k``, ``precision@k``, ``ndcg@k``,
    ``mrr@k``, ``hit_rate@k``, ``map@k``, and ``mrr`` over the whole list."""
    retrieved = sample.retrieved_context_ids or ()
    grades = sample_grades(sample)
    out: dict[str, Any] = {}
    for k in ks:
        out[f"recall@{k}"] = recall_at_k(retrieved, grades, k, min_grade)
        out[f"precision@{k}"] = precision_at_k(retrieved, grades, k, min_grade)
        out[f"ndcg@{k}"] = ndcg_at_k(retrieved, grades, k)
        out[f"mrr@{k}"] = mrr(retrieved, grades, k, min_grade)
        out[f"hit_rate@{k}"] = hit_rate_at_k(retrieved, grades, k, min_grade)
        out[f"map@{k}"] = average_precision_at_k(retrieved, grades, k, min_grade)
    out["mrr"] = mrr(retrieved, grades, None, min_grade)
    return out


def above_depth(ks: Sequence[int], depth: int) -> list[int]:
    """The cut-offs the retrieval never reached: above ``depth``, the longest retrieved list
    of the run (``recall_at_100`` of a top-10 retrieval equals its ``recall_at_10``); they
    are scored as trec_eval scores them, and dropped only on request (``dropped_names``)."""
    return sorted({k for k in ks if k > depth})


def dropped_names(ks: Sequence[int], depth: int, keep: bool | Collection[str]) -> list[str]:
    """The ``at_cutoffs`` names above ``depth`` that are not logged: all of them, but
    ``keep`` (``True``: none)."""
    names = [f"{m}_at_{k}" for k in above_depth(ks, depth) for m in CUTOFF_METRICS]
    return [] if keep is True else [n for n in names if keep is False or n not in keep]


def retrieval_summary(
    totals: Mapping[str, float], n: int, ks: Sequence[int], depth: int,
    keep: bool | Collection[str],
) -> dict[str, Any]:
    """``retrieval`` (the means over ``n`` queries of ``totals``, without ``dropped_names``,
    and ``n_queries``) and ``retrieval_cutoffs`` (``depth``, ``above_depth``, and the names
    above it ``dropped`` and ``logged``) of ``summary.json``."""
    dropped = dropped_names(ks, depth, keep)
    means: dict[str, Any] = {k: v / n for k, v in totals.items() if k not in dropped}
    means["n_queries"] = n
    above = above_depth(ks, depth)
    logged = [f"{m}_at_{k}" for k in above for m in CUTOFF_METRICS
              if f"{m}_at_{k}" not in dropped]
    cutoffs = {"depth": depth, "above_depth": above, "dropped": dropped, "logged": logged}
    return {"retrieval": means, "retrieval_cutoffs": cutoffs}
