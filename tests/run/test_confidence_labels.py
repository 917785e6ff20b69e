"""Where a run's human labels come from: the dataset's own qrels for a seeded
uniform draw (same seed, same samples; the block's numbers ppi_py's on those samples),
human feedback on MLflow traces, and the settings that go with them."""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import run_cli
from helpers.errors import fails
from helpers.labelled_run import judge_verdicts, truth, write_dataset, write_judge

from harness.confidence.bootstrap import bca_interval
from harness.core.errors import ConfigError
from harness.core.settings import RunSettings

ppi_py = pytest.importorskip("ppi_py")

N, DRAWN, EPS = 40, 12, 1e-10


def ap(verdicts: list[int], eps: float) -> float:
    """Average precision as docs/reference/metrics.md section 1 writes it."""
    hits = [sum(verdicts[: k + 1]) / (k + 1) for k, v in enumerate(verdicts) if v]
    return sum(hits) / (sum(verdicts) + eps) if sum(verdicts) + eps else 0.0


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("qrels")
    human = truth(N, seed=3)
    judge = judge_verdicts(human, 0.4, seed=5)
    return {"human": human, "judge": judge, "data": write_dataset(folder, human),
            "judge_file": write_judge(folder, judge)}


def qrels_run(world: dict[str, Any], tmp_path: Path, *more: str) -> Any:
    return run_cli("dataset=jsonl", f"dataset.path={world['data']}",
                   "metric=llm_with_reference", "judge=fixture",
                   f"judge.labels={world['judge_file']}", "tracking=none", "run.report=false",
                   "run.human_labels=qrels", f"run.human_label_samples={DRAWN}", *more,
                   cwd=tmp_path)


@pytest.mark.slow
def test_qrels_label_a_seeded_uniform_draw(world: dict[str, Any], tmp_path: Path) -> None:
    first, again = qrels_run(world, tmp_path), qrels_run(world, tmp_path)
    other = qrels_run(world, tmp_path, "run.seed=1")
    for result in (first, again, other):
        assert result.returncode == 0, result.stderr
    block = first.summary()["confidence"]
    ids = list(world["human"])  # the dataset's order
    drawn = random.Random(0).sample(ids, DRAWN)
    assert block["draw"] == {"seed": 0, "n": DRAWN, "population": N, "drawn": drawn}
    assert again.summary()["confidence"]["draw"]["drawn"] == drawn
    assert set(other.summary()["confidence"]["draw"]["drawn"]) == set(
        random.Random(1).sample(ids, DRAWN)) != set(drawn)
    assert block["random_draw"] is True and block["note"] is None
    assert (block["n_labelled"], block["n"]) == (DRAWN, N)
    assert block["labels"]["labelled_samples"] == DRAWN
    assert block["labels"]["label_rows"] == block["labels"]["matched_rows"] == 4 * DRAWN
    assert block["labels_source"].startswith("qrels of ")
    assert sorted(r["id"] for r in first.rows() if "human_verdicts" in r) == sorted(drawn)
    human, judge = world["human"], world["judge"]
    y = np.array([ap(human[k], EPS) for k in sorted(drawn)])  # the block takes ids in order
    yhat = np.array([ap(judge[k], EPS) for k in sorted(drawn)])
    rest = np.array([ap(judge[k], EPS) for k in sorted(ids) if k not in drawn])
    # 12 labelled: the bootstrap interval (tests/confidence/test_bootstrap.py checks it
    # against scipy's), over the run's own arrays and seeded by run.seed
    assert block["interval_method"] == "bootstrap"
    assert block["ci"] == pytest.approx(bca_interval(y, yhat, rest, 0.95, seed=0), rel=1e-9)
    assert block["labels_only_ci"] == pytest.approx(
        bca_interval(y, yhat, rest, 0.95, seed=0, judge_weight=False), rel=1e-9)
    assert block["mean"] == pytest.approx(
        ppi_py.ppi_mean_pointestimate(y, yhat, rest, lam=None)[0], rel=1e-9)
    assert again.summary()["confidence"]["ci"] == block["ci"]  # same seed, same interval
    other_drawn = sorted(other.summary()["confidence"]["draw"]["drawn"])
    y1 = np.array([ap(human[k], EPS) for k in other_drawn])
    yhat1 = np.array([ap(judge[k], EPS) for k in other_drawn])
    rest1 = np.array([ap(judge[k], EPS) for k in sorted(ids) if k not in other_drawn])
    assert other.summary()["confidence"]["ci"] == pytest.approx(
        bca_interval(y1, yhat1, rest1, 0.95, seed=1), rel=1e-9)
    assert "note" not in first.stdout


def test_more_samples_than_the_qrels_have_is_one_line(world: dict[str, Any],
                                                      tmp_path: Path) -> None:
    fails(qrels_run(world, tmp_path, "run.human_label_samples=41"),
          "run.human_label_samples: 41 samples asked for, but 40 samples")


