"""A run with human labels: the ``confidence`` block in summary.json equals
ppi_py's interval over the run's own arrays, the kappa scikit-learn's, the labelled rows
carry the human verdicts and scores, MLflow gets ppi_mean/ci_low/ci_high/kappa, the gate and
the objective take them, and labels that do not fit are counted aloud."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import run_cli
from helpers import mlflow_runs
from helpers.errors import fails
from helpers.labelled_run import (
    judge_verdicts,
    label_rows,
    truth,
    write_dataset,
    write_judge,
    write_labels,
)

ppi_py = pytest.importorskip("ppi_py")
metrics = pytest.importorskip("sklearn.metrics")

N, LABELLED, EPS = 90, 50, 1e-10
LLM = "llm_with_reference"


def ap(verdicts: list[int], eps: float) -> float:
    """Average precision as docs/reference/metrics.md section 1 writes it."""
    hits = [sum(verdicts[: k + 1]) / (k + 1) for k, v in enumerate(verdicts) if v]
    return sum(hits) / (sum(verdicts) + eps) if sum(verdicts) + eps else 0.0


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Dataset, a lenient judge's labels and the human labels of 50 samples (enough for the
    central-limit interval; by chunk id, rank and text), with one label for a sample and one
    for a chunk the run lacks."""
    folder = tmp_path_factory.mktemp("labelled")
    human = truth(N)
    judge = judge_verdicts(human, 0.3)
    ids = sorted(human)
    chosen = ids[5 : 5 + LABELLED]
    rows = (label_rows(human, chosen[:8]) + label_rows(human, chosen[8:14], by="rank")
            + label_rows(human, chosen[14:], by="context"))
    rows += [{"id": "nope", "rank": 1, "relevant": 1},
             {"id": chosen[0], "context_id": "zzz", "relevant": 0}]
    return {"folder": folder, "human": human, "judge": judge, "chosen": chosen,
            "data": write_dataset(folder, human), "judge_file": write_judge(folder, judge),
            "labels": write_labels(folder, rows)}


def args(world: dict[str, Any], *more: str, metric: str = LLM) -> tuple[str, ...]:
    return ("dataset=jsonl", f"dataset.path={world['data']}", f"metric={metric}",
            "judge=fixture", f"judge.labels={world['judge_file']}", "run.report=false",
            f"run.human_labels={world['labels']}", *more)


def expected(world: dict[str, Any], level: float = 0.95) -> dict[str, Any]:
    """The block's numbers, computed here from the truth and the judge's verdicts."""
    human, judge, chosen = world["human"], world["judge"], world["chosen"]
    rest = [k for k in human if k not in chosen]
    y = np.array([ap(human[k], EPS) for k in chosen])
    yhat = np.array([ap(judge[k], EPS) for k in chosen])
    unl = np.array([ap(judge[k], EPS) for k in rest])
    alpha = 1 - level
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, unl, alpha=alpha, lam=None)
    judge_all = np.concatenate([yhat, unl])
    h = [v for k in chosen for v in human[k]]
    j = [v for k in chosen for v in judge[k]]
    return {"mean": ppi_py.ppi_mean_pointestimate(y, yhat, unl, lam=None)[0],
            "ci": [lo[0], hi[0]],
            "labels_only_ci": list(ppi_py.classical_mean_ci(y, alpha=alpha)),
            "judge_only_ci": list(ppi_py.classical_mean_ci(judge_all, alpha=alpha)),
            "judge_mean": judge_all.mean(), "kappa": metrics.cohen_kappa_score(h, j)}


