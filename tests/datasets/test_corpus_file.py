"""``dataset.corpus=PATH``: a documents file beside a question file, so that a corpus
retriever (bm25, a custom one, ...) runs on the user's own data without a BEIR folder.

Rankings are checked against BM25 computed here from its definition (Lucene's variant, as
``retriever.method=lucene``), never against the harness's own output."""

from __future__ import annotations

import json
import math
import re
import textwrap
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import run_cli
from helpers.errors import fails

DOCS: list[dict[str, str]] = [
    {"_id": "a", "title": "Solar", "text": "solar panels turn sunlight into electric power"},
    {"_id": "b", "title": "", "text": "wind turbine blades spin in strong wind"},
    {"_id": "c", "title": "Turbines", "text": "turbine maintenance for wind farms and blades"},
    {"_id": "d", "title": "", "text": "sunlight and shade in gardens with solar lamps"},
    {"_id": "e", "title": "Power grid", "text": "the electric grid carries power from farms"},
]
QUESTIONS: list[dict[str, Any]] = [
    {"id": "q1", "user_input": "solar panels and sunlight", "reference_context_ids": ["a"]},
    {"id": "q2", "user_input": "wind turbine blades", "reference_context_ids": ["c", "b"]},
    {"id": "q3", "user_input": "electric power grid", "reference_context_ids": ["e", "x404"]},
]


def tokens(text: str) -> list[str]:
    """bm25s's default tokenizer: lower-cased words of two or more word characters."""
    return re.findall(r"(?u)\b\w\w+\b", text.lower())


def content(doc: dict[str, str]) -> str:
    """What a retriever indexes: ``title\\n\\ntext`` (the text alone without a title)."""
    return f"{doc['title']}\n\n{doc['text']}" if doc.get("title") else doc["text"]


def bm25_lucene(query: str, docs: list[dict[str, str]], k1: float = 1.5,
                b: float = 0.75) -> list[tuple[str, float]]:
    """Lucene's BM25 (idf = ln(1 + (N - df + 0.5) / (df + 0.5)), tf / (tf + k1 (1 - b +
    b dl / avgdl))), documents with a positive score, best first."""
    bags = [Counter(tokens(content(d))) for d in docs]
    avgdl = sum(sum(bag.values()) for bag in bags) / len(bags)
    scores: list[tuple[str, float]] = []
    for doc, bag in zip(docs, bags, strict=True):
        dl, score = sum(bag.values()), 0.0
        for term in set(tokens(query)):
            df = sum(1 for other in bags if term in other)
            if not df or not bag[term]:
                continue
            idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
            score += idf * bag[term] / (bag[term] + k1 * (1 - b + b * dl / avgdl))
        if score > 0:
            scores.append((doc["_id"], score))
    return sorted(scores, key=lambda pair: -pair[1])


def write_corpus(where: Path, kind: str, docs: list[dict[str, str]] = DOCS) -> Path:
    """The documents as ``kind`` (jsonl with ``id`` for half of them, parquet, csv, tsv)."""
    path = where / f"docs.{kind}"
    if kind == "jsonl":
        lines = [
            json.dumps({("id" if i % 2 else "_id"): d["_id"], "title": d["title"],
                        "text": d["text"], "metadata": {"n": i}})
            for i, d in enumerate(docs)
        ]
        path.write_text("\n".join(lines) + "\n", "utf-8")
    elif kind == "parquet":
        pq.write_table(pa.Table.from_pylist([{"id": d["_id"], "title": d["title"],
                                              "text": d["text"]} for d in docs]), path)
    else:
        sep = "," if kind == "csv" else "\t"
        rows = [sep.join(["_id", "title", "text"])]
        rows += [sep.join([d["_id"], d["title"], d["text"]]) for d in docs]
        path.write_text("\n".join(rows) + "\n", "utf-8")
    return path


