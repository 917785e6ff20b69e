"""dataset=scifact_mini: the SciFact subset bundled in the package runs the README's retrieval
examples with nothing beside the clone; its files agree with each other, with their SOURCE.md
and with the full set they were drawn from."""

import csv
import hashlib
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
from conftest import ROOT, run_cli, shared_data

from harness.datasets.beir.dataset import BeirDataset
from harness.datasets.bundled import SCIFACT_MINI, ScifactMiniDataset

FILES = ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv")


def jsonl_ids(path: Path) -> list[str]:
    return [json.loads(line)["_id"] for line in path.read_text("utf-8").splitlines() if line]


def qrels_rows(path: Path) -> list[tuple[str, str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t"))
    assert rows[0] == ["query-id", "corpus-id", "score"]
    return [(q, d, s) for q, d, s in rows[1:]]


def test_folder_is_inside_the_package() -> None:
    assert SCIFACT_MINI == ROOT / "harness" / "data" / "scifact_mini"
    assert all((SCIFACT_MINI / f).is_file() for f in FILES)


def test_every_qrel_names_a_query_and_a_document_of_the_folder() -> None:
    docs = jsonl_ids(SCIFACT_MINI / "corpus.jsonl")
    queries = jsonl_ids(SCIFACT_MINI / "queries.jsonl")
    rows = qrels_rows(SCIFACT_MINI / "qrels" / "test.tsv")
    assert len(set(docs)) == len(docs) == 236 and len(set(queries)) == len(queries) == 50
    assert {d for _, d, _ in rows} <= set(docs)
    assert {q for q, _, _ in rows} == set(queries)  # every query judged, every judged query there
    assert {s for _, _, s in rows} == {"1"}
    # distractors: most of the corpus is not relevant to any query
    assert len(set(docs) - {d for _, d, _ in rows}) == 236 - 59


def test_source_note_keeps_licence_attribution_and_hashes() -> None:
    note = (SCIFACT_MINI / "SOURCE.md").read_text("utf-8")
    assert "CC BY-NC 2.0" in note and "creativecommons.org/licenses/by-nc/2.0" in note
    assert "non-commercial" in note.lower()
    assert "Wadden" in note and "Fact or Fiction" in note and "BEIR" in note
    assert "experiments/scifact_mini/make_subset.py" in note
    listed = dict(re.findall(r"\| `([^`]+)` \|[^\n]*\| `([0-9a-f]{64})` \|", note))
    assert listed == {f: hashlib.sha256((SCIFACT_MINI / f).read_bytes()).hexdigest() for f in FILES}


def test_package_data_globs_ship_every_file() -> None:
    """pyproject's package-data globs (relative to harness/) match every file of the folder,
    so a wheel carries it."""
    text = (ROOT / "pyproject.toml").read_text("utf-8")  # no tomllib on Python 3.10
    section = text.split("[tool.setuptools.package-data]", 1)[1].split("\n[", 1)[0]
    value = re.sub(r"#[^\n]*", "", section).split("harness = [", 1)[1].split("]", 1)[0]
    globs = re.findall(r'"([^"]+)"', value)
    assert "py.typed" in globs  # the right list
    shipped = {p for g in globs for p in (ROOT / "harness").glob(g)}
    for name in (*FILES, "SOURCE.md"):
        assert SCIFACT_MINI / name in shipped, f"no package-data glob matches scifact_mini/{name}"


def test_samples_equal_dataset_beir_on_the_folder() -> None:
    bundled, beir = ScifactMiniDataset(), BeirDataset(SCIFACT_MINI)
    bundled.check()
    assert list(bundled.samples()) == list(beir.samples())
    assert bundled.corpus().documents == beir.corpus().documents
    assert [s.id for s in ScifactMiniDataset(limit=3).samples()] == jsonl_ids(
        SCIFACT_MINI / "queries.jsonl")[:3]


def test_bundled_option_runs_bm25(tmp_path: Path) -> None:
    result = run_cli("dataset=scifact_mini", "retriever=bm25", "metric=id_ranked",
                     "tracking=none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = result.summary()
    rows = qrels_rows(SCIFACT_MINI / "qrels" / "test.tsv")
    assert summary["n_samples"] == summary["n_scored"] == len({q for q, _, _ in rows})
    dataset = summary["dataset"]
    assert dataset["documents"] == len(jsonl_ids(SCIFACT_MINI / "corpus.jsonl"))
    assert dataset["qrels"] == len(rows)
    assert dataset["qrels_docs_missing_from_corpus"] == 0
    assert 0.3 < summary["mean"] < 1  # the hard negatives outrank some relevant abstracts
    assert "report.html" in result.stdout


def _make_subset_module() -> object:
    path = ROOT / "experiments" / "scifact_mini" / "make_subset.py"
    spec = importlib.util.spec_from_file_location("make_subset", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.shared_data("beir_scifact")
def test_script_rebuilds_the_folder_byte_for_byte(tmp_path, monkeypatch) -> None:
    module = _make_subset_module()
    out = tmp_path / "scifact_mini"
    monkeypatch.setattr(sys, "argv", ["make_subset.py", "--source",
                                      str(shared_data("beir_scifact")), "--out", str(out)])
    module.main()  # type: ignore[attr-defined]
    for name in FILES:
        assert (out / name).read_bytes() == (SCIFACT_MINI / name).read_bytes(), name


@pytest.mark.shared_data("beir_scifact")
def test_samples_are_the_full_sets_samples() -> None:
    """Each bundled query's sample equals the full SciFact's: texts and judgments unchanged."""
    full = {s.id: s for s in BeirDataset(shared_data("beir_scifact")).samples()}
    mini = list(ScifactMiniDataset().samples())
    assert len(mini) == 50
    for sample in mini:
        assert sample == full[sample.id]
