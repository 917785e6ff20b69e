"""``dataset=trec``: a TREC run and qrels scored as trec_eval scores them.

The gold values come from trec_eval itself (``pytrec_eval``, computed here on the same
files), and the id-based variants from their definitions written out in the test."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
import pytrec_eval  # the test extra: trec_eval itself, as the reference
from conftest import run_cli
from helpers.errors import fails

KS = (1, 3, 5, 10)
#: Our name at k -> trec_eval's measure.
TREC_NAMES = {"recall": "recall_{k}", "ndcg": "ndcg_cut_{k}", "precision": "P_{k}",
              "hit_rate": "success_{k}", "map": "map_cut_{k}"}


def make_files(where: Path, seed: int) -> tuple[Path, Path, dict[str, dict[str, float]],
                                                 dict[str, dict[str, int]]]:
    """A random run (scores drawn from few values, so ties are common) and graded qrels
    (0-3), with queries only in the run and queries only in the qrels."""
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(40)]
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    for q in range(25):
        qid = f"q{q}"
        if q % 7 != 3:  # a few judged queries the run lacks
            picked = rng.sample(docs, rng.randint(1, 14))
            run[qid] = {d: float(rng.choice([1, 2, 2.5, 3, 7])) for d in picked}
        if q % 9 != 4:  # a few run queries without judgments
            judged = rng.sample(docs, rng.randint(1, 8))
            qrels[qid] = {d: rng.choice([0, 1, 1, 2, 3]) for d in judged}
    run_lines, rank = [], 0
    for qid, scored in run.items():
        for rank, (d, s) in enumerate(rng.sample(list(scored.items()), len(scored)), 1):
            run_lines.append(f"{qid} Q0 {d} {rank} {s:g} tagA")  # file order: shuffled
    qrels_lines = [f"{q} 0 {d} {g}" for q, judged in qrels.items() for d, g in judged.items()]
    (where / "run.txt").write_text("\n".join(run_lines) + "\n", "utf-8")
    (where / "qrels.txt").write_text("\n".join(qrels_lines) + "\n", "utf-8")
    return where / "run.txt", where / "qrels.txt", run, qrels


def trec_eval(run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]],
              level: int) -> dict[str, dict[str, float]]:
    measures = {"recip_rank"} | {
        f"{m.split('_{k}')[0]}.{','.join(map(str, KS))}" for m in TREC_NAMES.values()
    }
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=level)
    return dict(evaluator.evaluate(run))


def trec_order(scored: dict[str, float]) -> list[str]:
    """trec_eval's ranking, written out: score descending, ties by doc id descending."""
    by_id = sorted(scored.items(), key=lambda p: p[0], reverse=True)
    return [d for d, _ in sorted(by_id, key=lambda p: -p[1])]


@pytest.mark.parametrize(("seed", "level", "complete"), [(1, 1, False), (2, 2, False),
                                                          (3, 1, True)])
