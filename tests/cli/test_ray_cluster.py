"""Sweeps on a Ray cluster (``hydra/launcher=ray_cluster``), as a team runs them.

A two-node cluster on this machine (``ray start --head`` and ``ray start --address``,
``tests/helpers/ray_cluster.py``), a PostgreSQL server holding the shared verdict cache
(``judge.cache_url``) and a team MLflow server (PostgreSQL backend, basic auth), the test
judge on 127.0.0.1. The nodes hold the credentials in their environment, as a team's
machines would (``PGUSER``/``PGPASSWORD``, ``MLFLOW_TRACKING_USERNAME/PASSWORD`` set
before ``ray start``); the command line holds none: a URL with user info in it is hidden
from Hydra's files in the launching process's environment (``harness.core.secrets``),
which a cluster's workers do not share.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import CliResult, run_cli, run_cli_subprocess, sample_labels, sample_rows
from helpers import mlflow_runs
from helpers import mlflow_server as team_mlflow
from helpers.judge_server import JudgeServer
from helpers.mlflow_server import MlflowServer
from helpers.postgres import PASSWORD, Postgres
from helpers.ray_cluster import RAY_ENV, RayCluster

pytestmark = [pytest.mark.heavy, pytest.mark.slow]

EXPERIMENT = "ray_cluster"
TOP_K = (2, 4)
CANARIES = (PASSWORD, team_mlflow.USER_PASSWORD)


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """PostgreSQL, the MLflow server on it, and a two-node Ray cluster whose nodes carry
    the team's credentials in their environment."""
    why = team_mlflow.available()
    if why:
        pytest.skip(why)
    root = tmp_path_factory.mktemp("team")
    home = root / "node-home"
    node_env = {"MLFLOW_TRACKING_USERNAME": team_mlflow.USER,
                "MLFLOW_TRACKING_PASSWORD": team_mlflow.USER_PASSWORD,
                "PGUSER": "harness", "PGPASSWORD": PASSWORD, "HOME": str(home),
                "XDG_CACHE_HOME": str(home / ".cache")}
    (root / "nodes").mkdir()
    with Postgres() as pg, MlflowServer(pg, root) as server:
        pg.database("verdicts")
        with RayCluster(env=node_env, cwd=root / "nodes") as cluster:
            yield {"pg": pg, "mlflow": server, "cluster": cluster, "root": root}


def unique_judgements() -> int:
    """(question, answer, chunk) judgements of the bundled dataset at the deepest top_k."""
    return len({(r["user_input"], r["reference"], chunk) for r in sample_rows()
                for chunk in r["retrieved_contexts"][: max(TOP_K)]})


def sweep(team: dict[str, Any], judge: JudgeServer, cwd: Path, user: str) -> CliResult:
    """The LLM-judged sweep over ``retriever.top_k``, launched by ``user`` (their own HOME
    and cache folder) from ``cwd``; credentials in the environment only."""
    pg: Postgres = team["pg"]
    home = cwd / user
    env = {**RAY_ENV, **team["mlflow"].env(), "RAY_ADDRESS": team["cluster"].address,
           "PGUSER": pg.user, "PGPASSWORD": PASSWORD, "HOME": str(home),
           "XDG_CACHE_HOME": str(home / ".cache")}
    cwd.mkdir(parents=True, exist_ok=True)
    result = run_cli_subprocess(
        "-m", "hydra/launcher=ray_cluster", "metric=llm_with_reference", "judge=local",
        f"judge.base_url={judge.base_url}", "judge.model=test-judge",
        f"judge.cache_url=postgresql://127.0.0.1:{pg.port}/verdicts",
        f"retriever.top_k={','.join(map(str, TOP_K))}", f"experiment_name={EXPERIMENT}",
        f"hydra.sweep.dir={cwd / 'sweep'}", cwd=cwd, env=env, timeout=400,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return result


def job_summaries(sweep_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text("utf-8")) for p in sorted(sweep_dir.glob("*/summary.json"))]


def texts_under(folder: Path) -> Iterator[tuple[Path, str]]:
    for path in folder.rglob("*"):
        if path.is_file():
            yield path, path.read_bytes().decode("utf-8", "replace")


