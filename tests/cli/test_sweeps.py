"""Sweeps: Hydra multirun grids, parallel launchers and the MLflow parent/child runs.

The grid with Hydra's basic launcher runs in process; the launchers and the sweeper that
need an extra (joblib, Ray, submitit, Optuna) are ``heavy`` and run ``python -m harness``.
"""

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from conftest import CliResult, run_cli, run_cli_subprocess
from helpers import mlflow_runs

if TYPE_CHECKING:
    from mlflow.entities import Run


def sweep(
    tmp_path: Path,
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 300,
    in_process: bool = True,
    folder: str = "sweep",
) -> CliResult:
    run = run_cli if in_process else run_cli_subprocess
    result = run("-m", *args, f"hydra.sweep.dir={tmp_path / folder}", cwd=tmp_path, env=env,
                 timeout=timeout)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def runs_of(uri: str, experiment: str) -> tuple[list["Run"], list["Run"]]:
    runs = mlflow_runs.runs(uri, experiment)
    parents = [r for r in runs if r.data.tags.get("harness.sweep") == "parent"]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    return parents, children


@pytest.mark.slow
def test_grid_lands_child_runs_under_one_parent(tmp_path: Path, mlflow_store: str) -> None:
    sweep(tmp_path, "metric=id_based,id_ranked", "retriever.top_k=2,4", "experiment_name=grid",
          env={"MLFLOW_TRACKING_URI": mlflow_store})
    [parent], children = runs_of(mlflow_store, "grid")
    assert len(children) == 4
    assert {c.data.tags["mlflow.parentRunId"] for c in children} == {parent.info.run_id}
    combos = {(c.data.tags["choice.metric"], c.data.params["retriever.top_k"]) for c in children}
    assert combos == {("id_based", "2"), ("id_based", "4"), ("id_ranked", "2"), ("id_ranked", "4")}
    assert all(c.info.status == "FINISHED" for c in children)
    assert {c.info.run_name for c in children} == {
        f"{m}·top_k={k}" for m in ("id_based", "id_ranked") for k in (2, 4)
    }
    best = max(children, key=lambda c: c.data.metrics["mean"])
    assert parent.info.status == "FINISHED"
    assert parent.data.tags["sweep.best_run_id"] == best.info.run_id
    assert parent.data.metrics["best_mean"] == best.data.metrics["mean"]
    assert parent.data.tags["sweep.jobs"] == "4"


@pytest.mark.heavy
@pytest.mark.slow
def test_parallel_jobs_on_a_fresh_store_do_not_race(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'fresh.db'}"
    sweep(tmp_path, "hydra/launcher=local_parallel", "metric=id_based,id_ranked,non_llm",
          "retriever.top_k=2,4", env={"MLFLOW_TRACKING_URI": uri}, in_process=False)
    [parent], children = runs_of(uri, "harness")
    assert len(children) == 6 and all(c.info.status == "FINISHED" for c in children)


@pytest.mark.heavy
@pytest.mark.slow
def test_sweep_on_a_local_ray_cluster(tmp_path: Path, mlflow_store: str) -> None:
    ray_tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths are limited
    try:
        sweep(tmp_path, "hydra/launcher=ray_local", "hydra.launcher.ray.init.num_cpus=2",
              f"+hydra.launcher.ray.init._temp_dir={ray_tmp}", "metric=id_based,id_ranked",
              "experiment_name=ray", in_process=False,
              env={"MLFLOW_TRACKING_URI": mlflow_store, "RAY_AUTH_MODE": "disabled"})
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    [parent], children = runs_of(mlflow_store, "ray")
    assert {c.data.tags["choice.metric"] for c in children} == {"id_based", "id_ranked"}
    assert {c.data.tags["mlflow.parentRunId"] for c in children} == {parent.info.run_id}


@pytest.mark.heavy
def test_slurm_launcher_config_composes(tmp_path: Path) -> None:
    result = run_cli("hydra/launcher=slurm", "--cfg", "hydra", "-p", "hydra.launcher",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "submitit" in result.stdout and "timeout_min: 60" in result.stdout


@pytest.mark.heavy
@pytest.mark.slow
@pytest.mark.shared_data("beir_scifact")  # dataset=scifact: $HARNESS_SHARED_DATA (conftest)
def test_optuna_search_on_scifact_beats_its_first_trial_and_resumes(tmp_path: Path) -> None:
    args = ["hydra/sweeper=optuna_tpe", "hydra.sweeper.n_trials=6", "experiment_name=optuna_test",
            "retriever.k1=interval(0.2,3.0)", "retriever.b=interval(0.0,1.0)",
            "retriever.top_k=range(1,11)", "dataset=scifact", "dataset.limit=60",
            "retriever=bm25", "metric=id_ranked", "run.objective=ndcg_at_10", "tracking=none"]
    sweep(tmp_path, *args, in_process=False)
    import optuna

    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    study = optuna.load_study(study_name="optuna_test", storage=storage)
    values = [t.value for t in study.trials if t.value is not None]
    assert len(values) == 6
    assert study.best_value > values[0]
    assert set(study.best_params) == {"retriever.k1", "retriever.b", "retriever.top_k"}
    # the same command with more trials continues the stored study (into a sweep folder of
    # its own: a finished sweep's folder is never written over)
    more = [a if a != "hydra.sweeper.n_trials=6" else "hydra.sweeper.n_trials=2" for a in args]
    sweep(tmp_path, *more, in_process=False, folder="sweep_more")
    study = optuna.load_study(study_name="optuna_test", storage=storage)
    assert len([t for t in study.trials if t.value is not None]) == 8