def test_equal_to_trec_eval(tmp_path: Path, seed: int, level: int, complete: bool) -> None:
    run_file, qrels_file, run, qrels = make_files(tmp_path, seed)
    result = run_cli("dataset=trec", f"dataset.run={run_file}", f"dataset.qrels={qrels_file}",
                     f"dataset.min_grade={level}", f"dataset.complete={str(complete).lower()}",
                     "metric=id_ranked", f"run.retrieval_ks=[{','.join(map(str, KS))}]",
                     "run.retrieval_beyond_depth=true", "tracking=none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    gold = trec_eval(run, qrels, level)
    both = [q for q in run if q in qrels]
    assert set(gold) == set(both)
    scored = both + ([q for q in qrels if q not in run] if complete else [])
    rows = {r["id"]: r for r in result.rows()}
    assert list(rows) == scored
    retrieval = result.summary()["retrieval"]
    assert retrieval["n_queries"] == len(scored)
    for k in KS:
        for ours, theirs in TREC_NAMES.items():
            # trec_eval -c: a judged query the run lacks scores 0
            want = sum(gold[q][theirs.format(k=k)] for q in both) / len(scored)
            assert retrieval[f"{ours}_at_{k}"] == pytest.approx(want, abs=1e-12), (ours, k)
    want_mrr = sum(gold[q]["recip_rank"] for q in both) / len(scored)
    assert retrieval["mrr"] == pytest.approx(want_mrr, abs=1e-12)
    for q in both:  # per query, too, in trec_eval's order
        assert rows[q]["retrieved_context_ids"] == trec_order(run[q])
        assert rows[q]["mrr"] == pytest.approx(gold[q]["recip_rank"], abs=1e-12)
        assert rows[q]["map_at_10"] == pytest.approx(gold[q]["map_cut_10"], abs=1e-12)


def _ap_over_retrieved(verdicts: list[int]) -> float:
    """ragas-style average precision: precision at each relevant rank, over the relevant
    retrieved (0 when none is)."""
    hits = [sum(verdicts[: i + 1]) / (i + 1) for i, v in enumerate(verdicts) if v]
    return sum(hits) / len(hits) if hits else 0.0


@pytest.mark.parametrize("metric", ["id_based", "id_ranked"])
def test_id_variants_score_the_run(tmp_path: Path, metric: str) -> None:
    run_file, qrels_file, run, qrels = make_files(tmp_path, 5)
    result = run_cli("dataset=trec", f"dataset.run={run_file}", f"dataset.qrels={qrels_file}",
                     f"metric={metric}", "tracking=none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    scores = []
    for row in result.rows():
        ranked = trec_order(run[row["id"]])
        verdicts = [1 if qrels[row["id"]].get(d, 0) >= 1 else 0 for d in ranked]
        want = (sum(verdicts) / len(verdicts) if metric == "id_based"
                else _ap_over_retrieved(verdicts))
        assert row["score"] == pytest.approx(want, abs=1e-12)
        assert row["verdicts"] == verdicts
        scores.append(want)
    assert result.summary()["mean"] == pytest.approx(sum(scores) / len(scores), abs=1e-12)


def test_ties_follow_trec_eval(tmp_path: Path) -> None:
    # equal scores: the greater id (as strcmp compares) first, whatever the rank column says
    (tmp_path / "run.txt").write_text(
        "q1 Q0 d10 1 2.0 t\nq1 Q0 d9 2 2.0 t\nq1 Q0 a 3 2.0 t\nq1 Q0 z 4 1.5 t\n"
        "q1 Q0 b 5 9 t\n", "utf-8")
    (tmp_path / "qrels.txt").write_text("q1 0 a 1\nq1 0 z 1\n", "utf-8")
    result = run_cli("dataset=trec", f"dataset.run={tmp_path / 'run.txt'}",
                     f"dataset.qrels={tmp_path / 'qrels.txt'}", "metric=id_ranked",
                     "tracking=none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    [row] = result.rows()
    assert row["retrieved_context_ids"] == ["b", "d9", "d10", "a", "z"]
    gold = trec_eval({"q1": {"d10": 2.0, "d9": 2.0, "a": 2.0, "z": 1.5, "b": 9.0}},
                     {"q1": {"a": 1, "z": 1}}, 1)
    assert row["mrr"] == pytest.approx(gold["q1"]["recip_rank"]) == 0.25


def test_queries_and_corpus_give_texts(tmp_path: Path) -> None:
    (tmp_path / "run.txt").write_text("q1 Q0 d1 1 2 t\nq1 Q0 d2 2 1 t\n", "utf-8")
    (tmp_path / "qrels.txt").write_text("q1 0 d2 1\nq1 0 d3 2\n", "utf-8")
    (tmp_path / "queries.tsv").write_text("q1\twhere is the tower\n", "utf-8")
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in [
        {"_id": "d1", "text": "a bridge"}, {"_id": "d2", "title": "Tower", "text": "in Paris"},
        {"_id": "d3", "text": "the tower is tall"}]), "utf-8")
    result = run_cli("dataset=trec", f"dataset.run={tmp_path / 'run.txt'}",
                     f"dataset.qrels={tmp_path / 'qrels.txt'}",
                     f"dataset.queries={tmp_path / 'queries.tsv'}",
                     f"dataset.corpus={tmp_path / 'docs.jsonl'}", "metric=non_llm",
                     "tracking=none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    [row] = result.rows()
    assert row["question"] == "where is the tower"
    assert [c["text"] for c in row["chunks"]] == ["a bridge", "Tower\n\nin Paris"]
    described: dict[str, Any] = result.summary()["dataset"]
    assert described["documents"] == 3 and described["queries"] == 1


BAD_RUNS = [
    ("q1 Q0 d1 1 2.0\n", ["run.txt:1", "expected 6 whitespace-separated columns"]),
    ("q1 Q0 d1 1 high t\n", ["run.txt:1: field 'score'", "expected a number, got 'high'"]),
    ("q1 Q0 d1 1 nan t\n", ["run.txt:1: field 'score'", "expected a number"]),
    ("q1 Q0 d1 one 2 t\n", ["run.txt:1: field 'rank'", "integer rank"]),
    ("q1 Q0 d1 1 2 t\nq1 Q0 d1 2 1 t\n",
     ["run.txt:2: field 'doc_id'", "lists document 'd1' again (first on line 1)"]),
    ("q1 Q0 d1 1 2 t\n\xff\n", ["run.txt:2", "not valid UTF-8"]),
]


@pytest.mark.parametrize(("text", "fragments"), BAD_RUNS)
def test_a_bad_run_is_one_line(tmp_path: Path, text: str, fragments: list[str]) -> None:
    (tmp_path / "run.txt").write_bytes(text.encode("latin-1"))  # \xff: not UTF-8
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n", "utf-8")
    fails(run_cli("dataset=trec", f"dataset.run={tmp_path / 'run.txt'}",
                  f"dataset.qrels={tmp_path / 'qrels.txt'}", "metric=id_ranked",
                  "tracking=none", cwd=tmp_path), *fragments)


@pytest.mark.slow
def test_bad_qrels_settings_and_missing_texts(tmp_path: Path) -> None:
    (tmp_path / "run.txt").write_text("q1 Q0 d1 1 2 t\n", "utf-8")
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d1 2\n", "utf-8")
    base = ("dataset=trec", f"dataset.run={tmp_path / 'run.txt'}", "metric=id_ranked",
            "tracking=none")
    fails(run_cli(*base, f"dataset.qrels={tmp_path / 'qrels.txt'}", cwd=tmp_path),
          "qrels.txt:2: field 'relevance'", "judged 2 here and 1 on line 1")
    (tmp_path / "qrels.txt").write_text("q1 0 d1\n", "utf-8")
    fails(run_cli(*base, f"dataset.qrels={tmp_path / 'qrels.txt'}", cwd=tmp_path),
          "qrels.txt:1", "expected 4 whitespace-separated columns")
    fails(run_cli(*base, f"dataset.qrels={tmp_path / 'none.txt'}", cwd=tmp_path),
          "none.txt", "file not found (dataset.qrels)")
    result = run_cli(*base, cwd=tmp_path)  # dataset.qrels is ??? in conf
    assert result.returncode != 0 and "dataset.qrels" in result.stderr
    assert "Traceback" not in result.stderr
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n", "utf-8")
    (tmp_path / "docs.jsonl").write_text('{"_id": "d2", "text": "x"}\n', "utf-8")
    fails(run_cli(*base, f"dataset.qrels={tmp_path / 'qrels.txt'}",
                  f"dataset.corpus={tmp_path / 'docs.jsonl'}", cwd=tmp_path),
          "run.txt", "query 'q1' retrieves document 'd1', which is not in the corpus")
    (tmp_path / "queries.tsv").write_text("q1 no tab here\n", "utf-8")
    fails(run_cli(*base, f"dataset.qrels={tmp_path / 'qrels.txt'}",
                  f"dataset.queries={tmp_path / 'queries.tsv'}", cwd=tmp_path),
          "queries.tsv:1", "expected query_id<TAB>text")


@pytest.mark.parametrize("level", [1, 2])
def test_the_functions_equal_trec_eval_per_query(tmp_path: Path, level: int) -> None:
    from harness.metrics.retrieval import at_cutoffs, average_precision_at_k, hit_rate_at_k

    _, _, run, qrels = make_files(tmp_path, 11)
    gold = trec_eval(run, qrels, level)
    for q, measured in gold.items():
        ranked, grades = trec_order(run[q]), {d: float(g) for d, g in qrels[q].items()}
        at = at_cutoffs(ranked, grades, KS, level)
        for k in KS:
            assert average_precision_at_k(ranked, grades, k, level) == pytest.approx(
                measured[f"map_cut_{k}"], abs=1e-12)
            assert hit_rate_at_k(ranked, grades, k, level) == measured[f"success_{k}"]
            for ours, theirs in TREC_NAMES.items():
                assert at[f"{ours}_at_{k}"] == pytest.approx(
                    measured[theirs.format(k=k)], abs=1e-12)


def test_files_that_share_no_query_or_hold_nothing(tmp_path: Path) -> None:
    (tmp_path / "run.txt").write_text("q1 Q0 d1 1 2 t\nq2 Q0 d1 1 2 t\n", "utf-8")
    (tmp_path / "qrels.txt").write_text("Q1 0 d1 1\n", "utf-8")
    (tmp_path / "empty.txt").write_text("\n\n", "utf-8")
    base = ("metric=id_ranked", "tracking=none", "dataset=trec")
    fails(run_cli(*base, f"dataset.run={tmp_path / 'run.txt'}",
                  f"dataset.qrels={tmp_path / 'qrels.txt'}", cwd=tmp_path),
          "run.txt: none of its 2 queries is among the 1 judged in",
          "(e.g. 'Q1'; the run's first is 'q1'): the query ids must match")
    fails(run_cli(*base, f"dataset.run={tmp_path / 'empty.txt'}",
                  f"dataset.qrels={tmp_path / 'qrels.txt'}", cwd=tmp_path),
          "empty.txt: holds no ranked document")
    fails(run_cli(*base, f"dataset.run={tmp_path / 'run.txt'}",
                  f"dataset.qrels={tmp_path / 'empty.txt'}", cwd=tmp_path),
          "empty.txt: holds no judgment")


def test_llm_variants_on_a_run_with_queries_corpus_and_answers(tmp_path: Path) -> None:
    from harness.extend import average_precision

    docs = {"d1": "the tower is in Paris", "d2": "bridges cross rivers", "d3": "Paris tower"}
    (tmp_path / "run.txt").write_text("q1 Q0 d2 1 3 t\nq1 Q0 d1 2 2 t\nq1 Q0 d3 3 2 t\n", "utf-8")
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n", "utf-8")
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "where is the tower"}\n')
    (tmp_path / "answers.jsonl").write_text('{"query_id": "q1", "answer": "in Paris"}\n')
    (tmp_path / "docs.jsonl").write_text(
        "".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in docs.items()), "utf-8")
    # the fixture judge's labels: d3 and d1 useful, d2 not
    relevant = {"d1": 1, "d2": 0, "d3": 1}
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(
        {"question": "where is the tower", "context": docs[d], "relevant": r}) + "\n"
        for d, r in relevant.items()), "utf-8")
    result = run_cli("dataset=trec", *(f"dataset.{k}={tmp_path / f}" for k, f in (
        ("run", "run.txt"), ("qrels", "qrels.txt"), ("queries", "queries.jsonl"),
        ("answers", "answers.jsonl"), ("corpus", "docs.jsonl"))),
        "metric=llm_with_reference", "judge=fixture", f"judge.labels={tmp_path / 'labels.jsonl'}",
        "tracking=none", cwd=tmp_path, env={"OPENAI_API_KEY": ""})
    assert result.returncode == 0, result.stderr
    [row] = result.rows()
    ranked = ["d2", "d3", "d1"]  # score 3, then the tie at 2 by id descending
    assert [c["id"] for c in row["chunks"]] == ranked
    verdicts = [relevant[d] for d in ranked]
    assert row["verdicts"] == verdicts
    assert row["score"] == pytest.approx(average_precision(verdicts, 1e-10), abs=1e-12)
    assert result.summary()["dataset"]["queries_with_answer"] == 1
