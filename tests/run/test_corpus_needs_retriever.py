"""A dataset with a corpus and no retrieved lists needs a retriever that searches the corpus.

``python -m harness dataset=scifact_mini`` (the default retriever, ``precomputed``, searches
nothing) used to score 0 of 50, exit 3, and advise ``dataset.fields.retrieved_context_ids=
COLUMN``, a setting the dataset does not even have. Such a run is now refused before any
work (exit 2, one line naming ``retriever=``), for every dataset that has a corpus and whose
first samples bring no retrieved lists: the bundled SciFact subset, a BEIR folder, an
ir_datasets collection, a JSONL file with ``dataset.corpus``. A dataset that brings its own
retrieved lists beside a corpus still runs with ``precomputed``; the advice a run that
scored nothing gives names a setting the dataset has (``harness.run.advice``).
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from pathlib import Path

import pytest
from conftest import run_cli

from harness.run.advice import corpus_fix, field_fix

DOCS = {"d1": "Glucose is made in the chloroplast.", "d2": "Plants need water.",
        "d3": "Mitochondria make ATP.", "d4": "Paris is in France."}
QUERIES = {"q1": "How do plants make glucose?", "q2": "What makes ATP?"}
QRELS = [("q1", "d1"), ("q2", "d3")]
LINE = ("has a corpus to search (4 documents) but no retrieved lists ({read} no "
        "retrieved_context_ids or retrieved_contexts), and retriever=precomputed searches "
        "nothing: choose a retriever that searches the corpus, e.g. retriever=bm25 (or "
        "retriever=dense, hybrid, custom)")


def beir_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": d, "title": "", "text": t}) + "\n" for d, t in DOCS.items()))
    (folder / "queries.jsonl").write_text("".join(
        json.dumps({"_id": q, "text": t}) + "\n" for q, t in QUERIES.items()))
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in QRELS))
    return folder


def jsonl(tmp_path: Path, retrieved: bool) -> tuple[str, str]:
    """Questions with reference ids (and retrieved ids), and the documents beside them."""
    data, docs = tmp_path / "q.jsonl", tmp_path / "docs.jsonl"
    data.write_text("".join(json.dumps({
        "id": q, "user_input": t, "reference_context_ids": [d],
        **({"retrieved_context_ids": ["d2", d]} if retrieved else {})}) + "\n"
        for (q, t), (_, d) in zip(QUERIES.items(), QRELS, strict=True)))
    docs.write_text("".join(json.dumps({"_id": d, "text": t}) + "\n" for d, t in DOCS.items()))
    return str(data), str(docs)


def refused(result: object, source: str, read: str) -> None:
    assert result.returncode == 2, result.stderr  # type: ignore[attr-defined]
    lines = [x for x in result.stderr.splitlines() if x.strip()]  # type: ignore[attr-defined]
    assert lines == [f"error: dataset {source} " + LINE.format(read=read)]
    assert not (result.out_dir / "samples.jsonl").exists()  # type: ignore[attr-defined]
    assert not (result.out_dir / "samples.jsonl.partial").exists()  # type: ignore[attr-defined]


@pytest.mark.parametrize("metric", ["metric=id_based", "metric=[id_ranked,non_llm]",
                                    "metric=llm_with_reference"])
def test_the_bundled_scifact_subset_alone_names_a_retriever_before_any_work(
        tmp_path: Path, metric: str) -> None:
    result = run_cli("dataset=scifact_mini", metric, "judge=fixture", "tracking=none",
                     cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    [line] = [x for x in result.stderr.splitlines() if x.strip()]
    assert line.startswith("error: dataset ") and "scifact_mini has a corpus to search (236 " \
        "documents) but no retrieved lists" in line
    assert "retriever=bm25" in line and "dataset.fields" not in line
    assert not (result.out_dir / "samples.jsonl").exists()


def test_a_sharded_run_is_refused_before_its_workers_start(tmp_path: Path) -> None:
    folder = beir_folder(tmp_path)
    result = run_cli("dataset=beir", f"dataset.path={folder}", "run.shards=2",
                     "tracking=none", cwd=tmp_path)
    refused(result, str(folder), "its first 2 samples bring")  # no "shard 2 of 2: " first
    assert not (result.out_dir / ".shards").exists()


def test_a_beir_folder_without_a_retriever_is_refused(tmp_path: Path) -> None:
    folder = beir_folder(tmp_path)
    result = run_cli("dataset=beir", f"dataset.path={folder}", "tracking=none", cwd=tmp_path)
    refused(result, str(folder), "its first 2 samples bring")


def test_a_jsonl_file_with_documents_and_no_retrieved_lists_is_refused(tmp_path: Path) -> None:
    data, docs = jsonl(tmp_path, retrieved=False)
    result = run_cli("dataset=jsonl", f"dataset.path={data}", f"dataset.corpus={docs}",
                     "run.limit=1", "tracking=none", cwd=tmp_path)
    refused(result, data, "its sample brings")


def test_an_ir_datasets_collection_without_a_retriever_is_refused(tmp_path: Path) -> None:
    os.environ.setdefault("IR_DATASETS_HOME", tempfile.mkdtemp(prefix="harness-tests-irds-"))
    ir_datasets = pytest.importorskip("ir_datasets")
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.datasets.beir import BeirTitleDoc
    from ir_datasets.formats import GenericQuery, TrecQrels, TsvDocs, TsvQueries
    from ir_datasets.util import LocalDownload

    (tmp_path / "docs.tsv").write_text("".join(f"{d}\t{t}\t\n" for d, t in DOCS.items()))
    (tmp_path / "queries.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in QUERIES.items()))
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 {d} 1\n" for q, d in QRELS))
    name = f"harness-tests/{uuid.uuid4().hex[:8]}"
    ir_datasets.registry.register(name, Dataset(
        TsvDocs(LocalDownload(tmp_path / "docs.tsv"), doc_cls=BeirTitleDoc),
        TsvQueries(LocalDownload(tmp_path / "queries.tsv"), query_cls=GenericQuery),
        TrecQrels(LocalDownload(tmp_path / "qrels.txt"), {})))
    result = run_cli("dataset=ir_datasets", f"dataset.name={name}", "tracking=none",
                     cwd=tmp_path)
    refused(result, f"ir_datasets:{name}", "its first 2 samples bring")


def test_documents_beside_retrieved_lists_still_run_with_the_retrieval_they_hold(
        tmp_path: Path) -> None:
    data, docs = jsonl(tmp_path, retrieved=True)
    result = run_cli("dataset=jsonl", f"dataset.path={data}", f"dataset.corpus={docs}",
                     "metric=id_ranked", "tracking=none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # each query retrieved d2 then its one relevant document: AP = 1/2 (by hand)
    assert result.summary()["mean"] == pytest.approx(0.5, abs=1e-9)


@pytest.mark.slow
def test_with_a_retriever_the_bundled_subset_runs(tmp_path: Path) -> None:
    result = run_cli("dataset=scifact_mini", "retriever=bm25", "dataset.limit=5",
                     "metric=id_ranked", "tracking=none", "run.report=false", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.summary()["n_scored"] == 5


@pytest.mark.parametrize(("kind", "field", "corpus", "says", "never"), [
    ("jsonl", "retrieved_context_ids", False, "dataset.fields.retrieved_context_ids=COLUMN, "
     "or give documents to search with dataset.corpus=FILE", None),
    ("csv", "reference_contexts", True, "dataset.fields.reference_contexts=COLUMN",
     "dataset.corpus"),
    ("beir", "reference", True, "dataset.answers=FILE", "dataset.fields"),
    ("ir_datasets", "retrieved_context_ids", True, "retriever=bm25", "dataset.fields"),
    ("beir", "response", True, "choose a metric that does not need it", "dataset.fields"),
    ("trec", "retrieved_contexts", False, "dataset.corpus=FILE", "dataset.fields"),
    ("trec", "user_input", False, "dataset.queries=FILE", "dataset.fields"),
    ("sample", "reference", False, "choose a metric", "dataset.fields"),
    ("mlflow_traces", "reference", False, "choose a metric", "dataset.answers"),
])
def test_the_advice_for_a_missing_field_names_a_setting_the_dataset_has(
        kind: str, field: str, corpus: bool, says: str, never: str | None) -> None:
    advice = field_fix(kind, field, corpus)
    assert says in advice
    assert never is None or never not in advice


@pytest.mark.parametrize(("kind", "says", "never"), [
    ("jsonl", "dataset.corpus=FILE", "dataset=scifact_mini"),
    ("trec", "dataset.corpus=FILE", "dataset=scifact_mini"),
    ("sample", "dataset sample takes no documents", "give your documents"),
    ("mlflow_traces", "dataset=scifact_mini", "give your documents"),
])
def test_a_corpus_retriever_on_data_without_documents_is_told_what_gives_them(
        kind: str, says: str, never: str) -> None:
    advice = corpus_fix(kind)
    assert says in advice and never not in advice


def test_a_run_that_scored_nothing_on_a_trec_run_names_the_corpus_not_a_column(
        tmp_path: Path) -> None:
    run, qrels = tmp_path / "run.trec", tmp_path / "qrels.txt"
    run.write_text("q1 Q0 d1 1 2.0 r\nq2 Q0 d3 1 1.0 r\n")
    qrels.write_text("q1 0 d1 1\nq2 0 d2 1\n")
    result = run_cli("dataset=trec", f"dataset.run={run}", f"dataset.qrels={qrels}",
                     "metric=non_llm", "tracking=none", "run.report=false", cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    [line] = [x for x in result.stderr.splitlines() if x.strip()]
    assert "missing fields reference_contexts, retrieved_contexts (2 of 2); give the " \
        "documents' texts with dataset.corpus=FILE;" in line
    assert "dataset.fields" not in line


def test_a_corpus_retriever_on_the_sample_dataset_is_not_told_to_set_dataset_corpus(
        tmp_path: Path) -> None:
    result = run_cli("retriever=bm25", "tracking=none", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    [line] = [x for x in result.stderr.splitlines() if x.strip()]
    assert "dataset sample takes no documents" in line and "dataset=scifact_mini" in line
    assert "give your documents with dataset.corpus" not in line
