"""The relevant documents a row lists as missed keep their own text when the qrels also
judge non-relevant documents (BEIR test sets, graded TREC qrels): the dataset's reference
texts are those of the relevant documents only, so they are matched to ids by the same
relevance or looked up in the corpus by id, never by position among all judged ids; a
document the corpus lacks has no text, and its neighbours keep theirs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from harness.core.types import Corpus, Document, RagSample
from harness.run.missed import CorpusTexts, missed_relevant

TEXT = {d: f"text of {d}" for d in "abcdef"}


def _sample(grades: dict[str, float], min_grade: float, in_corpus: str = "abcdef",
            retrieved: tuple[str, ...] = ("x",)) -> RagSample:
    """A sample as the BEIR and TREC datasets make it: every judged id with its grade, the
    texts of those with grade >= ``min_grade`` that are in the corpus, in qrels order."""
    return RagSample(
        id="q", retrieved_context_ids=retrieved,
        reference_context_ids=tuple(grades), reference_context_grades=tuple(grades.values()),
        reference_contexts=tuple(TEXT[d] for d, g in grades.items()
                                 if g >= min_grade and d in in_corpus))


def _corpus(docs: str) -> CorpusTexts:
    return CorpusTexts(lambda: Corpus([Document(d, "", TEXT[d]) for d in docs], "k"))


def _shown(missed: list[dict[str, object]]) -> list[tuple[object, object]]:
    return [(m["id"], m.get("text")) for m in missed]


@pytest.mark.parametrize(("grades", "min_grade", "expected"), [
    # binary qrels with 0-grade rows (BEIR test sets): 2 texts for 4 ids
    ({"a": 1, "b": 0, "c": 1, "d": 0}, 1, [("a", TEXT["a"]), ("c", TEXT["c"])]),
    # graded qrels (TREC DL, DBpedia): best grade first, each with its own text
    ({"a": 1, "b": 0, "c": 2, "d": 1}, 1, [("c", TEXT["c"]), ("a", TEXT["a"]),
                                          ("d", TEXT["d"])]),
    # graded with min_grade 2: grade 1 is not relevant, nor listed
    ({"a": 2, "b": 1, "c": 3, "d": 0}, 2, [("c", TEXT["c"]), ("a", TEXT["a"])]),
])
def test_texts_follow_their_ids_by_relevance(grades: dict[str, float], min_grade: float,
                                             expected: list[tuple[str, str]]) -> None:
    sample = _sample(grades, min_grade)
    assert _shown(missed_relevant(sample, min_grade, None)) == expected
    assert _shown(missed_relevant(sample, min_grade, None, _corpus("abcdef"))) == expected


def test_a_document_the_corpus_lacks_has_no_text_and_its_neighbours_keep_theirs() -> None:
    # c is missing: texts [a, d] for relevant [a, c, d]; by position c would get d's text
    grades = {"a": 2, "b": 0, "c": 2, "d": 1}
    sample = _sample(grades, 1, in_corpus="abd")
    assert _shown(missed_relevant(sample, 1, None, _corpus("abd"))) == [
        ("a", TEXT["a"]), ("c", None), ("d", TEXT["d"])]
    # without the corpus it cannot be told which text is whose: none is shown
    assert _shown(missed_relevant(sample, 1, None)) == [("a", None), ("c", None), ("d", None)]


def test_a_run_min_grade_above_the_datasets_never_shifts_texts() -> None:
    """Texts of grade >= 1 in the corpus ([a, c]: b is missing); the run counts grade >= 2
    ([b, c]): as many ids as texts, but not the same ids."""
    sample = _sample({"a": 1, "b": 2, "c": 2}, 1, in_corpus="ac")
    assert _shown(missed_relevant(sample, 2, None, _corpus("ac"))) == [
        ("b", None), ("c", TEXT["c"])]


def test_parallel_texts_and_retrieved_documents() -> None:
    """Texts parallel to the ids (a records file) are taken as they are; a retrieved
    relevant document is not missed; row_text_chars trims and 0 drops the texts."""
    sample = RagSample(id="q", retrieved_context_ids=("a",), reference_context_ids=("a", "b"),
                       reference_contexts=("first text", "second text"))
    assert _shown(missed_relevant(sample, 1, None)) == [("b", "second text")]
    assert _shown(missed_relevant(sample, 1, 4)) == [("b", "seco…")]
    assert _shown(missed_relevant(sample, 1, 0)) == [("b", None)]


def _beir(tmp_path: Path) -> Path:
    """Two queries, each with a relevant document no word of the query retrieves, judged
    non-relevant documents, and (q2) a relevant document the corpus lacks."""
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    docs = {"d1": "apples grow on trees", "d2": "apple pie recipe", "d3": "bananas are yellow",
            "d4": "banana bread", "d5": "cherries are red", "d6": "weather report"}
    (folder / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": d, "title": "", "text": t}) + "\n" for d, t in docs.items()), "utf-8")
    (folder / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "apple pie"}) + "\n"
        + json.dumps({"_id": "q2", "text": "banana bread"}) + "\n", "utf-8")
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n"
        "q1\td2\t1\nq1\td6\t0\nq1\td5\t1\n"
        "q2\td4\t1\nq2\td6\t0\nq2\tgone\t1\nq2\td1\t1\n", "utf-8")
    return folder


def test_samples_and_report_show_each_missed_documents_own_text(tmp_path: Path) -> None:
    result = run_cli("dataset=beir", f"dataset.path={_beir(tmp_path)}", "retriever=bm25",
                     "retriever.top_k=1", "metric=id_ranked", "tracking=none",
                     "run.report=true", "run.max_unscored_frac=1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    missed = {r["id"]: [(m["id"], m.get("text")) for m in r.get("missed_relevant", [])]
              for r in result.rows()}
    assert missed == {"q1": [("d5", "cherries are red")],
                      "q2": [("gone", None), ("d1", "apples grow on trees")]}
    report = (result.out_dir / "report.html").read_text("utf-8")
    assert "cherries are red" in report and "apples grow on trees" in report