@pytest.mark.slow
def test_the_block_is_ppi_py_s_on_the_run_s_arrays(world: dict[str, Any], tmp_path: Path,
                                                   mlflow_store: str) -> None:
    result = run_cli(*args(world, "experiment_name=ppi_arrays"), cwd=tmp_path,
                     env={"MLFLOW_TRACKING_URI": mlflow_store})
    assert result.returncode == 0, result.stderr
    block, want = result.summary()["confidence"], expected(world)
    assert block["mean"] == pytest.approx(want["mean"], rel=1e-9)
    assert block["ci"] == pytest.approx(want["ci"], rel=1e-9)
    assert block["labels_only_ci"] == pytest.approx(want["labels_only_ci"], rel=1e-9)
    assert block["judge_only_ci"] == pytest.approx(want["judge_only_ci"], rel=1e-9)
    assert block["judge_agreement"]["kappa"] == pytest.approx(want["kappa"], abs=1e-12)
    assert (block["n"], block["n_labelled"], block["method"]) == (N, LABELLED, "ppi++")
    assert block["labels"]["unknown_samples"] == 1 and block["labels"]["unknown_chunks"] == 1
    assert block["random_draw"] is False and block["note"]
    # the rows: human verdicts and scores on the labelled samples only, beside the judge's
    for row in result.rows():
        if row["id"] in world["chosen"]:
            assert row["human_verdicts"] == world["human"][row["id"]]
            assert row["human_score"] == pytest.approx(ap(world["human"][row["id"]], EPS))
            assert list(row).index("human_score") == list(row).index("score") + 1
        else:
            assert "human_verdicts" not in row and "human_score" not in row
    # the console: the interval line, the note, the labels the run does not have
    low, high = block["ci"]
    line = (f"mean {block['mean']:.3f} [{low:.2f}, {high:.2f}] (PPI++, 50 of 90 labelled; "
            f"judge alone {want['judge_mean']:.3f}; kappa {want['kappa']:.2f})")
    assert re.search(r"\n  confidence\s+" + re.escape(line) + "\n", result.stdout)
    assert "not a recorded random draw" in result.stdout
    assert re.search(r"labels\s+202 label rows: 1 for samples this run does not have; 1 for "
                     r"chunks their sample did not retrieve", result.stdout), result.stdout
    [run] = mlflow_runs.runs(mlflow_store, "ppi_arrays")  # the worker's store is shared
    logged = run.data.metrics
    assert logged["ppi_mean"] == pytest.approx(want["mean"], rel=1e-9)
    assert [logged["ci_low"], logged["ci_high"]] == pytest.approx(want["ci"], rel=1e-9)
    assert logged["kappa"] == pytest.approx(want["kappa"], abs=1e-12)
    assert "50 of 90 samples labelled" in run.data.tags["mlflow.note.content"]


