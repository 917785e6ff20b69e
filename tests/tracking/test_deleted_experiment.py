"""Issue 31, class 10 (a): logging into an experiment in MLflow's trash ends in one line
naming the experiment and the fix (restore it, or another ``experiment_name``), exit 2,
before the run's work; no run is created in the deleted experiment."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from conftest import run_cli
from helpers import mlflow_runs

from harness.core.errors import TrackingError
from harness.tracking.mlflow.experiments import check_local
from harness.tracking.mlflow.store import ensure_experiment


def _deleted(uri: str) -> tuple[str, str]:
    """A new experiment of the store at ``uri``, moved to the trash: (name, id)."""
    name = f"gone-{uuid.uuid4().hex[:6]}"
    c = mlflow_runs.client(uri)
    experiment_id = c.create_experiment(name)
    c.delete_experiment(experiment_id)
    return name, str(experiment_id)


def _runs_in(uri: str, experiment_id: str) -> int:
    from mlflow.entities import ViewType

    return len(mlflow_runs.client(uri).search_runs([experiment_id], run_view_type=ViewType.ALL))


@pytest.mark.slow
def test_a_deleted_experiment_is_refused_by_both_checks(mlflow_store: str) -> None:
    name, experiment_id = _deleted(mlflow_store)
    expected = (f"MLflow experiment '{name}' in {mlflow_store} is deleted (in MLflow's trash); "
                f"restore it (mlflow experiments restore --experiment-id {experiment_id}, ")
    with pytest.raises(TrackingError) as before_work:  # the local file, read directly
        check_local(mlflow_store, name)
    assert str(before_work.value).startswith(expected)
    assert str(before_work.value).endswith("experiment_name=NAME; nothing was run")
    with pytest.raises(TrackingError) as opening:  # any store, as the run is opened
        ensure_experiment(mlflow_store, name)
    assert str(opening.value).startswith(expected)
    check_local(mlflow_store, f"never-{name}")  # a new name: created later, not refused
    check_local("sqlite:////nonexistent/folder/mlflow.db", name)  # no store yet: MLflow's
    assert _runs_in(mlflow_store, experiment_id) == 0


@pytest.mark.slow
@pytest.mark.parametrize("how", [(), ("tracking.background=false",), ("-m",)])
def test_the_command_stops_before_the_work(tmp_path: Path, mlflow_store: str,
                                           how: tuple[str, ...]) -> None:
    name, experiment_id = _deleted(mlflow_store)
    sweep = tmp_path / "sweep"
    metric = "metric=id_based,id_ranked" if "-m" in how else "metric=id_based"
    result = run_cli(*how, metric, f"experiment_name={name}", f"hydra.sweep.dir={sweep}",
                     cwd=tmp_path, env={"MLFLOW_TRACKING_URI": mlflow_store})
    assert result.returncode == 2, result.stderr
    [line] = [x for x in result.stderr.splitlines() if x.strip() and "[HYDRA]" not in x]
    assert line.startswith(f"error: MLflow experiment '{name}' in ")
    assert f"--experiment-id {experiment_id}" in line and "experiment_name=NAME" in line
    assert line.endswith("no job of the sweep has run" if "-m" in how else "nothing was run")
    folder = sweep if "-m" in how else result.out_dir
    assert list(folder.rglob("summary.json")) == []  # no work was done
    assert _runs_in(mlflow_store, experiment_id) == 0
