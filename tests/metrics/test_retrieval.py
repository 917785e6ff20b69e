"""Retrieval metrics (harness.metrics.retrieval) against trec_eval, as pytrec_eval computes it.

GOLDEN was produced by pytrec_eval, not by harness: ``pip install pytrec-eval-terrier==0.5.11``
into a throwaway virtualenv (not a project dependency), then, for each case below, a run whose
scores strictly decrease along the list (``{doc: 100.0 - rank}``, so trec_eval's order is the
list order) evaluated with ``pytrec_eval.RelevanceEvaluator({"q": qrels},
{"ndcg_cut.1,3,5,10", "ndcg", "recall.1,3,5,10,100", "P.1,3,5,10", "recip_rank"},
relevance_level=L)`` for L = 1 and 2; ``recip_rank@k`` is ``recip_rank`` of the run cut to its
first k documents. The values are pasted verbatim (``repr``).

trec_eval runs cannot repeat a document, so the ``repeats`` case was evaluated with each
repeat replaced by a fresh unjudged id (RUNS_AS_EVALUATED): that is the semantics our
functions give a repeated id (it keeps its rank position and adds nothing).
"""

import math

import pytest

from harness.core.types import RagSample
from harness.metrics.retrieval import (
    mrr,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    sample_grades,
    sample_metrics,
)

CASES = {
    "graded": (
        {"d1": 2, "d2": 0, "d3": 1, "d4": 3, "d5": 1},
        ["d2", "d1", "x1", "d3", "x2", "d4", "x3", "x4", "x5", "x6", "d5", "x7"],
    ),
    "binary_short": ({"a": 1, "b": 1, "c": 1}, ["z1", "z2", "b", "z3"]),
    "no_relevant": ({"n1": 0, "n2": 0}, ["n1", "n2", "u1"]),
    "trec_dl": (
        {"p1": 1, "p2": 2, "p3": 3, "p4": 1, "p5": 2},
        ["p1", "p4", "p2", "u1", "p3", "u2", "u3", "u4", "u5", "u6", "p5"],
    ),
    # what our functions get: repeated ids (as chunked retrieval returns them)
    "repeats": ({"d1": 1, "d2": 2, "d3": 0, "d4": 1}, ["d1", "d1", "d3", "d2", "d3", "d4"]),
}

#: What pytrec_eval was given where it differs from CASES (repeats as fresh unjudged ids).
RUNS_AS_EVALUATED = {"repeats": ["d1", "dup1", "d3", "d2", "dup2", "d4"]}

