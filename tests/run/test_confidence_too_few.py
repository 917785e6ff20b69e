"""Labels that leave fewer than two labelled samples the judge scored: the run's outputs are
kept (rows, summary without an interval) and it exits 3 with one line saying what became of
the label rows; a judged run is never thrown away for its labels. Labels that name none of
the dataset's samples are refused before any work (exit 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from helpers.labelled_run import (
    judge_verdicts,
    label_rows,
    truth,
    write_dataset,
    write_judge,
    write_labels,
)

pytest.importorskip("ppi_py")


@pytest.mark.parametrize(("rows_for", "said"), [
    # one sample fully labelled, another in part: one usable
    ("one_and_a_part", "of 7 label rows, 1 samples are labelled in part"),
    # two samples labelled, but under ids another run's samples have
    ("one_and_others", "of 5 label rows, 4 name samples this run does not have"),
])
def test_too_few_labelled_samples_keep_the_outputs_and_exit_3(
        tmp_path: Path, rows_for: str, said: str) -> None:
    """Known only once the samples are retrieved: the run is kept. (A sheet with no verdict
    yet is refused before any work: tests/run/test_confidence_refusals.py.)"""
    human = truth(12)
    judge = judge_verdicts(human, 0.3)
    ids = sorted(human)
    if rows_for == "one_and_a_part":
        rows = label_rows(human, ids[:1]) + label_rows(human, ids[1:2])[:3]
    else:
        rows = label_rows(human, ids[:1])[:1] + [dict(r, id="elsewhere") for r in
                                                 label_rows(human, ids[1:2])]
    labels = write_labels(tmp_path, rows)
    result = run_cli("dataset=jsonl", f"dataset.path={write_dataset(tmp_path, human)}",
                     "metric=llm_with_reference", "judge=fixture",
                     f"judge.labels={write_judge(tmp_path, judge)}", "run.report=false",
                     f"run.human_labels={labels}", "tracking=none", cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    [line] = [x for x in result.stderr.splitlines() if x.strip()]
    assert line.startswith("error: run.human_labels: ") and said in line, line
    assert "the interval needs at least 2" in line and line.endswith(
        "(the run's outputs are kept, without an interval)")
    summary = result.summary()
    assert summary["n_scored"] == 12 and summary.get("confidence") is None
    assert len(result.rows()) == 12


@pytest.mark.slow
@pytest.mark.parametrize("rename", [str.upper, lambda i: f"sample-{i}", lambda i: i + " "])
def test_labels_naming_none_of_the_samples_are_refused_before_any_work(
        tmp_path: Path, rename: Any) -> None:
    """Ids written another way than the dataset's: one line, exit 2, before the MLflow run
    starts or any sample is scored (no rows, no summary, no run in the store)."""
    import mlflow

    human = truth(12)
    rows = [dict(r, id=rename(r["id"])) for r in label_rows(human, sorted(human)[:2])]
    labels = write_labels(tmp_path, rows)
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    result = run_cli("dataset=jsonl", f"dataset.path={write_dataset(tmp_path, human)}",
                     "metric=llm_with_reference", "judge=fixture",
                     f"judge.labels={write_judge(tmp_path, judge_verdicts(human, 0.3))}",
                     f"run.human_labels={labels}", cwd=tmp_path,
                     env={"MLFLOW_TRACKING_URI": store})
    assert result.returncode == 2, result.stderr
    [line] = [x for x in result.stderr.splitlines() if x.strip()]
    assert line.startswith("error: run.human_labels: none of the 2 sample ids of "), line
    assert f"(a labelled id: {rows[0]['id']!r}; a sample of the dataset: " in line, line
    assert not (result.out_dir / "samples.jsonl").exists()
    assert not (result.out_dir / "summary.json").exists()
    runs = mlflow.MlflowClient(store).search_runs(
        [e.experiment_id for e in mlflow.MlflowClient(store).search_experiments()])
    assert runs == []
