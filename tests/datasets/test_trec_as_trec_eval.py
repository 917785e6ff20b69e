"""``dataset=trec`` reads and ranks a run as trec_eval does, where that is easy to miss.

- Scores are kept as C ``float`` before ranking, as trec_eval 9.x and pytrec_eval (which
  builds trec_eval 9.0.8) keep them: scores within a float's precision tie, and ties go to
  the greater document id. The gold values are pytrec_eval's, computed here on the same
  runs. ``dataset.score_type=double`` ranks as trec_eval 10.0 (whose ``TEXT_RESULTS.sim``
  is a ``double``): its gold orders are written out from the spec (score descending, then
  ``strcmp`` descending), checked once against trec_eval 10.0 built from source.
- Files trec_eval 10.0 reads: ``#`` comment lines, blank lines, CRLF, text after a run
  line's tag. They score exactly as the same files without them (and so do qrels with a
  blank line or an indented comment, which trec_eval 10.0 calls malformed).
- A fractional grade is truncated as trec_eval's ``atol`` truncates it (``2.5`` is 2); a
  document judged twice is refused, as trec_eval refuses it.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import pytrec_eval  # the test extra: trec_eval 9.0.8 itself, as the reference
from conftest import run_cli
from helpers.errors import fails

MEASURES = {"recip_rank", "ndcg_cut.3,10", "P.3", "map_cut.10", "recall.10"}
#: Our summary key -> pytrec_eval's measure.
OURS = {"mrr": "recip_rank", "ndcg_at_3": "ndcg_cut_3", "ndcg_at_10": "ndcg_cut_10",
        "precision_at_3": "P_3", "map_at_10": "map_cut_10", "recall_at_10": "recall_10"}

#: Scores written as a run file prints them; ``rel`` is the one relevant document.
#: ``float``: the order pytrec_eval / trec_eval 9.x ranks them in; ``double``: trec_eval 10.0.
CASES = {
    # the example: 9 decimals, 3e-7 apart, one float apart at most
    "near_9_decimals": ({"a": "12.345678400", "b": "12.345678100"}, "a",
                        ["b", "a"], ["a", "b"]),
    # 3e-8 apart near 1 (a float's step there is 1.2e-7): a tie
    "near_8_decimals": ({"d1": "1.00000004", "d2": "1.00000001"}, "d1",
                        ["d2", "d1"], ["d1", "d2"]),
    # 1e-7 apart near 0.12 (a float's step there is 7.5e-9): no tie, not rounded to 7 places
    "apart_7_decimals": ({"a": "0.1234568", "b": "0.1234567"}, "a", ["a", "b"], ["a", "b"]),
    # exact ties over four documents: strcmp descending, so d3 > d2 > d10 > d1
    "exact_tie_four": ({"d1": "5.0", "d10": "5", "d2": "5.000", "d3": "5e0", "z": "4.9"},
                       "d10", ["d3", "d2", "d10", "d1", "z"], ["d3", "d2", "d10", "d1", "z"]),
    # three within a float of each other: one tie of three
    "near_tie_three": ({"x": "7.00000001", "y": "7.00000003", "z": "7.0"}, "x",
                       ["z", "y", "x"], ["y", "x", "z"]),
    "negative": ({"a": "-1.00000001", "b": "-1.00000004", "c": "-3", "d": "-0.5"}, "a",
                 ["d", "b", "a", "c"], ["d", "a", "b", "c"]),
    # beyond a float's range (3.4e38) both are infinite, and tie
    "huge": ({"a": "1e40", "b": "1e39", "c": "3.3e38"}, "a", ["b", "a", "c"], ["a", "b", "c"]),
    "huge_negative": ({"a": "-1e39", "b": "-1e40", "c": "0"}, "a",
                      ["c", "b", "a"], ["c", "a", "b"]),
    # below a float's smallest (1.4e-45) a score is 0
    "tiny": ({"a": "1e-46", "b": "0.0"}, "a", ["b", "a"], ["a", "b"]),
}


def write_case_files(where: Path) -> tuple[Path, Path]:
    """One query per case, file order shuffled and the rank column lying."""
    rng = random.Random(7)
    lines = []
    for q, (scores, _, _, _) in CASES.items():
        docs = list(scores.items())
        rng.shuffle(docs)
        lines += [f"{q} Q0 {d} {rank} {s} tag" for rank, (d, s) in enumerate(docs, 1)]
    (where / "run.txt").write_text("\n".join(lines) + "\n", "utf-8")
    (where / "qrels.txt").write_text(
        "".join(f"{q} 0 {rel} 1\n" for q, (_, rel, _, _) in CASES.items()), "utf-8")
    return where / "run.txt", where / "qrels.txt"


def gold(run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]],
         level: int = 1) -> dict[str, dict[str, float]]:
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, MEASURES, relevance_level=level)
    return dict(evaluator.evaluate(run))


def trec(where: Path, *extra: str) -> dict[str, dict[str, object]]:
    result = run_cli("dataset=trec", f"dataset.run={where / 'run.txt'}",
                     f"dataset.qrels={where / 'qrels.txt'}", "metric=id_ranked",
                     "run.retrieval_ks=[3,10]", "run.retrieval_beyond_depth=true",
                     "tracking=none", *extra, cwd=where)
    assert result.returncode == 0, result.stderr
    rows = {str(r["id"]): r for r in result.rows()}
    rows["__summary__"] = result.summary()
    return rows


def test_scores_are_kept_as_float_as_pytrec_eval_keeps_them(tmp_path: Path) -> None:
    write_case_files(tmp_path)
    rows = trec(tmp_path)
    measured = gold({q: {d: float(s) for d, s in scores.items()}
                     for q, (scores, _, _, _) in CASES.items()},
                    {q: {rel: 1} for q, (_, rel, _, _) in CASES.items()})
    for q, (_, rel, order, _) in CASES.items():
        assert rows[q]["retrieved_context_ids"] == order, q
        assert rows[q]["mrr"] == measured[q]["recip_rank"] == 1 / (order.index(rel) + 1), q
    assert rows["near_9_decimals"]["mrr"] == 0.5  # the issue's: not 1.0
    described = rows["__summary__"]["dataset"]
    assert described["score_type"] == "float"  # type: ignore[index]


def test_double_ranks_as_trec_eval_10(tmp_path: Path) -> None:
    write_case_files(tmp_path)
    rows = trec(tmp_path, "dataset.score_type=double")
    for q, (_, rel, _, order) in CASES.items():
        assert rows[q]["retrieved_context_ids"] == order, q
        assert rows[q]["mrr"] == 1 / (order.index(rel) + 1), q


def test_a_run_printed_to_9_decimals_scores_as_pytrec_eval(tmp_path: Path) -> None:
    """A BM25-like run whose scores crowd within a float's step: every measure, every query."""
    rng = random.Random(31)
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    lines = []
    for q in range(40):
        qid, base = f"q{q}", rng.uniform(5, 30)
        docs = rng.sample([f"doc{i}" for i in range(60)], 12)
        texts = {d: f"{base + rng.randrange(0, 4) * 1e-7 + rng.random() * 1e-6:.9f}"
                 for d in docs}
        run[qid] = {d: float(t) for d, t in texts.items()}
        lines += [f"{qid} Q0 {d} {r} {t} bm25" for r, (d, t) in enumerate(texts.items(), 1)]
        qrels[qid] = {d: rng.choice([0, 1, 2]) for d in rng.sample(docs, 4)}
    (tmp_path / "run.txt").write_text("\n".join(lines) + "\n", "utf-8")
    (tmp_path / "qrels.txt").write_text("".join(
        f"{q} 0 {d} {g}\n" for q, judged in qrels.items() for d, g in judged.items()), "utf-8")
    rows = trec(tmp_path)
    measured = gold(run, qrels)
    doubles = {q: sorted(sorted(s, reverse=True), key=lambda d, s=s: -s[d])
               for q, s in run.items()}
    assert sum(rows[q]["retrieved_context_ids"] != doubles[q] for q in run) >= 10  # ties bite
    summary = rows["__summary__"]["retrieval"]  # type: ignore[index]
    for ours, theirs in OURS.items():
        for q in run:
            assert rows[q][ours] == pytest.approx(measured[q][theirs], abs=1e-12), (q, ours)
        want = sum(measured[q][theirs] for q in run) / len(run)
        assert summary[ours] == pytest.approx(want, abs=1e-12), ours


