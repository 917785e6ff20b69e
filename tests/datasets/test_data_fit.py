"""Valid data that does not fit the run ends in a refusal or a counted warning, never in a
plausible score (issue 31, class 1): questions under a column the harness does not read,
reference ids written otherwise than the corpus's, judged documents the corpus lacks, a
retrieval whose ids never meet the reference ids.

Each case is a user's own tiny corpus and question file, run as the CLI runs them."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import run_cli
from helpers.errors import fails

#: Ten documents whose ids are dotted paths, as a user's API docs might be keyed.
DOCS = [{"_id": f"os.path.f{i}", "text": f"topic{i} function number {i} of the path module"}
        for i in range(10)]


def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in DOCS), "utf-8")
    return path


def write(tmp_path: Path, rows: list[dict[str, Any]], name: str = "q.jsonl") -> Path:
    path = tmp_path / name
    if name.endswith(".csv"):
        with path.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows({k: json.dumps(v) if isinstance(v, list) else v
                              for k, v in r.items()} for r in rows)
    elif name.endswith(".parquet"):
        pq.write_table(pa.Table.from_pylist(rows), path)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def bm25(tmp_path: Path, questions: Path, *more: str) -> Any:
    kind = {".csv": "csv", ".parquet": "parquet"}.get(questions.suffix, "jsonl")
    return run_cli(f"dataset={kind}", f"dataset.path={questions}",
                   f"dataset.corpus={corpus(tmp_path)}", "retriever=bm25", "retriever.cache=false",
                   "metric=id_ranked", "tracking=none", *more, cwd=tmp_path)


# -- questions under a column the harness does not read -------------------------------------

@pytest.mark.parametrize("name", ["q.jsonl", "q.csv", "q.parquet"])
def test_questions_under_an_unknown_column_are_refused_naming_the_mapping(
        tmp_path: Path, name: str) -> None:
    rows = [{"id": f"q{i}", "query": f"topic{i} path", "reference_context_ids": [f"os.path.f{i}"]}
            for i in range(4)]
    line = fails(bm25(tmp_path, write(tmp_path, rows, name)),
                 "field 'user_input'", "none of the first 4 records has a question",
                 "retriever bm25", "dataset.fields.user_input=query")
    assert "id, query, reference_context_ids" in line  # the columns the file has


def test_a_blank_question_column_is_refused_as_holding_no_text(tmp_path: Path) -> None:
    rows = [{"id": "a", "user_input": "  ", "reference_context_ids": ["os.path.f1"]},
            {"id": "b", "user_input": "", "reference_context_ids": ["os.path.f2"]}]
    fails(bm25(tmp_path, write(tmp_path, rows)), "its user_input column holds no text",
          "dataset.fields.user_input=COLUMN")


def test_a_mapping_to_a_column_of_blanks_is_named(tmp_path: Path) -> None:
    rows = [{"id": "a", "ask": "", "query": "topic1", "reference_context_ids": ["os.path.f1"]}]
    fails(bm25(tmp_path, write(tmp_path, rows), "dataset.fields.user_input=ask"),
          "field 'ask'", "dataset.fields.user_input=ask names a column with no text",
          "dataset.fields.user_input=query")


def test_some_samples_without_a_question_are_counted_aloud(tmp_path: Path) -> None:
    rows = [{"id": f"q{i}", "user_input": "" if i % 3 == 0 else f"topic{i}",
             "reference_context_ids": [f"os.path.f{i}"]} for i in range(9)]
    result = bm25(tmp_path, write(tmp_path, rows), "run.retrieval_ks=[]")
    assert result.returncode == 0, result.stderr
    assert ("warning: 3 of 9 samples of " in result.stderr
            and "have no question (user_input) for retriever bm25" in result.stderr)
    # the six asked find their own document first; the three unasked retrieve nothing
    scores = {r["id"]: r["score"] for r in result.rows()}
    assert scores == {f"q{i}": 0.0 if i % 3 == 0 else 1.0 for i in range(9)}


def test_a_precomputed_retrieval_needs_no_question(tmp_path: Path) -> None:
    rows = [{"id": "a", "retrieved_context_ids": ["x", "y"], "reference_context_ids": ["y"]}]
    result = run_cli("dataset=jsonl", f"dataset.path={write(tmp_path, rows)}", "metric=id_ranked",
                     "tracking=none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.summary()["mean"] == 0.5  # the relevant id at rank 2: precision 1/2
    assert "warning" not in result.stderr


# -- reference ids written otherwise than the corpus's ------------------------------------

def test_no_reference_id_in_the_corpus_is_refused_with_one_of_each(tmp_path: Path) -> None:
    rows = [{"id": f"q{i}", "user_input": f"topic{i}", "reference_context_ids": [f"os/path/f{i}"]}
            for i in range(5)]
    fails(bm25(tmp_path, write(tmp_path, rows)), "field 'reference_context_ids'",
          "none of the 5 reference ids is a document id of the corpus",
          "a reference id: 'os/path/f0'; a corpus id: 'os.path.f0'")


def test_the_refusal_names_the_mapped_column(tmp_path: Path) -> None:
    rows = [{"id": "q", "user_input": "topic1", "gold": ["OS.PATH.F1"]}]
    fails(bm25(tmp_path, write(tmp_path, rows), "dataset.fields.reference_context_ids=gold"),
          "field 'gold'", "none of the 1 reference ids")


def test_a_third_missing_is_a_counted_warning_on_the_console(tmp_path: Path) -> None:
    rows = [{"id": f"q{i}", "user_input": f"topic{i}",
             "reference_context_ids": [f"os/path/f{i}" if i % 3 == 0 else f"os.path.f{i}"]}
            for i in range(9)]
    result = bm25(tmp_path, write(tmp_path, rows), "run.retrieval_ks=[]")
    assert result.returncode == 0, result.stderr
    warning = [x for x in result.stdout.splitlines() if x.strip().startswith("warning")]
    assert len(warning) == 1
    assert "3 of 9 reference ids are not in " in warning[0]
    assert "(e.g. 'os/path/f0')" in warning[0]
    d = result.summary()["dataset"]
    assert (d["reference_ids"], d["reference_ids_missing_from_corpus"]) == (9, 3)
    assert result.summary()["mean"] == pytest.approx(6 / 9)  # the 6 found first, 3 never


def test_all_reference_ids_present_says_nothing(tmp_path: Path) -> None:
    rows = [{"id": f"q{i}", "user_input": f"topic{i}", "reference_context_ids": [f"os.path.f{i}"]}
            for i in range(3)]
    result = bm25(tmp_path, write(tmp_path, rows))
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stdout + result.stderr
    assert result.summary()["dataset"]["reference_ids_missing_from_corpus"] == 0


# -- a retrieval whose ids never meet the reference ids -----------------------------------

def test_retrieved_ids_outside_the_reference_id_space_are_said(tmp_path: Path) -> None:
    rows = [{"id": f"q{i}", "retrieved_context_ids": [f"D{i}", f"D{i + 1}"],
             "reference_context_ids": [f"doc{i}"]} for i in range(6)]
    result = run_cli("dataset=jsonl", f"dataset.path={write(tmp_path, rows)}", "metric=id_ranked",
                     "tracking=none", "run.retrieval_ks=[]", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert ("none of the 6 queries retrieved any of its reference (judged) ids "
            "(e.g. retrieved 'D0', reference 'doc0')") in result.stdout
    d = result.summary()["dataset"]
    assert (d["queries_with_ids"], d["queries_retrieving_a_reference_id"]) == (6, 0)


def test_one_query_meeting_its_reference_ids_silences_it(tmp_path: Path) -> None:
    rows = [{"id": f"q{i}", "retrieved_context_ids": [f"D{i}"],
             "reference_context_ids": [f"D{i}" if i == 5 else f"doc{i}"]} for i in range(6)]
    result = run_cli("dataset=jsonl", f"dataset.path={write(tmp_path, rows)}", "metric=id_ranked",
                     "tracking=none", "run.retrieval_ks=[]", "run.max_unscored_frac=1",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stdout
    assert result.summary()["dataset"]["queries_retrieving_a_reference_id"] == 1
    assert result.summary()["mean"] == pytest.approx(1 / 6)


def test_a_trec_run_outside_the_qrels_id_space_is_said(tmp_path: Path) -> None:
    run = tmp_path / "run.txt"
    qrels = tmp_path / "qrels.txt"
    run.write_text("".join(f"{q} Q0 D{q}{r} {r} {10 - r} sys\n" for q in range(1, 7)
                           for r in range(1, 4)), "utf-8")
    qrels.write_text("".join(f"{q} 0 doc-{q} 1\n" for q in range(1, 7)), "utf-8")
    result = run_cli("dataset=trec", f"dataset.run={run}", f"dataset.qrels={qrels}",
                     "metric=id_ranked", "tracking=none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "none of the 6 queries retrieved any of its reference (judged) ids" in result.stdout


# -- BEIR: qrels that judge documents the corpus lacks -----------------------------------

def beir(tmp_path: Path, judged: list[str]) -> Path:
    root = tmp_path / "beir"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in DOCS), "utf-8")
    (root / "queries.jsonl").write_text("".join(
        json.dumps({"_id": f"q{i}", "text": f"topic{i}"}) + "\n" for i in range(len(judged))),
        "utf-8")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"q{i}\t{d}\t1\n" for i, d in enumerate(judged)), "utf-8")
    return root


def test_beir_qrels_judging_no_corpus_document_are_refused(tmp_path: Path) -> None:
    root = beir(tmp_path, [f"os/path/f{i}" for i in range(4)])
    fails(run_cli("dataset=beir", f"dataset.path={root}", "retriever=bm25",
                  "retriever.cache=false", "metric=id_ranked", "tracking=none", cwd=tmp_path),
          "qrels/test.tsv", "field 'corpus-id'", "none of the 4 documents it judges",
          "a judged id: 'os/path/f0'; a corpus id: 'os.path.f0'")


def test_beir_qrels_judging_some_missing_documents_warn(tmp_path: Path) -> None:
    root = beir(tmp_path, ["os.path.f0", "os.path.f1", "gone"])
    result = run_cli("dataset=beir", f"dataset.path={root}", "retriever=bm25",
                     "retriever.cache=false", "metric=id_ranked", "tracking=none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "1 documents judged in the qrels are not in the corpus (e.g. 'gone')" in result.stdout


def test_trec_qrels_naming_documents_the_corpus_lacks_are_counted(tmp_path: Path) -> None:
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_text("".join(f"{q} Q0 os.path.f{q} 1 2.0 sys\n" for q in range(1, 4)), "utf-8")
    qrels.write_text("1 0 os.path.f1 1\n2 0 os/path/f2 1\n3 0 os.path.f3 1\n3 0 gone 1\n",
                     "utf-8")
    result = run_cli("dataset=trec", f"dataset.run={run}", f"dataset.qrels={qrels}",
                     f"dataset.corpus={corpus(tmp_path)}", "metric=id_ranked", "tracking=none",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    d = result.summary()["dataset"]
    assert (d["reference_ids"], d["reference_ids_missing_from_corpus"]) == (4, 2)
    assert "2 of 4 reference ids are not in " in result.stdout


@pytest.mark.slow
def test_sharded_runs_count_ids_as_one_process_does(tmp_path: Path) -> None:
    rows = [{"id": f"q{i}", "retrieved_context_ids": [f"D{i}"],
             "reference_context_ids": [f"D{i}" if i % 4 == 0 else f"doc{i}"]} for i in range(12)]
    data = write(tmp_path, rows)
    args = ("dataset=jsonl", f"dataset.path={data}", "metric=id_ranked", "tracking=none",
            "run.retrieval_ks=[]", "run.max_unscored_frac=1")
    one, sharded = run_cli(*args, cwd=tmp_path), run_cli(*args, "run.shards=3", cwd=tmp_path)
    assert one.returncode == sharded.returncode == 0, sharded.stderr
    for result in (one, sharded):
        d = result.summary()["dataset"]
        assert (d["queries_with_ids"], d["queries_retrieving_a_reference_id"]) == (12, 3)