def test_the_level_is_the_run_s(world: dict[str, Any], tmp_path: Path) -> None:
    result = run_cli(*args(world, "tracking=none", "run.confidence_level=0.8"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    block, want = result.summary()["confidence"], expected(world, 0.8)
    assert block["level"] == 0.8 and block["ci"] == pytest.approx(want["ci"], rel=1e-9)


@pytest.mark.parametrize(("floor", "code"), [(0.99, 4), (0.01, 0)])
def test_fail_under_gates_on_the_lower_bound(world: dict[str, Any], tmp_path: Path,
                                             floor: float, code: int) -> None:
    result = run_cli(*args(world, "tracking=none", f"run.fail_under={{ci_low: {floor}}}"),
                     cwd=tmp_path)
    assert result.returncode == code, result.stderr
    low = result.summary()["confidence"]["ci"][0]
    assert result.summary()["gate"]["passed"] is (code == 0)
    if code:
        assert f"ci_low {low:.4f} is below its floor 0.99" in result.stderr


@pytest.mark.slow
def test_the_objective_may_be_ppi_mean(world: dict[str, Any], tmp_path: Path) -> None:
    result = run_cli("-m", *args(world, "tracking=none", "run.objective=ppi_mean",
                                 "run.confidence_level=0.9,0.95"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    want = expected(world)["mean"]
    assert "ranked by ppi_mean" in result.stdout
    assert f"(ppi_mean {want:.4f})" in result.stdout, result.stdout


@pytest.mark.parametrize("setting", ["run.fail_under={ci_low: 0.5}", "run.objective=ppi_mean",
                                     "run.objective=[mean,-kappa]"])
def test_a_confidence_metric_without_labels_is_one_line(tmp_path: Path, setting: str) -> None:
    result = run_cli("tracking=none", "metric=id_ranked", setting, cwd=tmp_path)
    fails(result, "is logged only by a run with human labels", "run.human_labels=FILE")


def test_a_bad_labels_line_is_one_line_naming_file_line_and_field(
        world: dict[str, Any], tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "q001", "rank": 1, "relevant": 1}\n'
                   '{"id": "q001", "rank": 2, "relevant": "maybe"}\n', "utf-8")
    result = run_cli(*args(world, "tracking=none", f"run.human_labels={bad}"), cwd=tmp_path)
    line = fails(result, f"{bad}:2", "'relevant'", "expected 0 or 1")
    assert "judge" not in line


@pytest.mark.slow
def test_several_variants_each_get_their_block(world: dict[str, Any], tmp_path: Path,
                                               mlflow_store: str) -> None:
    result = run_cli(*args(world, "run.max_unscored_frac=1", "experiment_name=several",
                           metric=f"[{LLM},id_ranked,id_based]"),
                     cwd=tmp_path, env={"MLFLOW_TRACKING_URI": mlflow_store})
    assert result.returncode == 0, result.stderr
    summary = result.summary()
    assert "confidence" not in summary
    llm, ranked = (summary["variants"][v]["confidence"] for v in (LLM, "id_ranked"))
    assert "confidence" not in summary["variants"]["id_based"]
    assert llm["ci"] == pytest.approx(expected(world)["ci"], rel=1e-9)
    # id_ranked's "judge" is the reference ids, which are the truth here: kappa 1
    assert ranked["judge_agreement"]["kappa"] == 1.0 and ranked["judge_agreement"]["fp"] == 0
    row = next(r for r in result.rows() if r["id"] == world["chosen"][0])
    human = world["human"][row["id"]]
    assert row["human_verdicts"] == human and "human_score" not in row
    assert row["variants"][LLM]["human_score"] == pytest.approx(ap(human, EPS))
    assert row["variants"]["id_ranked"]["human_score"] == pytest.approx(ap(human, 0.0))
    assert "human_score" not in row["variants"]["id_based"]
    lines = [x.split() for x in result.stdout.splitlines() if x.strip().startswith("confidence")]
    assert [x[1] for x in lines] == [f"{LLM}:", "id_ranked:", "id_based:"]
    assert lines[2][2:4] == ["no", "interval:"]
    [run] = mlflow_runs.runs(mlflow_store, "several")
    assert run.data.metrics[f"{LLM}/ci_low"] == pytest.approx(llm["ci"][0], rel=1e-9)
    assert run.data.metrics["id_ranked/kappa"] == 1.0
    assert "ci_low" not in run.data.metrics
    assert not any(k.startswith("id_based/") and k.endswith("ci_low") for k in run.data.metrics)
    assert math.isfinite(run.data.metrics[f"{LLM}/ppi_mean"])


def test_a_sheet_drawn_by_label_sheet_is_a_random_draw(world: dict[str, Any],
                                                       tmp_path: Path) -> None:
    import csv

    from harness.confidence.sheet import label_sheet

    first = run_cli(*args(world, "tracking=none", "run.human_labels=null"), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    paths = label_sheet(first.out_dir, 15, 4, tmp_path / "sheet")
    with open(paths["csv"], encoding="utf-8-sig", newline="") as f:
        table = list(csv.DictReader(f))
    for line in table:  # the labeller fills the relevant column in
        line["relevant"] = str(world["human"][line["id"]][int(line["rank"]) - 1])
    with open(paths["csv"], "w", encoding="utf-8-sig", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    result = run_cli(*args(world, "tracking=none", f"run.human_labels={paths['csv']}"),
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    block = result.summary()["confidence"]
    assert block["random_draw"] is True and block["note"] is None
    assert block["n_labelled"] == 15 and "note" not in result.stdout


def test_the_python_api_takes_labels_too(world: dict[str, Any], tmp_path: Path) -> None:
    import json

    from harness import evaluate

    samples = [json.loads(x) for x in world["data"].read_text("utf-8").splitlines()]
    result = evaluate(samples, "id_ranked", overrides=[f"run.human_labels={world['labels']}"])
    block = result.summary["confidence"]
    human = world["human"]
    y = np.array([ap(human[k], 0.0) for k in world["chosen"]])
    assert block["labels_only_ci"] == pytest.approx(
        list(ppi_py.classical_mean_ci(y, alpha=0.05)), rel=1e-9)
    labelled = [r["id"] for r in result.rows if "human_verdicts" in r]
    assert labelled == world["chosen"]