PLAIN_RUN = "q1 Q0 a 1 3 t\nq1 Q0 b 2 2 t\nq1 Q0 c 3 1 t\nq2 Q0 a 1 1 t\nq2 Q0 c 2 2 t\n"
PLAIN_QRELS = "q1 0 b 1\nq1 0 c 2\nq2 0 a 1\nq2 0 d 1\n"
#: What trec_eval 10.0 reads as PLAIN_RUN (checked with it): comments (at column 0,
#: indented, one after another), blank lines, CRLF, tabs, text after the tag.
DECORATED_RUN = ("# run made by bm25\n# k1=0.9 b=0.4\nq1 Q0 a 1 3 t some notes here\n\n"
                 "   # indented comment\r\nq1\tQ0\tb\t2\t2\tt\r\n  \nq1 Q0 c 3 1 t x\n"
                 "q2 Q0 a 1 1 t\nq2 Q0 c 2 2 t")
#: What trec_eval 10.0 reads as PLAIN_QRELS (checked with it), as its
#: ``test/qrels.test.with-comments``: single comment lines at column 0, CRLF.
COMMENTED_QRELS = "# TREC qrels\nq1 0 b 1\r\n# judged by A\nq1 0 c 2\nq2 0 a 1\n# last\nq2 0 d 1\n"
#: Qrels lines trec_eval 10.0 calls malformed and we skip, as its runs skip them: a blank
#: line, an indented comment, a second comment line in a row (trec_eval reads it as a
#: judgment of query ``#``, or refuses it).
LENIENT_QRELS = "# TREC qrels\n#\n\nq1 0 b 1\r\nq1 0 c 2\n  # judged by A\nq2 0 a 1\nq2 0 d 1\n"


