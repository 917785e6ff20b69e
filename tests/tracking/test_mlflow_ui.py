"""What the MLflow UI shows first (issue 25, item 7): the harness's own experiment
``harness`` beside MLflow's ``Default``, marked to open on the runs table with the key
metrics as columns; a run that spans the whole job; the console's way to the run.

Against real SQLite stores; the runs are made by the CLI (in process: a single run logs
through the background helper, a sweep's jobs through the in-process client)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from conftest import run_cli
from helpers import mlflow_runs

from harness.tracking.mlflow import ui

KIND = "mlflow.experimentKind"
VIEW = "mlflow.sharedViewState.harness"


def _row(stdout: str, label: str) -> str:
    """The value of the console summary's row ``label``."""
    found = [m.group(1) for line in stdout.splitlines()
             if (m := re.match(rf"^  {re.escape(label)}\s{{2,}}(.*)$", line))]
    assert len(found) == 1, (label, stdout)
    return found[0]


def _spans_the_job(run: object, out_dir: Path) -> None:
    """The run began when the job did (after Hydra wrote the job's config, before the
    samples were scored) and ended after its last output; it lasted at least the scoring."""
    info = run.info  # type: ignore[attr-defined]
    began = (out_dir / ".hydra" / "config.yaml").stat().st_mtime * 1000
    scored = (out_dir / "samples.jsonl").stat().st_mtime * 1000
    summary = json.loads((out_dir / "summary.json").read_text())
    assert began - 5 <= info.start_time <= scored, (began, info.start_time, scored)
    assert info.end_time >= (out_dir / "summary.json").stat().st_mtime * 1000 - 5
    assert info.end_time - info.start_time >= summary["duration_s"] * 1000


@pytest.mark.slow
def test_a_run_goes_to_the_harness_experiment_opened_on_its_runs_table(
    tmp_path: Path, mlflow_store: str
) -> None:
    before = int(time.time() * 1000)
    result = run_cli("metric=id_based", "hydra.run.dir=out", cwd=tmp_path,
                     env={"MLFLOW_TRACKING_URI": mlflow_store})
    after = int(time.time() * 1000)
    assert result.returncode == 0, result.stderr[-2000:]
    client = mlflow_runs.client(mlflow_store)
    exp = client.get_experiment_by_name("harness")
    assert exp is not None and exp.name != "Default"
    assert client.get_experiment("0").name == "Default"  # MLflow's own, left alone
    assert exp.tags[KIND] == "custom_model_development"
    view = json.loads(exp.tags[VIEW])
    assert "metrics.`mean`" in view["selectedColumns"]
    assert "metrics.`ndcg_at_10`" in view["selectedColumns"]
    assert view["searchFilter"] == "metrics.n_scored > 0"
    [run] = mlflow_runs.runs(mlflow_store, "harness", f"attributes.start_time >= {before}")
    assert before <= run.info.start_time <= run.info.end_time <= after
    _spans_the_job(run, tmp_path / "out")

    db = mlflow_store.removeprefix("sqlite:///")
    assert _row(result.stdout, "mlflow ui") == (
        f"mlflow ui --backend-store-uri sqlite:///{db} (serves http://127.0.0.1:5000)")
    e, r = exp.experiment_id, run.info.run_id
    assert _row(result.stdout, "mlflow view") == f"http://127.0.0.1:5000/#/experiments/{e}/runs/{r}"
    assert _row(result.stdout, "mlflow runs") == (
        f"http://127.0.0.1:5000/#/experiments/{e}/evaluation-runs")


@pytest.mark.slow
def test_a_sweeps_runs_span_their_jobs(tmp_path: Path, mlflow_store: str) -> None:
    result = run_cli("-m", "metric=id_based,id_ranked", "experiment_name=ui_sweep",
                     f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path,
                     env={"MLFLOW_TRACKING_URI": mlflow_store})
    assert result.returncode == 0, result.stderr[-2000:]
    children = [r for r in mlflow_runs.runs(mlflow_store, "ui_sweep")
                if r.data.tags.get("harness.sweep") != "parent"]
    assert len(children) == 2
    for run in children:
        _spans_the_job(run, tmp_path / "sweep" / run.data.tags["hydra.job_num"])
    exp = mlflow_runs.client(mlflow_store).get_experiment_by_name("ui_sweep")
    assert exp.tags[KIND] == "custom_model_development" and VIEW in exp.tags


def test_an_existing_experiment_gains_the_tags_it_lacks(mlflow_store: str) -> None:
    from harness.tracking.mlflow.store import ensure_experiment

    client = mlflow_runs.client(mlflow_store)
    bare = client.create_experiment("ui_old_default")  # as an older harness made it
    chosen = client.create_experiment("ui_genai", tags={KIND: "genai_development",
                                                        VIEW: '{"selectedColumns": []}'})
    assert ensure_experiment(mlflow_store, "ui_old_default") == bare
    assert ensure_experiment(mlflow_store, "ui_genai") == chosen
    tags = client.get_experiment(bare).tags
    assert tags[KIND] == "custom_model_development"
    assert json.loads(tags[VIEW]) == json.loads(ui.view_state())
    kept = client.get_experiment(chosen).tags  # the user's choice stays
    assert kept[KIND] == "genai_development" and kept[VIEW] == '{"selectedColumns": []}'