GOLDEN = {
    ("graded", 1): {
        "P_1": 0.0,
        "P_10": 0.3,
        "P_3": 0.3333333333333333,
        "P_5": 0.4,
        "ndcg": 0.5854751000299238,
        "ndcg_cut_1": 0.0,
        "ndcg_cut_10": 0.5317551177038097,
        "ndcg_cut_3": 0.26499301486112564,
        "ndcg_cut_5": 0.3259555723751726,
        "recall_1": 0.0,
        "recall_10": 0.75,
        "recall_100": 1.0,
        "recall_3": 0.25,
        "recall_5": 0.5,
        "recip_rank": 0.5,
        "recip_rank@1": 0.0,
        "recip_rank@10": 0.5,
        "recip_rank@3": 0.5,
        "recip_rank@5": 0.5,
    },
    ("binary_short", 1): {
        "P_1": 0.0,
        "P_10": 0.1,
        "P_3": 0.3333333333333333,
        "P_5": 0.2,
        "ndcg": 0.23463936301137822,
        "ndcg_cut_1": 0.0,
        "ndcg_cut_10": 0.23463936301137822,
        "ndcg_cut_3": 0.23463936301137822,
        "ndcg_cut_5": 0.23463936301137822,
        "recall_1": 0.0,
        "recall_10": 0.3333333333333333,
        "recall_100": 0.3333333333333333,
        "recall_3": 0.3333333333333333,
        "recall_5": 0.3333333333333333,
        "recip_rank": 0.3333333333333333,
        "recip_rank@1": 0.0,
        "recip_rank@10": 0.3333333333333333,
        "recip_rank@3": 0.3333333333333333,
        "recip_rank@5": 0.3333333333333333,
    },
    ("no_relevant", 1): {
        "P_1": 0.0,
        "P_10": 0.0,
        "P_3": 0.0,
        "P_5": 0.0,
        "ndcg": 0.0,
        "ndcg_cut_1": 0.0,
        "ndcg_cut_10": 0.0,
        "ndcg_cut_3": 0.0,
        "ndcg_cut_5": 0.0,
        "recall_1": 0.0,
        "recall_10": 0.0,
        "recall_100": 0.0,
        "recall_3": 0.0,
        "recall_5": 0.0,
        "recip_rank": 0.0,
        "recip_rank@1": 0.0,
        "recip_rank@10": 0.0,
        "recip_rank@3": 0.0,
        "recip_rank@5": 0.0,
    },
    ("trec_dl", 1): {
        "P_1": 1.0,
        "P_10": 0.4,
        "P_3": 1.0,
        "P_5": 0.8,
        "ndcg": 0.715429487705058,
        "ndcg_cut_1": 0.3333333333333333,
        "ndcg_cut_10": 0.6236627159115384,
        "ndcg_cut_3": 0.5,
        "ndcg_cut_5": 0.6236627159115384,
        "recall_1": 0.2,
        "recall_10": 0.8,
        "recall_100": 1.0,
        "recall_3": 0.6,
        "recall_5": 0.8,
        "recip_rank": 1.0,
        "recip_rank@1": 1.0,
        "recip_rank@10": 1.0,
        "recip_rank@3": 1.0,
        "recip_rank@5": 1.0,
    },
    ("repeats", 1): {
        "P_1": 1.0,
        "P_10": 0.3,
        "P_3": 0.3333333333333333,
        "P_5": 0.4,
        "ndcg": 0.7082753296285977,
        "ndcg_cut_1": 0.5,
        "ndcg_cut_10": 0.7082753296285977,
        "ndcg_cut_3": 0.31939394323979897,
        "ndcg_cut_5": 0.5945049115278096,
        "recall_1": 0.3333333333333333,
        "recall_10": 1.0,
        "recall_100": 1.0,
        "recall_3": 0.3333333333333333,
        "recall_5": 0.6666666666666666,
        "recip_rank": 1.0,
        "recip_rank@1": 1.0,
        "recip_rank@10": 1.0,
        "recip_rank@3": 1.0,
        "recip_rank@5": 1.0,
    },
    ("graded", 2): {
        "P_1": 0.0,
        "P_10": 0.2,
        "P_3": 0.3333333333333333,
        "P_5": 0.2,
        "ndcg": 0.5854751000299238,
        "ndcg_cut_1": 0.0,
        "ndcg_cut_10": 0.5317551177038097,
        "ndcg_cut_3": 0.26499301486112564,
        "ndcg_cut_5": 0.3259555723751726,
        "recall_1": 0.0,
        "recall_10": 1.0,
        "recall_100": 1.0,
        "recall_3": 0.5,
        "recall_5": 0.5,
        "recip_rank": 0.5,
        "recip_rank@1": 0.0,
        "recip_rank@10": 0.5,
        "recip_rank@3": 0.5,
        "recip_rank@5": 0.5,
    },
    ("binary_short", 2): {
        "P_1": 0.0,
        "P_10": 0.0,
        "P_3": 0.0,
        "P_5": 0.0,
        "ndcg": 0.23463936301137822,
        "ndcg_cut_1": 0.0,
        "ndcg_cut_10": 0.23463936301137822,
        "ndcg_cut_3": 0.23463936301137822,
        "ndcg_cut_5": 0.23463936301137822,
        "recall_1": 0.0,
        "recall_10": 0.0,
        "recall_100": 0.0,
        "recall_3": 0.0,
        "recall_5": 0.0,
        "recip_rank": 0.0,
        "recip_rank@1": 0.0,
        "recip_rank@10": 0.0,
        "recip_rank@3": 0.0,
        "recip_rank@5": 0.0,
    },
    ("no_relevant", 2): {
        "P_1": 0.0,
        "P_10": 0.0,
        "P_3": 0.0,
        "P_5": 0.0,
        "ndcg": 0.0,
        "ndcg_cut_1": 0.0,
        "ndcg_cut_10": 0.0,
        "ndcg_cut_3": 0.0,
        "ndcg_cut_5": 0.0,
        "recall_1": 0.0,
        "recall_10": 0.0,
        "recall_100": 0.0,
        "recall_3": 0.0,
        "recall_5": 0.0,
        "recip_rank": 0.0,
        "recip_rank@1": 0.0,
        "recip_rank@10": 0.0,
        "recip_rank@3": 0.0,
        "recip_rank@5": 0.0,
    },
    ("trec_dl", 2): {
        "P_1": 0.0,
        "P_10": 0.2,
        "P_3": 0.3333333333333333,
        "P_5": 0.4,
        "ndcg": 0.715429487705058,
        "ndcg_cut_1": 0.3333333333333333,
        "ndcg_cut_10": 0.6236627159115384,
        "ndcg_cut_3": 0.5,
        "ndcg_cut_5": 0.6236627159115384,
        "recall_1": 0.0,
        "recall_10": 0.6666666666666666,
        "recall_100": 1.0,
        "recall_3": 0.3333333333333333,
        "recall_5": 0.6666666666666666,
        "recip_rank": 0.3333333333333333,
        "recip_rank@1": 0.0,
        "recip_rank@10": 0.3333333333333333,
        "recip_rank@3": 0.3333333333333333,
        "recip_rank@5": 0.3333333333333333,
    },
    ("repeats", 2): {
        "P_1": 0.0,
        "P_10": 0.1,
        "P_3": 0.0,
        "P_5": 0.2,
        "ndcg": 0.7082753296285977,
        "ndcg_cut_1": 0.5,
        "ndcg_cut_10": 0.7082753296285977,
        "ndcg_cut_3": 0.31939394323979897,
        "ndcg_cut_5": 0.5945049115278096,
        "recall_1": 0.0,
        "recall_10": 1.0,
        "recall_100": 1.0,
        "recall_3": 0.0,
        "recall_5": 1.0,
        "recip_rank": 0.25,
        "recip_rank@1": 0.0,
        "recip_rank@10": 0.25,
        "recip_rank@3": 0.0,
        "recip_rank@5": 0.25,
    },
}

