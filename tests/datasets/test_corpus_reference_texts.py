"""``dataset.corpus=FILE`` beside a dataset that names its documents by id only: the
reference texts (and, with ``retriever=precomputed``, the retrieved texts) come from the
corpus, so ``metric=[id_ranked,non_llm,llm_with_reference]`` runs (issue 35, item 6).

Golden values: a second run of the same questions with the texts written into the dataset
by this file (from the documents as written here, never from the harness), and one
similarity and score computed here with rapidfuzz and the average-precision formula."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import run_cli
from rapidfuzz.distance import Levenshtein

TOPICS = [
    ("Solar", "solar panels turn sunlight into electric power on rooftops"),
    ("", "wind turbine blades spin in strong coastal wind"),
    ("Rivers", "river dams store water and release it through turbines"),
    ("", "coal plants burn fuel to boil water into steam"),
    ("Batteries", "lithium batteries store energy for the evening peak"),
    ("", "the electric grid carries power from farms to towns"),
    ("Heat pumps", "heat pumps move warmth from cold air into homes"),
    ("", "geothermal wells tap heat deep under volcanic ground"),
    ("Tides", "tidal barrages catch the rise and fall of the sea"),
    ("", "nuclear reactors split uranium atoms to make heat"),
    ("Insulation", "thick insulation keeps winter heat inside old houses"),
    ("", "electric cars charge overnight from home wall boxes"),
    ("Hydrogen", "green hydrogen is made by splitting water with electrolysis"),
    ("", "biomass boilers burn wood pellets from managed forests"),
    ("Meters", "smart meters report household power use every half hour"),
    ("", "offshore wind farms sit on platforms far out at sea"),
    ("Gas", "gas turbines start quickly when demand jumps at dusk"),
    ("", "pumped storage lifts water uphill when power is cheap"),
    ("Lamps", "solar garden lamps glow after sunset on stored charge"),
    ("", "transmission lines lose a little power over long distances"),
]
DOCS = [{"_id": f"doc-{i}", "title": t, "text": x} for i, (t, x) in enumerate(TOPICS)]
OWN = "written by hand: solar panels turning sunlight into power on a roof"
QUESTIONS: list[dict[str, Any]] = [
    {"id": "q0", "query": "how do solar panels make electric power",
     "reference": "solar panels turn sunlight into power", "reference_context_ids": ["doc-0"],
     "retrieved_context_ids": ["doc-18", "doc-0", "doc-5"]},
    {"id": "q1", "query": "wind turbine blades at sea", "reference": "turbine blades spin in wind",
     "reference_context_ids": ["doc-1", "doc-15"],
     "retrieved_context_ids": ["doc-1", "doc-16", "doc-15"]},
    {"id": "q2", "query": "storing energy with water and batteries",
     "reference": "batteries and dams store energy",
     "reference_context_ids": ["doc-4", "doc-17", "doc-2"],
     "reference_context_grades": [2, 1, 0],
     "retrieved_context_ids": ["doc-2", "doc-4", "doc-3", "doc-17"]},
    {"id": "q3", "query": "the electric grid and transmission lines",
     "reference": "the grid carries power over lines",
     "reference_context_ids": ["doc-5", "x404", "doc-19"],
     "retrieved_context_ids": ["doc-19", "doc-14", "doc-5"]},
    {"id": "q4", "query": "heating homes with heat pumps and insulation",
     "reference": "heat pumps and insulation keep homes warm",
     "reference_context_ids": ["doc-6", "doc-10"],
     "retrieved_context_ids": ["doc-7", "doc-6", "doc-9", "doc-10"]},
    {"id": "q5", "query": "making hydrogen by electrolysis of water",
     "reference": "hydrogen is made by splitting water", "reference_context_ids": ["doc-12"],
     "retrieved_context_ids": ["doc-3", "doc-12"]},
    {"id": "q6", "query": "charging electric cars overnight",
     "reference": "electric cars charge overnight", "reference_context_ids": ["doc-11"],
     "retrieved_context_ids": ["doc-11", "doc-14"]},
    {"id": "q7", "query": "solar power from sunlight on rooftops",
     "reference": "solar panels on rooftops", "reference_context_ids": ["doc-0"],
     "reference_contexts": [OWN], "retrieved_context_ids": ["doc-0", "doc-18"]},
]


def content(doc: dict[str, str]) -> str:
    """A document's text as documented: ``title\\n\\ntext``, the text alone without title."""
    return f"{doc['title']}\n\n{doc['text']}" if doc["title"] else doc["text"]


BY_ID = {d["_id"]: content(d) for d in DOCS}


