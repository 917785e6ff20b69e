"""Issue 31, class 10 (b): a BEIR folder (``dataset=beir``, built through the package's
re-export ``harness.datasets.beir.BeirDataset``) is shardable: each worker re-opens the
folder from the config and scores its queries; the merged run equals the unsharded one,
and each query's score is the average precision of its ranking."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import TEST_DATA, run_cli

from harness.datasets.beir.dataset import BeirDataset
from harness.shards import _built_by

TINY = TEST_DATA / "beir_tiny"
#: Summary keys that say how long the run took, where, or how: the rest must be equal.
TIMES = {"duration_s", "samples_per_s", "output_dir", "timing", "config", "settings",
         "retriever"}


def test_a_re_exported_target_names_the_class_it_builds() -> None:
    assert _built_by("harness.datasets.beir.BeirDataset", BeirDataset)
    assert _built_by("harness.datasets.beir.dataset.BeirDataset", BeirDataset)
    assert not _built_by("harness.datasets.files.JsonlDataset", BeirDataset)
    assert not _built_by("nowhere.imported.BeirDataset", BeirDataset)  # nothing imported
    assert not _built_by(None, BeirDataset)  # the Python API's dataset: no target


def _relevant() -> dict[str, set[str]]:
    """The relevant documents (grade >= 1) of each query, read from the qrels file."""
    out: dict[str, set[str]] = {}
    for line in (TINY / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        query, doc, grade = line.split("\t")
        if int(grade) >= 1:
            out.setdefault(query, set()).add(doc)
    return out


def _context_precision(ids: list[str], relevant: set[str]) -> float:
    """Context precision by docs/reference/metrics.md: the mean of precision@k over the
    ranks k that hold a relevant chunk (0 without one)."""
    hits, total = 0, 0.0
    for rank, doc in enumerate(ids, 1):
        if doc in relevant:
            hits += 1
            total += hits / rank
    return total / hits if hits else 0.0


@pytest.mark.slow
@pytest.mark.parametrize("limit", [None, 3])
def test_a_sharded_beir_run_equals_the_unsharded_one(tmp_path: Path, limit: int | None) -> None:
    args = ("dataset=beir", f"dataset.path={TINY}", "retriever=bm25", "retriever.cache=false",
            "metric=id_ranked", "tracking=none", f"run.limit={'null' if limit is None else limit}")
    one = run_cli(*args, "run.shards=1", cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    for shards in (2, 3):
        many = run_cli(*args, f"run.shards={shards}", cwd=tmp_path)
        assert many.returncode == 0, many.stderr
        assert many.rows() == one.rows()
        whole, merged = one.summary(), many.summary()
        assert {k: v for k, v in merged.items() if k not in TIMES | {"dataset"}} == {
            k: v for k, v in whole.items() if k not in TIMES | {"dataset"}}
        # the folder's description (counts the parent adds while scoring aside)
        assert {k: v for k, v in merged["dataset"].items() if k in whole["dataset"]} == {
            k: v for k, v in whole["dataset"].items() if k in merged["dataset"]}
        assert merged["dataset"]["queries"] == whole["dataset"]["queries"] == 4
    rows = one.rows()
    assert [r["id"] for r in rows] == ["q1", "q2", "q3", "q4"][:limit]
    relevant = _relevant()
    assert [r["score"] for r in rows] == pytest.approx(
        [_context_precision([c["id"] for c in r["chunks"]], relevant[r["id"]]) for r in rows])