def write_questions(where: Path, kind: str) -> Path:
    """The questions as ``kind`` (jsonl, json by columns, csv, parquet)."""
    path = where / f"questions.{kind}"
    if kind == "jsonl":
        path.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), "utf-8")
    elif kind == "json":
        columns = {key: [q[key] for q in QUESTIONS] for key in QUESTIONS[0]}
        path.write_text(json.dumps(columns), "utf-8")
    elif kind == "csv":
        def cell(ids: list[str]) -> str:
            return '"' + json.dumps(ids).replace('"', '""') + '"'

        lines = ["id,user_input,reference_context_ids"] + [
            f"{q['id']},{q['user_input']},{cell(q['reference_context_ids'])}" for q in QUESTIONS
        ]
        path.write_text("\n".join(lines) + "\n", "utf-8")
    else:
        pq.write_table(pa.Table.from_pylist(QUESTIONS), path)
    return path


def reciprocal_rank(ranked: list[str], relevant: list[str]) -> float:
    return next((1 / (i + 1) for i, d in enumerate(ranked) if d in relevant), 0.0)


@pytest.mark.parametrize(("questions", "corpus"), [
    ("jsonl", "jsonl"), ("json", "parquet"), ("csv", "csv"), ("parquet", "tsv"),
])
def test_bm25_ranks_your_corpus_as_bm25_does(tmp_path: Path, questions: str,
                                             corpus: str) -> None:
    qfile, dfile = write_questions(tmp_path, questions), write_corpus(tmp_path, corpus)
    result = run_cli(f"dataset={questions}", f"dataset.path={qfile}", f"dataset.corpus={dfile}",
                     "retriever=bm25", "retriever.stopwords=null", "retriever.cache=false",
                     "metric=id_ranked", "tracking=none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = {r["id"]: r for r in result.rows()}
    for q in QUESTIONS:
        expected = [d for d, _ in bm25_lucene(q["user_input"], DOCS)][:10]
        assert rows[q["id"]]["retrieved_context_ids"] == expected, q
        texts = [c["text"] for c in rows[q["id"]]["chunks"]]
        by_id = {d["_id"]: content(d) for d in DOCS}
        assert texts == [by_id[d] for d in expected]
        assert rows[q["id"]]["mrr"] == pytest.approx(
            reciprocal_rank(expected, q["reference_context_ids"]))
    summary = result.summary()
    assert summary["dataset"]["corpus"] == str(dfile)
    assert summary["dataset"]["documents"] == len(DOCS)
    assert summary["dataset"]["corpus_format"] == corpus
    # q3's x404 is in no document: no retriever can find it, and the summary says so
    referenced = {r for q in QUESTIONS for r in q["reference_context_ids"]}
    assert summary["dataset"]["reference_ids"] == len(referenced)
    assert summary["dataset"]["reference_ids_missing_from_corpus"] == 1
    assert summary["dataset"]["reference_ids_missing_examples"] == ["x404"]


def test_the_corpus_is_part_of_the_data_hash(tmp_path: Path) -> None:
    from harness.datasets.files import JsonlDataset

    qfile = write_questions(tmp_path, "jsonl")
    first = write_corpus(tmp_path, "jsonl")
    other = tmp_path / "other.jsonl"
    other.write_text(first.read_text("utf-8").replace("strong wind", "light wind"), "utf-8")
    hashes = {JsonlDataset(qfile, corpus=c).sha256() for c in (None, first, other)}
    assert len(hashes) == 3


@pytest.mark.slow
def test_a_sweep_over_top_k_on_your_corpus(tmp_path: Path) -> None:
    qfile, dfile = write_questions(tmp_path, "jsonl"), write_corpus(tmp_path, "jsonl")
    sweep = tmp_path / "sweep"
    result = run_cli("-m", "dataset=jsonl", f"dataset.path={qfile}", f"dataset.corpus={dfile}",
                     "retriever=bm25", "retriever.stopwords=null", "retriever.top_k=1,2",
                     "metric=id_ranked", "tracking=none", f"hydra.sweep.dir={sweep}",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    seen = set()
    for summary_file in sweep.glob("*/summary.json"):
        summary = json.loads(summary_file.read_text("utf-8"))
        top_k = summary["retriever"]["top_k"]
        seen.add(top_k)
        rows = [json.loads(x) for x in (summary_file.parent / "samples.jsonl")
                .read_text("utf-8").splitlines()]
        for row in rows:
            [q] = [q for q in QUESTIONS if q["id"] == row["id"]]
            full = [d for d, _ in bm25_lucene(q["user_input"], DOCS)]
            assert row["retrieved_context_ids"] == full[:top_k]
    assert seen == {1, 2}


@pytest.fixture
def own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A user's package on ``sys.path`` with a retriever that ranks the corpus it indexed
    by shared words (ties in corpus order) and scores each hit with that count."""
    name = f"corpus_user_{uuid.uuid4().hex[:8]}"
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / name / "search.py").write_text(textwrap.dedent("""
        from harness.retrievers.search import SearchRetriever
        from harness.core.types import Hit

        class Overlap(SearchRetriever):
            needs_corpus = True

            def __init__(self, top_k=3):
                super().__init__(top_k)
                self.docs = []

            def index(self, corpus):
                self.docs = [(d.id, d.content, set(d.content.lower().split()))
                             for d in corpus.documents]

            def search(self, queries):
                out = []
                for q in queries:
                    words = set(q.lower().split())
                    ranked = sorted(self.docs, key=lambda d: -len(words & d[2]))
                    out.append([Hit(i, t, float(len(words & w))) for i, t, w in ranked])
                return out
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_a_custom_retriever_searches_your_corpus(tmp_path: Path, own: str) -> None:
    qfile, dfile = write_questions(tmp_path, "jsonl"), write_corpus(tmp_path, "parquet")
    result = run_cli("dataset=jsonl", f"dataset.path={qfile}", f"dataset.corpus={dfile}",
                     "retriever=custom", f"retriever._target_={own}.search.Overlap",
                     f"trusted_targets=[{own}.*]", "metric=id_ranked", "tracking=none",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for row in result.rows():
        [q] = [q for q in QUESTIONS if q["id"] == row["id"]]
        words = set(q["user_input"].lower().split())
        shared = {d["_id"]: len(words & set(content(d).lower().split())) for d in DOCS}
        expected = sorted(shared, key=lambda i: -shared[i])[:3]  # stable: corpus order
        assert row["retrieved_context_ids"] == expected
        assert row["mrr"] == pytest.approx(reciprocal_rank(expected, q["reference_context_ids"]))


# -- fail closed: one error line naming the file, line and field ------------------------

BAD_JSONL = [
    ('{"_id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n',
     ["docs.jsonl:2: field 'id'", "duplicate id 'a' (first used on line 1)"]),
    ('{"_id": "a", "text": "x"}\n{"_id": "b", "text": "bad \\ud800 text"}\n',
     ["docs.jsonl:2: field 'text'", "lone surrogate"]),
    ('{"_id": "a"}\n', ["docs.jsonl:1: field 'text'", "missing"]),
    ('{"title": "t", "text": "x"}\n', ["docs.jsonl:1: field '_id'", "_id or id"]),
    ('{"_id": "a", "text": 3}\n', ["docs.jsonl:1: field 'text'", "expected a string"]),
    ('{"_id": "a", "text": "x"}\nnot json\n', ["docs.jsonl:2", "not valid JSON"]),
    ('\n\n', ["docs.jsonl", "contains no documents"]),
]


@pytest.mark.parametrize(("text", "fragments"), BAD_JSONL)
def test_a_bad_documents_file_is_one_line(tmp_path: Path, text: str,
                                          fragments: list[str]) -> None:
    qfile = write_questions(tmp_path, "jsonl")
    (tmp_path / "docs.jsonl").write_text(text, "utf-8")
    result = run_cli("dataset=jsonl", f"dataset.path={qfile}",
                     f"dataset.corpus={tmp_path / 'docs.jsonl'}", "retriever=bm25",
                     "metric=id_ranked", "tracking=none", cwd=tmp_path)
    fails(result, *fragments)


@pytest.mark.slow
def test_bad_csv_and_missing_corpus_files(tmp_path: Path) -> None:
    qfile = write_questions(tmp_path, "jsonl")
    base = ("dataset=jsonl", f"dataset.path={qfile}", "retriever=bm25", "metric=id_ranked",
            "tracking=none")
    (tmp_path / "docs.csv").write_text("doc,body\n1,x\n", "utf-8")
    fails(run_cli(*base, f"dataset.corpus={tmp_path / 'docs.csv'}", cwd=tmp_path),
          "docs.csv:1", "lacks _id (or id) and text")
    (tmp_path / "docs.csv").write_text("id,text\n1,x\n2,y,z\n", "utf-8")
    fails(run_cli(*base, f"dataset.corpus={tmp_path / 'docs.csv'}", cwd=tmp_path),
          "docs.csv:3", "has 3 columns but the header has 2")
    fails(run_cli(*base, f"dataset.corpus={tmp_path / 'nowhere.jsonl'}", cwd=tmp_path),
          "nowhere.jsonl", "file not found (dataset.corpus")
    (tmp_path / "docs.parquet").write_text("not parquet", "utf-8")
    fails(run_cli(*base, f"dataset.corpus={tmp_path / 'docs.parquet'}", cwd=tmp_path),
          "docs.parquet", "not a readable Parquet file")
    pq.write_table(pa.Table.from_pylist([{"id": "a", "text": "x"}, {"id": "a", "text": "y"}]),
                   tmp_path / "dup.parquet")
    fails(run_cli(*base, f"dataset.corpus={tmp_path / 'dup.parquet'}", cwd=tmp_path),
          "dup.parquet:2: field 'id'", "duplicate id 'a'")


@pytest.mark.slow
def test_shards_search_the_same_corpus(tmp_path: Path) -> None:
    qfile, dfile = write_questions(tmp_path, "jsonl"), write_corpus(tmp_path, "jsonl")
    args = ("dataset=jsonl", f"dataset.path={qfile}", f"dataset.corpus={dfile}",
            "retriever=bm25", "retriever.stopwords=null", "metric=id_ranked", "tracking=none")
    sharded = run_cli(*args, "run.shards=2", cwd=tmp_path, timeout=300)
    assert sharded.returncode == 0, sharded.stderr
    for row in sharded.rows():
        [q] = [q for q in QUESTIONS if q["id"] == row["id"]]
        assert row["retrieved_context_ids"] == [d for d, _ in bm25_lucene(q["user_input"], DOCS)]
    assert sharded.summary()["dataset"]["documents"] == len(DOCS)


@pytest.mark.slow
def test_a_custom_retriever_sweeps_on_your_corpus(tmp_path: Path, own: str) -> None:
    qfile, dfile = write_questions(tmp_path, "csv"), write_corpus(tmp_path, "csv")
    sweep = tmp_path / "sweep"
    result = run_cli("-m", "dataset=csv", f"dataset.path={qfile}", f"dataset.corpus={dfile}",
                     "retriever=custom", f"retriever._target_={own}.search.Overlap",
                     f"trusted_targets=[{own}.*]", "retriever.top_k=1,4", "metric=id_ranked",
                     "tracking=none", f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    seen = set()
    for folder in sweep.glob("*/"):
        if not (folder / "summary.json").exists():
            continue
        top_k = json.loads((folder / "summary.json").read_text("utf-8"))["retriever"]["top_k"]
        seen.add(top_k)
        for line in (folder / "samples.jsonl").read_text("utf-8").splitlines():
            row = json.loads(line)
            [q] = [q for q in QUESTIONS if q["id"] == row["id"]]
            words = set(q["user_input"].lower().split())
            shared = {d["_id"]: len(words & set(content(d).lower().split())) for d in DOCS}
            assert row["retrieved_context_ids"] == sorted(shared, key=lambda i: -shared[i])[:top_k]
    assert seen == {1, 4}