def by_hand(q: dict[str, Any], retrieved: bool) -> dict[str, Any]:
    """``q`` with its texts written in: its own reference texts, else those of its relevant
    ids (grade >= 1) the corpus holds; with ``retrieved``, its retrieved ids' texts."""
    out = dict(q)
    if "reference_contexts" not in q:
        grades = q.get("reference_context_grades", [1] * len(q["reference_context_ids"]))
        pairs = zip(q["reference_context_ids"], grades, strict=True)
        out["reference_contexts"] = [BY_ID[d] for d, g in pairs if g >= 1 and d in BY_ID]
    if retrieved:
        out["retrieved_contexts"] = [BY_ID[d] for d in q["retrieved_context_ids"]]
    return out


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return path


def run(tmp: Path, data: Path, *extra: str) -> Any:
    result = run_cli("dataset=jsonl", f"dataset.path={data}", "dataset.fields.user_input=query",
                     "metric=[id_ranked,non_llm,llm_with_reference]", "judge=fixture",
                     "tracking=none", "run.report=false", "run.row_text_chars=null", *extra,
                     cwd=tmp)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def per_variant(result: Any) -> dict[str, dict[str, Any]]:
    return {r["id"]: r["variants"] for r in result.rows()}


def average_precision(verdicts: list[int], eps: float = 1e-10) -> float:
    """ragas's formula: sum of precision@k at relevant ranks over (relevant + eps)."""
    hits, total = 0, 0.0
    for k, v in enumerate(verdicts, 1):
        hits += v
        total += v * hits / k
    return total / (sum(verdicts) + eps)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write(tmp_path / "docs.jsonl", DOCS)


@pytest.mark.slow
@pytest.mark.parametrize("retriever", ["precomputed", "bm25"])
def test_ids_and_a_corpus_score_as_texts_written_by_hand(
    tmp_path: Path, corpus: Path, retriever: str
) -> None:
    ids_only = write(tmp_path / "ids.jsonl", QUESTIONS)
    texts = write(tmp_path / "texts.jsonl",
                  [by_hand(q, retriever == "precomputed") for q in QUESTIONS])
    searched = ["retriever=bm25", "retriever.cache=false", "retriever.top_k=4",
                f"dataset.corpus={corpus}"] if retriever == "bm25" else []
    ours = run(tmp_path, ids_only, f"dataset.corpus={corpus}", *searched)
    theirs = run(tmp_path, texts, *searched)
    got, want = per_variant(ours), per_variant(theirs)
    assert set(got) == {q["id"] for q in QUESTIONS}
    for qid in want:
        for variant in ("id_ranked", "non_llm", "llm_with_reference"):
            assert got[qid][variant]["error"] is None, (qid, variant)
            assert got[qid][variant]["score"] == want[qid][variant]["score"], (qid, variant)
        assert got[qid]["non_llm"]["similarities"] == want[qid]["non_llm"]["similarities"]
    assert ours.summary()["n_unscored"] == 0
    scores = {got[q]["non_llm"]["score"] for q in got}
    assert len(scores) > 2  # the comparison is not between constants


@pytest.mark.slow
def test_non_llm_against_rapidfuzz_by_hand(tmp_path: Path, corpus: Path) -> None:
    ids_only = write(tmp_path / "ids.jsonl", QUESTIONS)
    rows = per_variant(run(tmp_path, ids_only, f"dataset.corpus={corpus}"))
    # q2: relevant doc-4 (grade 2) and doc-17; doc-2 is a judged negative (grade 0)
    refs = [BY_ID["doc-4"], BY_ID["doc-17"]]
    chunks = [BY_ID[d] for d in ("doc-2", "doc-4", "doc-3", "doc-17")]
    best = [max(1 - Levenshtein.normalized_distance(c, r) for r in refs) for c in chunks]
    assert best[1] == best[3] == 1.0 and max(best[0], best[2]) < 0.5
    assert rows["q2"]["non_llm"]["similarities"] == pytest.approx(best, abs=1e-12)
    assert rows["q2"]["non_llm"]["score"] == pytest.approx(
        average_precision([1 if b >= 0.5 else 0 for b in best]), abs=1e-12)
    assert rows["q2"]["non_llm"]["score"] == pytest.approx((1 / 2 + 2 / 4) / 2, abs=1e-9)


@pytest.mark.slow
def test_a_sample_with_its_own_reference_texts_keeps_them(tmp_path: Path,
                                                           corpus: Path) -> None:
    ids_only = write(tmp_path / "ids.jsonl", QUESTIONS)
    rows = per_variant(run(tmp_path, ids_only, f"dataset.corpus={corpus}"))
    own = [1 - Levenshtein.normalized_distance(BY_ID[d], OWN) for d in ("doc-0", "doc-18")]
    assert own[0] < 1.0  # the corpus's doc-0 would give 1.0
    assert rows["q7"]["non_llm"]["similarities"] == pytest.approx(own, abs=1e-12)


