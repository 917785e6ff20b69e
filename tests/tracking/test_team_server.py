"""A team's MLflow tracking server as the store (issue 16, item 2): ``mlflow server`` with a
PostgreSQL backend store, served artifacts and basic auth, started on 127.0.0.1
(``tests/helpers/mlflow_server.py``; one server for the module).

What lands there is compared with what a local SQLite store gets for the same command;
credentials come from the environment, or from the URI, and never reach a file, the
console or the server; a wrong password or a server that is down is one line. The tests
that start the server are ``heavy``; the one of a server that is down is not.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli, run_cli_subprocess, sample_labels, sample_rows
from helpers import mlflow_runs, postgres
from helpers.chroma_server import free_port
from helpers.judge_server import JudgeServer
from helpers.mlflow_server import USER_PASSWORD, MlflowServer, available


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    why = available()
    if why:
        pytest.fail(f"the team tests need a PostgreSQL server and MLflow's auth app: {why}")
    with postgres.Postgres() as pg, MlflowServer(pg, tmp_path_factory.mktemp("team")) as server:
        yield server


@pytest.fixture
def reader(team: MlflowServer, monkeypatch: pytest.MonkeyPatch) -> MlflowServer:
    """This process reads the server as the team member (``load_table`` searches with the
    global tracking URI)."""
    for key, value in team.env().items():
        monkeypatch.setenv(key, value)
    return team


def artifact_paths(c: Any, run_id: str, path: str | None = None) -> list[str]:
    """Every artifact file of the run, recursively."""
    found: list[str] = []
    for item in c.list_artifacts(run_id, path):
        found += artifact_paths(c, run_id, item.path) if item.is_dir else [item.path]
    return sorted(found)


def landed(uri: str, run_id: str) -> dict[str, Any]:
    """What a reader finds of a run: params, metric and tag names, artifact paths, the
    dataset input and the per-sample table (read with ``uri`` as the global store: the
    tests that call it use ``reader``, whose monkeypatch puts the variable back)."""
    os.environ["MLFLOW_TRACKING_URI"] = uri
    c = mlflow_runs.client(uri)
    run = c.get_run(run_id)
    table = c.load_table(run.info.experiment_id, "eval/samples.json", run_ids=[run_id])
    inputs = [(d.dataset.name, d.dataset.digest, d.dataset.source_type, d.dataset.source,
               d.dataset.profile, {t.key: t.value for t in d.tags})
              for d in run.inputs.dataset_inputs]
    return {
        "name": run.info.run_name, "status": run.info.status, "params": run.data.params,
        "metrics": sorted(run.data.metrics), "tags": sorted(run.data.tags),
        "artifacts": artifact_paths(c, run_id), "inputs": inputs,
        "table": table.to_json(orient="records"),
    }


@pytest.mark.heavy
def test_a_run_lands_on_the_server_as_in_the_local_store(
    tmp_path: Path, reader: MlflowServer, mlflow_store: str
) -> None:
    judge = ("metric=llm_with_reference", "judge=local", "judge.model=test-judge")
    with JudgeServer(sample_labels()) as server:
        args = (*judge, f"judge.base_url={server.base_url}", "experiment_name=team-single")
        local = run_cli(*args, cwd=tmp_path, env={"MLFLOW_TRACKING_URI": mlflow_store})
        paid = server.stats.requests
        remote = run_cli(*args, cwd=tmp_path, env=reader.env())  # $MLFLOW_TRACKING_URI
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr[-2000:]
    chunks = sum(len(r["retrieved_contexts"]) for r in sample_rows())
    assert paid == chunks and server.stats.requests == paid  # the rerun: the verdict cache
    assert f"mlflow store  {reader.url}" in remote.stdout
    assert "View run" not in remote.stdout  # MLflow's own links stay off the console
    [here] = mlflow_runs.runs(mlflow_store, "team-single")
    [there] = mlflow_runs.runs(reader.url, "team-single")
    assert there.info.run_id in remote.stdout
    want, got = landed(mlflow_store, here.info.run_id), landed(reader.url, there.info.run_id)
    assert got == want
    assert {"prompt.yaml", "report.html", "summary.json", "score_histogram.png",
            "precision_by_rank.png", "verdict_map.png"} <= set(got["artifacts"])
    assert "eval/samples.json" in got["artifacts"] and len(got["inputs"]) == 1
    assert there.data.metrics["mean"] == here.data.metrics["mean"] == remote.summary()["mean"]
    assert there.data.tags["prompt.sha256"] == here.data.tags["prompt.sha256"]
    assert there.info.artifact_uri.startswith("mlflow-artifacts:/")  # served by the server
    logged = mlflow_runs.client(reader.url).download_artifacts(
        there.info.run_id, "summary.json", str(tmp_path))
    assert Path(logged).read_text("utf-8") == (remote.out_dir / "summary.json").read_text()
    page = tmp_path / "from_server.html"
    done = subprocess.run(
        [sys.executable, "-m", "harness.report", there.info.run_id, f"tracking_uri={reader.url}",
         f"out={page}"],
        cwd=tmp_path, env={**os.environ}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"{remote.summary()['mean']:.4f}" in page.read_text("utf-8")


@pytest.mark.heavy
def test_a_sweep_lands_under_one_parent_and_compare_reads_it(
    tmp_path: Path, reader: MlflowServer, mlflow_store: str
) -> None:
    def sweep(store: str, folder: str) -> None:
        result = run_cli("-m", "metric=id_based,id_ranked", "experiment_name=team-sweep",
                         f"tracking.tracking_uri={store}", f"hydra.sweep.dir={tmp_path / folder}",
                         cwd=tmp_path, env=reader.env())
        assert result.returncode == 0, result.stderr[-2000:]
        assert "View run" not in result.stdout

    sweep(mlflow_store, "local")
    sweep(reader.url, "team")
    found = {}
    for uri in (mlflow_store, reader.url):
        runs = mlflow_runs.runs(uri, "team-sweep")
        [parent] = [r for r in runs if r.data.tags.get("harness.sweep") == "parent"]
        children = {r.data.tags["choice.metric"]: r for r in runs if r is not parent}
        assert {c.data.tags["mlflow.parentRunId"] for c in children.values()} == {
            parent.info.run_id}
        assert parent.data.tags["sweep.best_run_id"] == children["id_ranked"].info.run_id
        assert parent.data.tags["sweep.jobs"] == "2" and parent.info.status == "FINISHED"
        found[uri] = parent, children
    (here, here_children), (there, there_children) = found[mlflow_store], found[reader.url]
    assert there.data.params == here.data.params == {"metric": "id_based,id_ranked"}
    assert sorted(there.data.tags) == sorted(here.data.tags)
    assert sorted(there.data.metrics) == sorted(here.data.metrics)  # the best child's
    assert there.data.metrics["best_mean"] == here.data.metrics["best_mean"]
    assert round(there.data.metrics["best_mean"], 4) == 0.5641  # id_ranked's (README)
    for metric in ("id_based", "id_ranked"):
        assert landed(reader.url, there_children[metric].info.run_id) == landed(
            mlflow_store, here_children[metric].info.run_id)

    tables = {}
    for uri in (mlflow_store, reader.url):
        done = subprocess.run(
            [sys.executable, "-m", "harness.compare", "experiment=team-sweep",
             f"tracking_uri={uri}"],
            cwd=tmp_path, env={**os.environ, **reader.env()}, capture_output=True, text=True,
            timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        *tables[uri], tables[uri + "/logged"] = done.stdout.splitlines()
    assert tables[reader.url] == tables[mlflow_store]  # the same table, from either store
    assert "| id_ranked | 0.5641 | [0.4306, 0.6870] | 30       |" in "\n".join(tables[reader.url])
    assert tables[reader.url + "/logged"].endswith(f"to run {there.info.run_id}")
    logged = artifact_paths(mlflow_runs.client(reader.url), there.info.run_id, "compare")
    assert logged == ["compare/table.json", "compare/table.md"]


@pytest.mark.heavy
def test_credentials_in_the_uri_never_reach_a_file_the_console_or_the_server(
    tmp_path: Path, reader: MlflowServer
) -> None:
    uri = reader.url_with()  # http://alice:CANARY@127.0.0.1:PORT
    no_env = {"MLFLOW_TRACKING_USERNAME": "", "MLFLOW_TRACKING_PASSWORD": ""}
    single = run_cli("metric=id_based", "experiment_name=team-secrets",
                     f"tracking.tracking_uri={uri}", cwd=tmp_path, env=no_env)
    swept = run_cli("-m", "metric=id_based,id_ranked", "experiment_name=team-secrets",
                    f"tracking.tracking_uri={uri}", f"hydra.sweep.dir={tmp_path / 'sweep'}",
                    cwd=tmp_path, env=no_env)
    assert single.returncode == 0 and swept.returncode == 0, swept.stderr[-2000:]
    masked = reader.url.replace("http://", "http://***@")
    assert single.summary()["tracking"]["tracking_uri"] == masked
    assert f"mlflow store  {masked}" in single.stdout

    c = mlflow_runs.client(reader.url)
    runs = mlflow_runs.runs(reader.url, "team-secrets")
    assert len(runs) == 4  # the single run, the parent and two children landed
    experiment = c.get_experiment(runs[0].info.experiment_id)
    texts = [single.stdout, single.stderr, swept.stdout, swept.stderr, str(experiment.tags)]
    for run in runs:
        texts += [str(run.info), str(run.data.params), str(run.data.tags),
                  str(run.inputs.dataset_inputs)]
    downloads = Path(tempfile.mkdtemp(dir=tmp_path, prefix="artifacts-"))
    for run in runs:
        c.download_artifacts(run.info.run_id, "", str(downloads / run.info.run_id))
    assert len(list(downloads.rglob("summary.json"))) == 3
    dump = subprocess.run(  # everything the server stored, as its database holds it
        [str(postgres.bin_dir() / "pg_dump"), "-h", "127.0.0.1", "-p", str(reader.pg.port),
         "-U", reader.pg.user, "mlflow"],
        env={**os.environ, "PGPASSWORD": reader.pg.password}, capture_output=True, text=True,
        check=True)
    assert "team-secrets" in dump.stdout
    texts.append(dump.stdout)
    files = [p for folder in (tmp_path, reader.artifacts) for p in folder.rglob("*")
             if p.is_file()]
    assert any(p.name == "report.html" for p in files)
    for secret in (USER_PASSWORD, postgres.PASSWORD):
        assert not [t[max(0, t.find(secret) - 300):t.find(secret) + 50] for t in texts
                    if secret in t]
        assert not [p for p in files if secret.encode() in p.read_bytes()]


def one_error_line(result: Any) -> str:
    """Exit 2 and one ``error:`` line on stderr, no traceback; the line."""
    assert result.returncode == 2, (result.stdout[-2000:], result.stderr[-2000:])
    assert "Traceback" not in result.stderr
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    line: str = lines[0]
    return line


@pytest.mark.heavy
def test_a_wrong_password_is_one_line_naming_the_server_and_the_variables(
    tmp_path: Path, team: MlflowServer
) -> None:
    wrong = "wrong-password-1234"
    result = run_cli_subprocess("metric=id_based", "experiment_name=team-denied", cwd=tmp_path,
                                env=team.env(password=wrong))
    line = one_error_line(result)
    assert line.startswith(f"error: MLflow store {team.url}: the tracking server refused the "
                           "credentials (HTTP 401); set MLFLOW_TRACKING_USERNAME and ")
    assert "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD" in line
    assert "Only the logging failed" in line and (result.out_dir / "summary.json").is_file()
    assert wrong not in result.stdout + result.stderr

    anonymous = {"MLFLOW_TRACKING_URI": team.url}
    result = run_cli_subprocess("metric=id_based", "experiment_name=team-denied", cwd=tmp_path,
                                env=anonymous)
    assert "needs credentials and none were given (HTTP 401)" in one_error_line(result)

    bad_uri = team.url_with(password=wrong)
    result = run_cli_subprocess("-m", "metric=id_based,id_ranked", "experiment_name=team-denied",
                                f"tracking.tracking_uri={bad_uri}",
                                f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path)
    line = one_error_line(result)
    masked = team.url.replace("http://", "http://***@")
    assert line.startswith(f"error: MLflow store {masked}: the tracking server refused the "
                           "credentials")
    assert line.endswith("no job of the sweep has run")
    assert wrong not in result.stdout + result.stderr
    assert not (tmp_path / "sweep" / "0").exists()

    done = subprocess.run(
        [sys.executable, "-m", "harness.compare", "experiment=team-denied",
         f"tracking_uri={team.url}"],
        cwd=tmp_path, env={**os.environ, **team.env(password=wrong)}, capture_output=True,
        text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"error: MLflow store {team.url}: the tracking server refused")
    assert wrong not in done.stderr


@pytest.mark.slow
def test_a_server_that_is_down_is_one_line_within_seconds(tmp_path: Path) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    result = run_cli_subprocess("metric=id_based", f"tracking.tracking_uri={down}",
                                cwd=tmp_path)
    took = time.monotonic() - started
    line = one_error_line(result)
    assert line.startswith(f"error: MLflow store {down}: the tracking server does not answer "
                           "(Connection refused); start it, or set tracking.tracking_uri=URL")
    assert took < 60  # MLflow alone retries a refused connection for about four minutes


@pytest.mark.slow
def test_a_sweeps_parent_run_never_holds_credentials_given_on_the_command_line(
    tmp_path: Path, mlflow_store: str
) -> None:
    secret = "sweep-canary-5c2e9a"
    result = run_cli("-m", "metric=id_based,id_ranked", "experiment_name=team-parent",
                     f"judge.base_url=http://alice:{secret}@127.0.0.1:9/v1",
                     f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path,
                     env={"MLFLOW_TRACKING_URI": mlflow_store})
    assert result.returncode == 0, result.stderr[-2000:]
    runs = mlflow_runs.runs(mlflow_store, "team-parent")
    [parent] = [r for r in runs if r.data.tags.get("harness.sweep") == "parent"]
    assert parent.data.tags["sweep.overrides"].startswith(
        "metric=id_based,id_ranked experiment_name=team-parent "
        "judge.base_url=http://***@127.0.0.1:9/v1 ")
    assert len(runs) == 3
    assert not [r for r in runs if secret in str(r.data.tags) + str(r.data.params)]