@pytest.mark.parametrize(("run", "qrels"), [(DECORATED_RUN, PLAIN_QRELS),
                                            (PLAIN_RUN, COMMENTED_QRELS),
                                            (PLAIN_RUN, LENIENT_QRELS),
                                            (DECORATED_RUN, LENIENT_QRELS)])
def test_comments_blank_lines_crlf_and_trailing_text_score_as_without(
        tmp_path: Path, run: str, qrels: str) -> None:
    (tmp_path / "run.txt").write_bytes(run.encode())
    (tmp_path / "qrels.txt").write_bytes(qrels.encode())
    rows = trec(tmp_path)
    measured = gold({"q1": {"a": 3, "b": 2, "c": 1}, "q2": {"a": 1, "c": 2}},
                    {"q1": {"b": 1, "c": 2}, "q2": {"a": 1, "d": 1}})
    assert rows["q1"]["retrieved_context_ids"] == ["a", "b", "c"]
    for q in ("q1", "q2"):
        for ours, theirs in OURS.items():
            assert rows[q][ours] == pytest.approx(measured[q][theirs], abs=1e-12), (q, ours)
    assert rows["q2"]["mrr"] == 0.5
    assert rows["__summary__"]["dataset"]["run_tags"] == ["t"]  # type: ignore[index]


def test_a_hash_inside_an_id_is_data(tmp_path: Path) -> None:
    (tmp_path / "run.txt").write_text("q1 Q0 CR#93E-1860 1 2 t\nq1 Q0 doc#2 2 1 t\n", "utf-8")
    (tmp_path / "qrels.txt").write_text("q1 0 doc#2 1\n", "utf-8")
    rows = trec(tmp_path)
    assert rows["q1"]["retrieved_context_ids"] == ["CR#93E-1860", "doc#2"]
    assert rows["q1"]["mrr"] == 0.5