@pytest.mark.parametrize(("uri", "base"), [
    ("http://127.0.0.1:5000", "http://127.0.0.1:5000"),
    ("https://alice:s3cret@mlflow.example.org/team/", "https://mlflow.example.org/team"),
    ("http://127.0.0.1:8080/?token=s3cret#x", "http://127.0.0.1:8080"),
])
def test_a_server_gets_links_without_credentials(uri: str, base: str) -> None:
    rows = ui.ui_lines(uri, "7", "abc123")
    assert rows == [("mlflow view", f"{base}/#/experiments/7/runs/abc123"),
                    ("mlflow runs", f"{base}/#/experiments/7/evaluation-runs")]
    assert "s3cret" not in repr(rows)


def test_local_stores_get_the_ui_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    [(label, command), view, _] = ui.ui_lines("sqlite:///mlflow.db", "1", "r1")
    assert label == "mlflow ui" and command == (
        f"mlflow ui --backend-store-uri sqlite:///{tmp_path / 'mlflow.db'} "
        "(serves http://127.0.0.1:5000)")
    assert view == ("mlflow view", "http://127.0.0.1:5000/#/experiments/1/runs/r1")
    spaced = ui.ui_lines(f"sqlite:///{tmp_path / 'a b' / 'mlflow.db'}", "1", "r1")[0][1]
    assert f"'sqlite:///{tmp_path / 'a b' / 'mlflow.db'}'" in spaced  # quoted for the shell
    pg = ui.ui_lines("postgresql://bob:s3cret@127.0.0.1/mlflow", "1", "r1")[0][1]
    assert "s3cret" not in pg and "127.0.0.1/mlflow" in pg
    assert ui.ui_lines("databricks", "1", "r1") == []  # no local UI shows it
    files = ui.ui_lines("mlruns", "1", "r1")[0][1]  # a bare folder: MLflow's file store
    assert files.startswith(f"mlflow ui --backend-store-uri {tmp_path / 'mlruns'} ")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.browser
@pytest.mark.slow
def test_the_runs_link_opens_the_table_with_the_key_metrics(tmp_path: Path) -> None:
    """In headless Chromium against a real ``mlflow server``: the printed runs link opens
    the runs table (not the GenAI overview) with the key metrics as columns, and no other."""
    import os
    import signal
    import subprocess
    import sys
    import urllib.request

    from mlflow.entities import Metric
    from report.test_html import chromium
    from selenium.webdriver.support.wait import WebDriverWait

    from harness.tracking.mlflow.store import client, ensure_experiment

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    exp = ensure_experiment(uri, "harness")
    c = client(uri, write=True)
    for i in range(3):  # run2 failed before scoring anything
        run = c.create_run(exp, run_name=f"run{i}").info.run_id
        c.log_batch(run, metrics=[Metric(k, v, 0, 0) for k, v in
                                  {"mean": 0.5 + i / 10, "ndcg_at_10": 0.7,
                                   "n_scored": 0 if i == 2 else 30,
                                   "not_a_key_metric": 1.0}.items()])
        c.set_terminated(run, "FAILED" if i == 2 else "FINISHED")
    port = _free_port()
    mlflow = Path(sys.executable).with_name("mlflow")
    server = subprocess.Popen([str(mlflow), "server", "--backend-store-uri", uri, "--host",
                               "127.0.0.1", "--port", str(port), "--workers", "1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)  # its uvicorn workers end with it
    driver = None
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(240):
            try:
                urllib.request.urlopen(base, timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        driver = chromium()
        driver.set_window_size(2400, 1200)  # the grid draws only the columns in view
        driver.get(ui.view_link(base, exp))

        def headers(d: object) -> list[str]:
            cells = d.find_elements("css selector", "[role=columnheader]")  # type: ignore[attr-defined]
            return [e.text for e in cells if e.text]

        seen = WebDriverWait(driver, 60).until(lambda d: "ndcg_at_10" in headers(d) and
                                               headers(d))
        assert "mean" in seen and "Duration" in seen and "not_a_key_metric" not in seen
        assert "/runs" in driver.current_url and "overview" not in driver.current_url
        names = WebDriverWait(driver, 30).until(
            lambda d: {e.text for e in d.find_elements("css selector", "a") if  # type: ignore[attr-defined]
                       e.text.startswith("run")} or None)
        assert names == {"run0", "run1"}  # the run that scored nothing is filtered out
        body = driver.find_element("tag name", "body").text
        assert "2 matching runs" in body and "run2" not in body
    finally:
        if driver is not None:
            driver.quit()
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
