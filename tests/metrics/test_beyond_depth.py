"""Cut-offs deeper than the retrieved list, scored as trec_eval scores them.

A list shorter than ``k`` scores as if padded with non-relevant documents: ``P_k`` keeps
``k`` as its denominator, ``recall_k`` is the recall of the whole list, ``ndcg_cut_k`` is
the list's DCG over the ideal DCG of ``min(k, relevant)`` documents. The golden values are
trec_eval's own (``pytrec_eval``, the test extra), computed here on the same lists, plus
three worked by hand from the definitions.
"""

from __future__ import annotations

import math
import random

import pytest
import pytrec_eval  # the test extra: trec_eval 9.0.8 itself, as the reference

from harness.metrics.retrieval import (
    at_cutoffs,
    average_precision_at_k,
    hit_rate_at_k,
    mrr,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
)

#: Cut-offs deeper than every list below (lists hold at most 6 documents).
DEEP = (7, 10, 20, 100)
#: Our ``at_cutoffs`` name -> trec_eval's measure.
TREC = {"recall": "recall_{k}", "ndcg": "ndcg_cut_{k}", "precision": "P_{k}",
        "hit_rate": "success_{k}", "map": "map_cut_{k}"}
MEASURES = {f"{m}.{','.join(map(str, DEEP))}" for m in ("recall", "ndcg_cut", "P", "success",
                                                         "map_cut")} | {"recip_rank"}


def trec_eval(ranked: list[str], grades: dict[str, int], level: int) -> dict[str, float]:
    """pytrec_eval's measures of one query whose scores follow the list order."""
    run = {"q": {d: float(100 - rank) for rank, d in enumerate(ranked)}}
    evaluator = pytrec_eval.RelevanceEvaluator({"q": grades}, MEASURES, relevance_level=level)
    return dict(evaluator.evaluate(run)["q"])


def cases() -> list[tuple[list[str], dict[str, int]]]:
    """Short lists (1-6 distinct documents) against graded judgments of up to 12 documents,
    some of them relevant beyond the list, some judged negative."""
    rng = random.Random(35)
    docs = [f"d{i}" for i in range(20)]
    out = []
    for _ in range(200):
        judged = rng.sample(docs, rng.randint(1, 12))
        grades = {d: rng.choice([0, 1, 1, 2, 3]) for d in judged}
        if not any(grades.values()):
            grades[judged[0]] = 1
        out.append((rng.sample(docs, rng.randint(1, 6)), grades))
    return out


@pytest.mark.parametrize("level", [1, 2])
def test_cutoffs_deeper_than_the_list_equal_trec_eval(level: int) -> None:
    for ranked, grades in cases():
        gold = trec_eval(ranked, grades, level)
        floats = {d: float(g) for d, g in grades.items()}
        got = at_cutoffs(ranked, floats, DEEP, level)
        for k in DEEP:
            for ours, theirs in TREC.items():
                assert got[f"{ours}_at_{k}"] == pytest.approx(
                    gold[theirs.format(k=k)], abs=1e-12), (ours, k, ranked, grades)
            # the per-metric functions agree with the one-pass version
            assert recall_at_k(ranked, floats, k, level) == got[f"recall_at_{k}"]
            assert precision_at_k(ranked, floats, k, level) == got[f"precision_at_{k}"]
            assert ndcg_at_k(ranked, floats, k) == got[f"ndcg_at_{k}"]
            assert hit_rate_at_k(ranked, floats, k, level) == got[f"hit_rate_at_{k}"]
            assert average_precision_at_k(ranked, floats, k, level) == got[f"map_at_{k}"]
        assert got["mrr"] == pytest.approx(gold["recip_rank"], abs=1e-12)
        assert mrr(ranked, floats, None, level) == got["mrr"]


def test_worked_by_hand() -> None:
    """3 documents, 2 of them relevant (3 relevant in all), at k=10."""
    ranked, grades = ["a", "x", "b"], {"a": 1.0, "b": 1.0, "c": 1.0}
    got = at_cutoffs(ranked, grades, [10])
    assert got["precision_at_10"] == 2 / 10
    assert got["recall_at_10"] == recall_at_k(ranked, grades, None) == 2 / 3
    # ideal over min(10, 3 relevant) = 3 documents
    dcg = 1 / math.log2(2) + 1 / math.log2(4)
    idcg = 1 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)
    assert got["ndcg_at_10"] == pytest.approx(dcg / idcg, abs=1e-15)
    assert got["ndcg_at_10"] == pytest.approx(ndcg_at_k(ranked, grades, None), abs=1e-15)
    assert got["map_at_10"] == pytest.approx((1 / 1 + 2 / 3) / 3, abs=1e-15)
    assert got["hit_rate_at_10"] == 1.0 and got["mrr"] == 1.0


def test_a_shorter_list_scores_lower_at_one_cut_off() -> None:
    """The same ranking cut to 1, 3 and 6 documents, scored at 10: never higher when
    shorter (what a sweep over retriever.top_k compares)."""
    grades = {"a": 2.0, "b": 1.0, "c": 3.0, "d": 1.0}
    full = ["x", "a", "y", "b", "c", "d"]
    scores = [at_cutoffs(full[:n], grades, [10]) for n in (1, 3, 6)]
    for name in ("recall_at_10", "ndcg_at_10", "precision_at_10", "map_at_10"):
        values = [s[name] for s in scores]
        assert values == sorted(values) and values[0] < values[-1], name