KS = (1, 3, 5, 10)


@pytest.mark.parametrize(("case", "level"), sorted(GOLDEN))
def test_matches_pytrec_eval(case: str, level: int) -> None:
    grades, ranked = CASES[case]
    gold = GOLDEN[(case, level)]
    for k in KS:
        assert recall_at_k(ranked, grades, k, level) == pytest.approx(
            gold[f"recall_{k}"], abs=1e-12
        )
        assert precision_at_k(ranked, grades, k, level) == pytest.approx(gold[f"P_{k}"], abs=1e-12)
        assert ndcg_at_k(ranked, grades, k) == pytest.approx(gold[f"ndcg_cut_{k}"], abs=1e-12)
        assert mrr(ranked, grades, k, level) == pytest.approx(gold[f"recip_rank@{k}"], abs=1e-12)
    assert recall_at_k(ranked, grades, 100, level) == pytest.approx(gold["recall_100"], abs=1e-12)
    assert ndcg_at_k(ranked, grades, None) == pytest.approx(gold["ndcg"], abs=1e-12)
    assert mrr(ranked, grades, None, level) == pytest.approx(gold["recip_rank"], abs=1e-12)


def test_repeats_count_once_at_first_rank() -> None:
    grades, ranked = CASES["repeats"]
    fresh = RUNS_AS_EVALUATED["repeats"]
    for k in (None, 1, 2, 3, 4, 5, 6):
        assert ndcg_at_k(ranked, grades, k) == ndcg_at_k(fresh, grades, k)
        assert recall_at_k(ranked, grades, k) == recall_at_k(fresh, grades, k)
        assert mrr(ranked, grades, k, 2) == mrr(fresh, grades, k, 2)
    # a repeat never raises recall: d1 twice in the top 2 is one of three relevant documents
    assert recall_at_k(["d1", "d1"], grades, 2) == pytest.approx(1 / 3)


def test_judged_negatives_are_not_relevant() -> None:
    grades = {"good": 1, "bad": 0}
    assert recall_at_k(["bad"], grades, 10) == 0.0
    assert mrr(["bad", "good"], grades) == 0.5
    assert ndcg_at_k(["bad"], grades, 10) == 0.0
    # unjudged and negative documents gain nothing; the ideal list is [good]
    assert ndcg_at_k(["x", "good"], grades, 10) == pytest.approx(1 / math.log2(3))


def test_ndcg_min_grade_zeroes_low_gains() -> None:
    grades = {"a": 1, "b": 2}
    assert ndcg_at_k(["a"], grades, 10, min_grade=2) == 0.0
    assert ndcg_at_k(["b"], grades, 10, min_grade=2) == 1.0


def test_bad_k() -> None:
    with pytest.raises(ValueError):
        recall_at_k(["a"], {"a": 1}, 0)


def test_sample_helpers() -> None:
    graded = RagSample(
        id="q",
        retrieved_context_ids=("d2", "d1"),
        reference_context_ids=("d1", "d2"),
        reference_context_grades=(2.0, 0.0),
    )
    assert sample_grades(graded) == {"d1": 2.0, "d2": 0.0}
    plain = RagSample(id="p", retrieved_context_ids=("x",), reference_context_ids=("x",))
    assert sample_grades(plain) == {"x": 1.0}
    m = sample_metrics(graded, ks=(1, 10))
    assert m["recall@1"] == 0.0 and m["recall@10"] == 1.0 and m["mrr"] == 0.5


def test_one_pass_version_equals_the_metric_functions_bit_for_bit() -> None:
    import random

    from harness.metrics.retrieval import at_cutoffs, mrr, ndcg_at_k, recall_at_k

    rng = random.Random(3)
    for _ in range(500):
        docs = [f"d{i}" for i in range(12)]
        judged = rng.sample(docs, rng.randint(0, 8))
        grades = {d: float(rng.choice([0, 0, 1, 2, 3])) for d in judged}
        retrieved = [rng.choice(docs) for _ in range(rng.randint(0, 10))]
        min_grade = rng.choice([1, 2])
        got = at_cutoffs(retrieved, grades, [1, 3, 10], min_grade)
        for k in (1, 3, 10):
            assert got[f"recall_at_{k}"] == recall_at_k(retrieved, grades, k, min_grade)
            assert got[f"ndcg_at_{k}"] == ndcg_at_k(retrieved, grades, k)
        assert got["mrr"] == mrr(retrieved, grades, None, min_grade)
