"""What the MLflow runs list shows first (issue 35, item 4): the printed link opens the
*Evaluation runs* table with no saved view in it; the key metrics are logged first (the
table's columns follow that order); a run's name starts with what sets it apart from the
experiment's latest runs; a run whose mean covers few of its samples is marked.

Golden values are written by hand from the rules in the issue; the store is a real SQLite
MLflow store in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.core.types import RunRecord
from harness.tracking.mlflow import ui, view
from harness.tracking.mlflow.store import client, close_run, open_run

#: A run's metrics in the order the harness computes them (``RunRecord.metrics``).
METRICS = {"duration_s": 0.02, "recall_at_10": 0.9, "mean": 0.81071428, "n_samples": 32.0,
           "n_scored": 32.0, "n_unscored": 0.0, "ndcg_at_10": 0.77, "mrr": 0.7}


def test_the_runs_link_carries_no_saved_view() -> None:
    link = ui.runs_link("http://127.0.0.1:5000", "7")
    assert link == "http://127.0.0.1:5000/#/experiments/7/evaluation-runs"
    assert "viewStateShareKey" not in link  # what brings MLflow's shared-view banner
    rows = ui.ui_lines("https://alice:s3cret@mlflow.example.org/team/", "7", "r1")
    assert rows[-1] == ("mlflow runs", "https://mlflow.example.org/team/#/experiments/7/"
                                       "evaluation-runs")
    assert ui.view_link("http://h", "7") == (
        "http://h/#/experiments/7/runs?workflowType=machine_learning&viewStateShareKey=harness")


@pytest.mark.parametrize(("objective", "first"), [
    ("mean", ["mean", "n_scored", "n_unscored", "n_samples"]),
    ("ndcg_at_10", ["mean", "n_scored", "n_unscored", "n_samples", "ndcg_at_10"]),
    ("[ndcg_at_10,-duration_s]", ["mean", "n_scored", "n_unscored", "n_samples", "ndcg_at_10",
                                  "duration_s"]),
    ("mrr,-ndcg_at_10", ["mean", "n_scored", "n_unscored", "n_samples", "mrr", "ndcg_at_10"]),
    ("not_logged", ["mean", "n_scored", "n_unscored", "n_samples"]),
])
def test_key_metrics_then_the_objective_then_the_rest(objective: str, first: list[str]) -> None:
    order = view.metric_order(METRICS, objective)
    assert order[: len(first)] == first
    rest = [m for m in METRICS if m not in first]  # in their own order
    assert order[len(first):] == rest


@pytest.mark.parametrize(("scored", "total", "marked"), [
    (7, 32, True), (28, 32, True), (29, 32, False), (32, 32, False), (0, 32, True),
])
def test_a_run_scored_on_under_nine_tenths_of_its_samples_is_marked(
    scored: int, total: int, marked: bool
) -> None:
    metrics = {"n_scored": float(scored), "n_samples": float(total)}
    tags, prefix = view.coverage_marks(metrics, {view.NOTE_TAG: "Mean 0.66 over ..."})
    assert bool(tags) is marked and bool(prefix) is marked
    if marked:  # 0.9 × 32 = 28.8 samples
        assert prefix == f"⚠ {scored}/{total}·"
        assert tags[view.LOW_TAG] == f"{scored}/{total} samples scored"
        first, _, rest = tags[view.NOTE_TAG].partition("\n\n")
        assert f"covers {scored} of {total} samples" in first and rest == "Mean 0.66 over ..."
    assert view.coverage_marks({"mean": 0.5}, {}) == ({}, "")  # nothing to say it by


@pytest.mark.parametrize(("name", "others", "expected"), [
    ("id_ranked·jsonl·path=qs.jsonl·bm25·top_k=10",
     ["id_ranked·jsonl·path=qs.jsonl·bm25·top_k=3"],
     "top_k=10·id_ranked·jsonl·path=qs.jsonl·bm25"),
    ("id_ranked·jsonl·path=qs.jsonl·bm25·top_k=10·k1=0.9",
     ["id_ranked·jsonl·path=qs.jsonl·bm25·top_k=10", "id_ranked·jsonl·path=qs.jsonl·bm25·top_k=3"],
     "k1=0.9·top_k=10·id_ranked·jsonl·path=qs.jsonl·bm25"),  # the rarer part first
    ("id_ranked·jsonl·path=sparse.jsonl·bm25·top_k=10",
     ["top_k=10·id_ranked·jsonl·path=qs.jsonl·bm25", "id_ranked·jsonl·path=qs.jsonl·bm25·top_k=3"],
     "path=sparse.jsonl·top_k=10·id_ranked·jsonl·bm25"),
    ("id_based·top_k=5", [], "id_based·top_k=5"),  # the experiment's first run
    ("id_based·top_k=5", ["id_based·top_k=5"], "id_based·top_k=5"),  # the same settings again
    ("id_based", ["non_llm"], "id_based"),
    ("non_llm·top_k=3", ["id_based·top_k=5"], "non_llm·top_k=3"),  # shares nothing
])
def test_what_sets_a_run_apart_comes_first(name: str, others: list[str], expected: str) -> None:
    assert view.distinguishing_first(name, others) == expected


@pytest.mark.slow
def test_a_real_store_gets_the_order_the_names_and_the_marks(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    base = "id_ranked·jsonl·path=qs.jsonl·corpus=corpus.jsonl·bm25"
    params = {"run.objective": "ndcg_at_10"}
    first, exp = open_run(uri, "view", f"{base}·top_k=3", {})
    close_run(uri, first, RunRecord(params=params, metrics=METRICS))
    second, _ = open_run(uri, "view", f"{base}·top_k=10", {})
    close_run(uri, second, RunRecord(params=params, metrics=METRICS))
    sparse, _ = open_run(uri, "view", f"{base}·top_k=10".replace("qs.jsonl", "sparse.jsonl"), {})
    low = {**METRICS, "n_scored": 7.0, "n_unscored": 25.0}
    close_run(uri, sparse, RunRecord(params=params, metrics=low,
                                     tags={view.NOTE_TAG: "Mean 0.6655 over 7 scored."}))
    c = client(uri)
    runs = {r: c.get_run(r) for r in (first, second, sparse)}
    assert runs[first].info.run_name == f"{base}·top_k=3"  # nothing to set it apart from
    assert runs[second].info.run_name == f"top_k=10·{base}"
    assert runs[sparse].info.run_name == (
        "⚠ 7/32·path=sparse.jsonl·top_k=10·id_ranked·jsonl·corpus=corpus.jsonl·bm25")
    for run in runs.values():  # the table's columns follow the order a run logged them in
        assert list(run.data.metrics)[:5] == ["mean", "n_scored", "n_unscored", "n_samples",
                                              "ndcg_at_10"]
        assert run.data.metrics == pytest.approx(METRICS if run is not runs[sparse] else low)
    tags = runs[sparse].data.tags
    assert tags[view.LOW_TAG] == "7/32 samples scored"
    assert tags[view.NOTE_TAG].startswith("**Low coverage: the mean covers 7 of 32 samples**")
    assert tags[view.NOTE_TAG].endswith("\n\nMean 0.6655 over 7 scored.")
    assert view.LOW_TAG not in runs[second].data.tags
    # a sweep's job keeps the name made of its swept keys
    job, _ = open_run(uri, "view", "top_k=3", {"mlflow.parentRunId": first})
    assert c.get_run(job).info.run_name == "top_k=3"
    assert exp
