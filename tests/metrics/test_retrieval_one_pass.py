"""``at_cutoffs`` (the loop's one pass: first occurrences that gain, a log2 table, the ideal
DCG remembered) against the per-metric functions, one definition each, bit for bit, on
the inputs that make the shortcuts matter: repeated ids, unjudged and negative grades, a
relevance level of 0 or below (an unjudged document counts as relevant), cut-offs deeper
than the list, in any order, and the same grades again (remembered ideal DCG). Against
trec_eval (``pytrec_eval``) on a list without repeats, and the set precision of
``metric=id_based`` against ragas's formula in exact fractions."""

from __future__ import annotations

import random
from fractions import Fraction

import pytrec_eval  # the test extra: trec_eval itself, as the reference

from harness.core.types import RagSample
from harness.metrics.id_based import IdContextPrecision
from harness.metrics.retrieval import (
    at_cutoffs,
    average_precision_at_k,
    hit_rate_at_k,
    mrr,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
)


def by_definition(retrieved: list[str], grades: dict[str, float], ks: list[int],
                  level: float) -> dict[str, float]:
    """Each metric from its own function, in ``at_cutoffs``' key order."""
    out: dict[str, float] = {}
    for k in ks:
        out[f"recall_at_{k}"] = recall_at_k(retrieved, grades, k, level)
        out[f"ndcg_at_{k}"] = ndcg_at_k(retrieved, grades, k)
        out[f"precision_at_{k}"] = precision_at_k(retrieved, grades, k, level)
        out[f"hit_rate_at_{k}"] = hit_rate_at_k(retrieved, grades, k, level)
        out[f"map_at_{k}"] = average_precision_at_k(retrieved, grades, k, level)
    out["mrr"] = mrr(retrieved, grades, None, level)
    return out


def test_equals_each_metric_function_bit_for_bit() -> None:
    rng = random.Random(34)
    for _ in range(3000):
        docs = [f"d{i}" for i in range(rng.randint(1, 14))]
        judged = rng.sample(docs, rng.randint(0, len(docs)))
        grades: dict[str, float] = {
            d: rng.choice([0, 1, 2, 3, 1.0, 0.5, 2.5, -1]) for d in judged}
        retrieved = [rng.choice(docs) for _ in range(rng.randint(0, 15))]
        level = rng.choice([1, 2, 3, 0.5, 0, -1])
        ks = rng.sample([1, 2, 3, 5, 10, 20, 100], rng.randint(1, 4))
        want = by_definition(retrieved, grades, ks, level)
        for _ in range(2):  # the second time from the remembered ideal DCG
            got = at_cutoffs(retrieved, grades, ks, level)
            assert list(got) == list(want)
            assert all(got[n] == want[n] and type(got[n]) is float for n in want), (
                retrieved, grades, ks, level)


def test_equals_trec_eval_on_ten_ids() -> None:
    rng = random.Random(7)
    measures = {"recall.5,10", "ndcg_cut.5,10", "P.5,10", "success.5,10", "map_cut.5,10",
                "recip_rank"}
    names = {"recall": "recall", "ndcg": "ndcg_cut", "precision": "P", "hit_rate": "success",
             "map": "map_cut"}
    for _ in range(300):
        retrieved = [f"d{i}" for i in rng.sample(range(40), 10)]
        qrels = {f"d{i}": rng.choice([0, 1, 2]) for i in rng.sample(range(40), 5)}
        level = rng.choice([1, 2])
        run = {"q": {d: float(100 - r) for r, d in enumerate(retrieved)}}
        trec = pytrec_eval.RelevanceEvaluator({"q": qrels}, measures, relevance_level=level)
        want = trec.evaluate(run)["q"]
        grades = {d: float(g) for d, g in qrels.items()}
        got = at_cutoffs(retrieved, grades, [5, 10], level)
        for ours, theirs in names.items():
            for k in (5, 10):
                assert abs(got[f"{ours}_at_{k}"] - want[f"{theirs}_{k}"]) < 1e-12
        assert abs(got["mrr"] - want["recip_rank"]) < 1e-12


def test_id_based_set_precision_is_ragas_formula() -> None:
    rng = random.Random(11)
    metric = IdContextPrecision("id_based")
    for i in range(2000):
        pool = [f"d{j}" for j in range(rng.randint(1, 12))]
        retrieved = tuple(rng.choice(pool) for _ in range(rng.randint(0, 12)))
        refs = tuple(rng.sample(pool, rng.randint(0, len(pool))))
        result = metric.score_one(RagSample(id=str(i), retrieved_context_ids=retrieved,
                                            reference_context_ids=refs))
        if not retrieved:
            assert result.score is None and result.error == "retrieved_context_ids is empty"
            continue
        assert result.verdicts == [int(r in refs) for r in retrieved]
        distinct = set(retrieved)
        want = Fraction(len(distinct & set(refs)), len(distinct))
        assert result.score == float(want)
    missing = metric.score_one(RagSample(id="m", retrieved_context_ids=("a",)))
    assert missing.score is None and missing.error == "missing field reference_context_ids"
    both = metric.score_one(RagSample(id="n"))
    assert both.error == "missing fields reference_context_ids, retrieved_context_ids"