def test_llm_sweep_on_two_nodes_pays_each_judgement_once_and_logs_under_one_parent(
    team: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster: RayCluster = team["cluster"]
    server: MlflowServer = team["mlflow"]
    assert len(cluster.alive_nodes()) == 2
    with JudgeServer(sample_labels()) as judge:
        first = sweep(team, judge, tmp_path / "alice", "alice")
        # each unique judgement paid for once across both nodes, though both jobs judged
        # the first two chunks of every sample at the same time
        asked = [json.dumps(r["body"]["messages"], sort_keys=True) for r in judge.requests]
        assert judge.stats.requests == unique_judgements() == len(set(asked))
        assert judge.stats.ok == judge.stats.requests
        tasks = cluster.tasks("_run_job")
        assert len(tasks) == len(TOP_K) and {t["state"] for t in tasks} == {"FINISHED"}
        assert len({t["node_id"] for t in tasks}) == 2  # one job on each node

        # another user, another HOME, a fresh sweep folder: everything comes from the cache
        judge.reset_stats()
        second = sweep(team, judge, tmp_path / "bob", "bob")
        assert judge.stats.requests == 0

    sweep_dirs = [tmp_path / "alice" / "sweep", tmp_path / "bob" / "sweep"]
    first_jobs, second_jobs = (job_summaries(d) for d in sweep_dirs)
    assert len(first_jobs) == len(second_jobs) == len(TOP_K)
    assert [j["mean"] for j in first_jobs] == [j["mean"] for j in second_jobs]
    assert sum(j["judge"]["cache_misses"] for j in second_jobs) == 0
    assert {j["judge"]["cache_hits"] for j in second_jobs} == {60, 109}  # top_k 2 and 4
    # no job used a SQLite cache file: neither the users' nor the nodes'
    assert not list(tmp_path.rglob("verdicts.sqlite"))
    assert not list(team["root"].rglob("verdicts.sqlite"))

    # on the team's server: two sweeps, each one parent with its jobs as children
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", team_mlflow.USER)
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", team_mlflow.USER_PASSWORD)
    runs = mlflow_runs.runs(server.url, EXPERIMENT)
    parents = {r.info.run_id: r for r in runs if r.data.tags.get("harness.sweep") == "parent"}
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 2 and len(children) == 2 * len(TOP_K) == len(runs) - 2
    for parent in parents.values():
        mine = [c for c in children if c.data.tags["mlflow.parentRunId"] == parent.info.run_id]
        assert sorted(c.info.run_name for c in mine) == [f"top_k={k}" for k in TOP_K]
        assert parent.data.tags["sweep.jobs"] == str(len(TOP_K))
        assert {c.info.status for c in mine} == {parent.info.status} == {"FINISHED"}
    assert {p.data.tags["hydra.sweep_dir"] for p in parents.values()} == set(map(str, sweep_dirs))

    # no credential anywhere: sweep folders, console, the server's params and tags, and
    # Ray's own session logs (the jobs' environment variables are logged there)
    seen = [(f"console of {r}", r.stdout + r.stderr) for r in (first, second)]
    seen += [(str(p), t) for d in sweep_dirs for p, t in texts_under(d)]
    seen += [(f"run {r.info.run_id}", json.dumps([r.data.params, r.data.tags])) for r in runs]
    ray_logs = list(texts_under(cluster.temp))
    # what the launcher forwards is logged (so a secret sent that way would show here)
    assert any("HARNESS_MLFLOW_PARENT_RUN_ID" in text for _, text in ray_logs)
    seen += ray_logs
    leaks = [where for where, text in seen for canary in CANARIES if canary in text]
    assert not leaks


def test_ray_cluster_launcher_sends_only_the_sweeps_own_settings(tmp_path: Path) -> None:
    env = {"RAY_ADDRESS": "head.example:6379", "HARNESS_MLFLOW_PARENT_RUN_ID": "abc123"}
    result = run_cli("hydra/launcher=ray_cluster", "--cfg", "hydra", "-p",
                     "hydra.launcher", "--resolve", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    launcher = yaml.safe_load(result.stdout)
    assert launcher["ray"]["init"] == {"address": "head.example:6379"}
    assert launcher["ray"]["remote"]["runtime_env"]["env_vars"] == {
        "HARNESS_SWEEP_KEYS": "",
        "HARNESS_MLFLOW_PARENT_RUN_ID": "abc123",
        # MLflow's default store, made absolute: the nodes' working folder is not this one
        "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/mlflow.db",
    }