def test_fractional_grades_are_truncated_as_trec_eval_does(tmp_path: Path) -> None:
    (tmp_path / "run.txt").write_text("q1 Q0 a 1 4 t\nq1 Q0 b 2 3 t\nq1 Q0 c 3 2 t\n"
                                      "q1 Q0 d 4 1 t\n", "utf-8")
    (tmp_path / "qrels.txt").write_text("q1 0 a 0.5\nq1 0 b 1.7\nq1 0 c 3.0\nq1 0 d 2.5\n"
                                        "q1 0 e +2\n", "utf-8")
    rows = trec(tmp_path, "dataset.min_grade=2")
    measured = gold({"q1": {"a": 4, "b": 3, "c": 2, "d": 1}},
                    {"q1": {"a": 0, "b": 1, "c": 3, "d": 2, "e": 2}}, level=2)
    for ours, theirs in OURS.items():
        assert rows["q1"][ours] == pytest.approx(measured["q1"][theirs], abs=1e-12), ours
    assert rows["q1"]["mrr"] == 1 / 3  # a (0.5 -> 0) and b (1.7 -> 1) are below 2
    described = rows["__summary__"]["dataset"]
    assert described["grades"] == {"0": 1, "1": 1, "2": 2, "3": 1}  # type: ignore[index]
    assert described["fractional_grades_truncated"] == 3  # type: ignore[index]
    assert described["fractional_grades_lines"] == [1, 2, 4]  # type: ignore[index]


REFUSED = [
    ("run.txt", "q1 Q0 d1 1 2 t\nq1 Q0 d2 2 1 t\nq1 Q0 d1 3 0 t\n",
     ["run.txt:3: field 'doc_id'", "lists document 'd1' again (first on line 1)", "keep one"]),
    ("run.txt", "# a comment\nq1 Q0 d1 1 2\n",
     ["run.txt:2", "expected 6 whitespace-separated columns", "got 5"]),
    ("qrels.txt", "q1 0 d1 1\n# again:\nq1 0 d1 1\n",
     ["qrels.txt:3: field 'doc_id'", "document 'd1' judged again (first on line 1)",
      "trec_eval refuses a document judged twice"]),
    ("qrels.txt", "q1 0 d1 1\nq1 0 d1 1.5\n",
     ["qrels.txt:2: field 'doc_id'", "judged again (first on line 1)"]),
    ("qrels.txt", "q1 0 d1 1 extra\n",
     ["qrels.txt:1", "expected 4 whitespace-separated columns", "got 5"]),
    ("qrels.txt", "q1 0 d1 1e3\n",
     ["qrels.txt:1: field 'relevance'", "expected an integer grade, got '1e3'"]),
    ("qrels.txt", "q1 0 d1 nan\n", ["qrels.txt:1: field 'relevance'", "integer grade"]),
    ("qrels.txt", "q1 0 d1 high\n", ["qrels.txt:1: field 'relevance'", "integer grade"]),
    ("qrels.txt", "# only comments\n\n#\n", ["qrels.txt: holds no judgment"]),
]


@pytest.mark.parametrize(("name", "text", "fragments"), REFUSED)
def test_what_trec_eval_refuses_is_one_line(tmp_path: Path, name: str, text: str,
                                            fragments: list[str]) -> None:
    files = {"run.txt": "q1 Q0 d1 1 2 t\n", "qrels.txt": "q1 0 d1 1\n", name: text}
    for file, content in files.items():
        (tmp_path / file).write_text(content, "utf-8")
    fails(run_cli("dataset=trec", f"dataset.run={tmp_path / 'run.txt'}",
                  f"dataset.qrels={tmp_path / 'qrels.txt'}", "metric=id_ranked",
                  "tracking=none", cwd=tmp_path), *fragments)


def test_an_unknown_score_type_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "run.txt").write_text("q1 Q0 d1 1 2 t\n", "utf-8")
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n", "utf-8")
    fails(run_cli("dataset=trec", f"dataset.run={tmp_path / 'run.txt'}",
                  f"dataset.qrels={tmp_path / 'qrels.txt'}", "dataset.score_type=float32",
                  "metric=id_ranked", "tracking=none", cwd=tmp_path),
          "dataset.score_type", "'float32'")