@pytest.mark.slow
def test_an_id_missing_from_the_corpus_is_counted_once(tmp_path: Path, corpus: Path) -> None:
    ids_only = write(tmp_path / "ids.jsonl", QUESTIONS)
    result = run(tmp_path, ids_only, f"dataset.corpus={corpus}")
    dataset = result.summary()["dataset"]
    assert dataset["reference_ids_missing_from_corpus"] == 1
    assert dataset["reference_ids_missing_examples"] == ["x404"]
    assert "retrieved_ids_missing_from_corpus" not in dataset
    assert (result.stdout + result.stderr).count("x404") == 1
    # q3 is scored against the two reference texts the corpus holds
    refs = [BY_ID["doc-5"], BY_ID["doc-19"]]
    chunks = [BY_ID[d] for d in ("doc-19", "doc-14", "doc-5")]
    best = [max(1 - Levenshtein.normalized_distance(c, r) for r in refs) for c in chunks]
    assert per_variant(result)["q3"]["non_llm"]["similarities"] == pytest.approx(best)


def _questions_as(kind: str, where: Path) -> tuple[str, Path]:
    """QUESTIONS written as ``kind``; the dataset class that reads it."""
    path = where / f"questions.{kind}"
    if kind == "parquet":
        rows = [{**q, "reference_contexts": q.get("reference_contexts"),
                 "reference_context_grades": q.get("reference_context_grades")}
                for q in QUESTIONS]
        pq.write_table(pa.Table.from_pylist(rows), path)
        return "ParquetDataset", path
    if kind == "csv":
        keys = ["id", "query", "reference", "reference_context_ids", "reference_context_grades",
                "reference_contexts", "retrieved_context_ids"]

        def cell(v: Any) -> str:
            text = v if isinstance(v, str) else "" if v is None else json.dumps(v)
            return '"' + text.replace('"', '""') + '"'

        lines = [",".join(keys)] + [",".join(cell(q.get(k)) for k in keys) for q in QUESTIONS]
        path.write_text("\n".join(lines) + "\n", "utf-8")
        return "CsvDataset", path
    if kind == "json":
        path.write_text(json.dumps(QUESTIONS), "utf-8")
        return "JsonDataset", path
    return "JsonlDataset", write(path, QUESTIONS)


@pytest.mark.parametrize("kind", ["jsonl", "json", "csv", "parquet"])
def test_every_file_format_fills_from_the_corpus(tmp_path: Path, corpus: Path,
                                                 kind: str) -> None:
    import harness.datasets.files as files
    from harness.datasets.json_doc import JsonDataset

    name, path = _questions_as(kind, tmp_path)
    cls = JsonDataset if name == "JsonDataset" else getattr(files, name)
    ds = cls(path, fields={"user_input": "query"}, corpus=corpus)
    got = {s.id: s for s in ds.samples()}
    for q in QUESTIONS:
        want = by_hand(q, retrieved=True)
        assert list(got[q["id"]].reference_contexts or ()) == want["reference_contexts"], q["id"]
        assert list(got[q["id"]].retrieved_contexts or ()) == want["retrieved_contexts"], q["id"]


def test_the_corpus_is_read_once_and_retrieved_ids_it_lacks_are_counted(
    tmp_path: Path, corpus: Path
) -> None:
    from harness.datasets.files import JsonlDataset

    odd = [*QUESTIONS, {"id": "q8", "query": "q", "reference_context_ids": ["doc-1"],
                        "retrieved_context_ids": ["doc-1", "gone"]}]
    ds = JsonlDataset(write(tmp_path / "q.jsonl", odd), {"user_input": "query"}, corpus)
    samples = {s.id: s for s in ds.samples()}
    assert samples["q8"].retrieved_contexts is None  # no text list that is not parallel
    assert samples["q8"].reference_contexts == (BY_ID["doc-1"],)
    read = ds.corpus()
    assert read is not None and read is ds.corpus() and ds.documents is not None
    assert all(ds.documents.by_id()[d.id] is d for d in read.documents)
    list(ds.samples())
    described = ds.describe()
    assert described["retrieved_ids_missing_from_corpus"] == 1
    assert described["retrieved_ids_missing_examples"] == ["gone"]
    assert ds.documents._records == len(DOCS)  # read once, by every use above


def test_each_shard_of_a_split_file_fills_as_the_whole(tmp_path: Path, corpus: Path) -> None:
    from harness.datasets.files import JsonlDataset

    ds = JsonlDataset(write(tmp_path / "q.jsonl", QUESTIONS), {"user_input": "query"}, corpus)
    parts = [ds.split_part(span) for span in ds.split_spans(3, None)]
    assert [s for p in parts for s in p.samples()] == list(ds.samples())


def test_without_a_corpus_nothing_is_filled(tmp_path: Path) -> None:
    from harness.datasets.files import JsonlDataset

    ds = JsonlDataset(write(tmp_path / "q.jsonl", QUESTIONS), {"user_input": "query"})
    got = {s.id: s for s in ds.samples()}
    assert got["q0"].reference_contexts is None and got["q0"].retrieved_contexts is None
    assert got["q7"].reference_contexts == (OWN,)