def test_qrels_without_a_number_of_samples_is_one_line(world: dict[str, Any],
                                                       tmp_path: Path) -> None:
    fails(qrels_run(world, tmp_path, "run.human_label_samples=null"),
          "run.human_label_samples: run.human_labels=qrels draws")


def test_a_set_precision_run_is_told_it_has_no_interval(world: dict[str, Any],
                                                        tmp_path: Path) -> None:
    fails(qrels_run(world, tmp_path, "metric=id_based"), "id_based scores set precision",
          "metric=id_ranked")


def test_a_labels_file_that_is_not_there_is_one_line(world: dict[str, Any],
                                                     tmp_path: Path) -> None:
    fails(qrels_run(world, tmp_path, "run.human_labels=missing.csv"), "missing.csv",
          "file not found (set by run.human_labels)")


@pytest.mark.parametrize(("settings", "said"), [
    ({"human_labels": "qrels"}, "run.human_label_samples: run.human_labels=qrels"),
    ({"human_labels": "qrels", "human_label_samples": 1}, "run.human_label_samples"),
    ({"human_labels": "l.csv", "shards": 2}, "set run.shards=1"),
    ({"human_labels": "l.csv", "confidence_level": 1.0}, "run.confidence_level"),
    ({"confidence_level": 0}, "run.confidence_level"),
    ({"human_labels": " "}, "expected a labels file, qrels or mlflow"),
    ({"fail_under": {"-ci_high": 0.9}}, "run.fail_under: 'ci_high' is logged only"),
    ({"objective": "id_ranked/ppi_mean"}, "run.objective: 'id_ranked/ppi_mean' is logged"),
])
def test_settings_are_checked_before_any_work(settings: dict[str, Any], said: str) -> None:
    with pytest.raises(ConfigError) as e:
        RunSettings(**settings)
    assert said in str(e.value) and "\n" not in str(e.value)


def test_good_settings_pass() -> None:
    run = RunSettings(human_labels="qrels", human_label_samples=2, confidence_level=0.9,
                      fail_under={"ci_low": 0.5}, objective="ppi_mean")
    assert run.confidence_level == 0.9


@pytest.mark.slow  # MLflow's schema and tracing take seconds
def test_human_feedback_on_traces_labels_a_run(tmp_path: Path) -> None:
    import mlflow
    from helpers.mlflow_runs import active_store
    from helpers.traced_rag import record
    from mlflow.entities import AssessmentSource

    traced = record(f"sqlite:///{tmp_path / 'mlflow.db'}", "app")
    capital, water = (traced.traces[q] for q in ("capital of France",
                                                 "boiling point of water"))
    human = AssessmentSource(source_type="HUMAN", source_id="ann")
    with active_store(traced.uri, "app"):
        for trace, verdicts in ((capital, [1, 0, 0]), (water, [0, 1])):
            time.sleep(0.002)
            mlflow.log_feedback(trace_id=trace, name="relevance", value=verdicts, source=human)
        # one value naming no chunk: left out and counted
        mlflow.log_feedback(trace_id=traced.traces["largest planet"], name="relevance",
                            value=True, source=human)
    result = run_cli("dataset=mlflow_traces", "dataset.experiment_name=app",
                     "metric=id_ranked", "tracking=none", "run.report=false",
                     "run.human_labels=mlflow", "run.max_unscored_frac=1", cwd=tmp_path,
                     env={"MLFLOW_TRACKING_URI": traced.uri})
    assert result.returncode == 0, result.stderr
    block = result.summary()["confidence"]
    assert block["n_labelled"] == 2 and block["random_draw"] is False
    assert block["labels"]["skipped_feedback"] == 1
    assert "1 human feedback on the traces that names no chunk (left out)" in result.stdout
    rows = {r["id"]: r for r in result.rows()}
    assert rows[capital]["human_verdicts"] == [1, 0, 0]
    assert rows[water]["human_verdicts"] == [0, 1]


@pytest.mark.parametrize(("min_grade", "q2"), [(1, [1, 0, 1]), (2, [1, 0, 0])])
def test_qrels_grades_are_read_with_the_dataset_s_min_grade(tmp_path: Path, min_grade: int,
                                                            q2: list[int]) -> None:
    tiny = Path(__file__).parents[1] / "data" / "beir_tiny"
    result = run_cli("dataset=beir", f"dataset.path={tiny}", f"dataset.min_grade={min_grade}",
                     "retriever=bm25", "metric=id_ranked", "tracking=none", "run.report=false",
                     "run.human_labels=qrels", "run.human_label_samples=4", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = {r["id"]: r for r in result.rows()}
    # q2 retrieves d3 (grade 2), d5 (not in the qrels), d2 (grade 1)
    assert [c["id"] for c in rows["q2"]["chunks"]] == ["d3", "d5", "d2"]
    assert rows["q2"]["human_verdicts"] == q2
    assert all("human_verdicts" in r for r in rows.values())
