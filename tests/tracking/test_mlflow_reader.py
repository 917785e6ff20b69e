"""MLflow as a reader uses it: the per-sample table, the dataset input and short run names
of a run; a sweep's parent with the swept params, the best child's metrics and the ranked
console summary (issue 15, items 1 and 9)."""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli, sample_rows
from helpers import mlflow_runs
from helpers.paths import SAMPLE

from harness.core.objectives import best_job, rank_key


def _set_precision(row: dict[str, Any], top_k: int | None = None) -> float:
    """ragas IDBasedContextPrecision by hand: |set(retrieved) ∩ reference| / |set(retrieved)|."""
    retrieved = set(row["retrieved_context_ids"][:top_k])
    return len(retrieved & set(row["reference_context_ids"])) / len(retrieved)


@pytest.mark.slow
def test_a_run_logs_its_table_dataset_and_a_short_name(
    tmp_path: Path, mlflow_store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_cli("metric=id_based", "judge.base_url=http://127.0.0.1:9/v1",
                     "experiment_name=reader", cwd=tmp_path,
                     env={"MLFLOW_TRACKING_URI": mlflow_store})
    assert result.returncode == 0, result.stderr[-2000:]
    [run] = mlflow_runs.runs(mlflow_store, "reader")
    # named after what varied, never the endpoint's URL
    assert run.info.run_name == "id_based"
    assert run.data.tags["hydra.overrides"].startswith("judge.base_url=http://127.0.0.1:9/v1")

    client = mlflow_runs.client(mlflow_store)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_store)  # load_table searches with it
    with mlflow_runs.active_store(mlflow_store, "harness"):  # ... unless a test before set
        table = client.load_table(run.info.experiment_id, "eval/samples.json",  # its own
                                  [run.info.run_id])
    records = sample_rows()
    assert list(table.columns[:7]) == ["id", "question", "chunks", "verdicts", "reason",
                                       "score", "error"]
    assert list(table["id"]) == [r["id"] for r in records]
    for (_, got), want in zip(table.iterrows(), records, strict=True):
        assert got["question"] == want["user_input"]
        assert list(got["chunks"]) == want["retrieved_contexts"]  # all under 200 characters
        relevant = set(want["reference_context_ids"])
        assert list(got["verdicts"]) == [int(i in relevant) for i in want["retrieved_context_ids"]]
        assert got["score"] == pytest.approx(_set_precision(want), abs=1e-12)
    assert run.data.tags["harness.eval_table"] == "30 of 30 rows"

    [given] = run.inputs.dataset_inputs
    sha = hashlib.sha256(SAMPLE.read_bytes()).hexdigest()
    assert given.dataset.name == "sample"
    assert given.dataset.digest == sha[:16]
    assert sha in given.dataset.profile and str(SAMPLE) in given.dataset.source
    assert given.dataset.source_type == "local"
    assert {t.key: t.value for t in given.tags} == {"mlflow.data.context": "evaluation"}
    # the UI opens the experiment on its runs table, not MLflow 3's GenAI overview
    experiment = client.get_experiment(run.info.experiment_id)
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"


@pytest.mark.slow
def test_a_sweep_parent_has_the_swept_params_and_the_best_childs_metrics(
    tmp_path: Path, mlflow_store: str
) -> None:
    result = run_cli("-m", "metric=id_based,id_ranked", "retriever.top_k=2,4",
                     "experiment_name=reader_sweep", f"hydra.sweep.dir={tmp_path / 'sweep'}",
                     cwd=tmp_path, env={"MLFLOW_TRACKING_URI": mlflow_store})
    assert result.returncode == 0, result.stderr[-2000:]
    runs = mlflow_runs.runs(mlflow_store, "reader_sweep")
    [parent] = [r for r in runs if r.data.tags.get("harness.sweep") == "parent"]
    children = [r for r in runs if r is not parent]
    assert {c.info.run_name for c in children} == {
        f"{m}·top_k={k}" for m in ("id_based", "id_ranked") for k in (2, 4)}
    assert parent.data.params == {"metric": "id_based,id_ranked", "retriever.top_k": "2,4"}

    # id_based at top_k=2 by hand; the best child is the highest mean
    top2 = next(c for c in children if c.info.run_name == "id_based·top_k=2")
    mean2 = sum(_set_precision(r, 2) for r in sample_rows()) / len(sample_rows())
    assert top2.data.metrics["mean"] == pytest.approx(mean2, abs=1e-12)
    best = max(children, key=lambda c: c.data.metrics["mean"])
    assert parent.data.tags["sweep.best_run_id"] == best.info.run_id
    assert parent.data.tags["sweep.objective"] == "mean"
    assert parent.data.tags["sweep.direction"] == "maximize"
    for name, value in best.data.metrics.items():
        assert parent.data.metrics[name] == value
    assert parent.data.metrics["best_mean"] == best.data.metrics["mean"]

    # printed once, after all jobs: the ranked jobs and the best one, with its overrides
    out = result.stdout
    assert out.count("ranked by mean") == 1 and out.rindex("ranked by mean") > out.rindex("job 3 ")
    ranked = [line.split() for line in out.splitlines() if line[:6].strip().isdigit()]
    assert [float(r[1]) for r in ranked] == sorted(
        (round(c.data.metrics["mean"], 4) for c in children), reverse=True)
    best_job_num = best.data.tags["hydra.job_num"]
    assert f"best          job {best_job_num}: {ranked[0][4]} {ranked[0][5]}" in out
    assert ranked[0][4] == f"metric={best.data.tags['choice.metric']}"


@pytest.mark.slow
def test_a_sweep_without_tracking_still_ends_with_its_ranked_jobs(tmp_path: Path) -> None:
    result = run_cli("-m", "metric=id_based", "run.limit=3,1", "tracking=none",
                     f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = sample_rows()
    first3 = sum(_set_precision(r) for r in rows[:3]) / 3
    first1 = _set_precision(rows[0])
    lines = [line.split() for line in result.stdout.splitlines() if line[:6].strip().isdigit()]
    expected = sorted([(first3, "run.limit=3"), (first1, "run.limit=1")], reverse=True)
    assert [(float(x[1]), x[4]) for x in lines] == [(round(v, 4), o) for v, o in expected]
    assert "mlflow parent" not in result.stdout


def test_the_tie_rule_highest_then_fewer_unscored_then_earlier_job() -> None:
    jobs = [  # (objective, n_unscored, job number)
        (0.5, 0.0, 4), (0.7, 2.0, 3), (0.7, 1.0, 5), (0.7, 1.0, 2), (math.nan, 0.0, 0),
        (None, 0.0, 1),
    ]
    assert best_job(jobs, lambda j: j) == (0.7, 1.0, 2)
    assert sorted(jobs, key=lambda j: rank_key(*j))[:4] == [
        (0.7, 1.0, 2), (0.7, 1.0, 5), (0.7, 2.0, 3), (0.5, 0.0, 4)]
    assert best_job([(math.nan, 0.0, 0), (None, 1.0, 1)], lambda j: j) is None
