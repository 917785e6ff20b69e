"""Issue 24, classes 7 and 12 in ``harness.compare``: a deleted run (or experiment) is never
compared, nor gated on, without a word; Ctrl-C during a long bootstrap is one line and exit
130, never a traceback.

Real runs made by the real CLI (in this process) into a real SQLite MLflow store.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli
from helpers.cli import compare_cli

from harness.compare import compare
from harness.core.errors import TrackingError

SAMPLE = ROOT / "harness" / "data" / "sample_rag.jsonl"



@pytest.fixture
def store(tmp_path: Path) -> dict[str, Any]:
    """Experiment ``del``: id_ranked with metric.eps=0 (``base``) and 1 (``worse``: every
    query with a relevant chunk scores lower, so the gate fails)."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    result = run_cli("-m", "metric=id_ranked", "metric.eps=0,1", "dataset=jsonl",
                     f"dataset.path={SAMPLE}", "experiment_name=del",
                     f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path,
                     env={"MLFLOW_TRACKING_URI": uri})
    assert result.returncode == 0, result.stderr[-2000:]
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name("del")
    runs = {r.data.params["metric.eps"]: r for r in client.search_runs([exp.experiment_id])
            if r.data.tags.get("harness.sweep") != "parent"}
    return {"uri": uri, "client": client, "exp": exp, "base": runs["0"], "worse": runs["1"],
            "cwd": tmp_path}


@pytest.mark.slow
def test_a_deleted_baseline_is_never_gated_on_silently(
        store: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    base, worse = store["base"], store["worse"]
    args = (f"tracking_uri={store['uri']}", "fail_if_worse=true")
    # alive: the gate fails (exit 4), as the scores say
    code, _, _ = compare_cli(capsys, f"baseline={base.info.run_id}",
                             f"candidate={worse.info.run_id}", *args)
    assert code == 4
    store["client"].delete_run(base.info.run_id)
    # by id: refused, naming the run as deleted and how to restore it
    code, out, err = compare_cli(capsys, f"baseline={base.info.run_id}",
                                 f"candidate={worse.info.run_id}", *args)
    assert code == 2 and out == ""
    [line] = err.splitlines()
    assert line == (f"error: baseline={base.info.run_id}: run {base.info.run_id} is deleted "
                    "(in MLflow's trash): it is not compared; restore it (mlflow runs restore "
                    f"--run-id {base.info.run_id}) or name another run")
    # as the candidate, and by name: never found among the runs compared
    code, _, err = compare_cli(capsys, f"baseline={worse.info.run_id}",
                               f"candidate={base.info.run_id}", *args)
    assert code == 2 and err.startswith(f"error: candidate={base.info.run_id}: run ")
    code, _, err = compare_cli(capsys, f"baseline={base.info.run_name}",
                               f"candidate={worse.info.run_id}", *args)
    assert code == 2 and "no finished run has that id, name or overrides" in err
    # the Python API refuses it too
    with pytest.raises(Exception, match="no finished run|deleted"):
        compare(None, baseline=base.info.run_id, candidate=worse.info.run_id,
                tracking_uri=store["uri"], plots=False, log=False)
    # restored: compared again
    store["client"].restore_run(base.info.run_id)
    code, _, _ = compare_cli(capsys, f"baseline={base.info.run_id}",
                             f"candidate={worse.info.run_id}", *args)
    assert code == 4


@pytest.mark.slow
def test_a_deleted_experiment_is_not_compared(
        store: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    store["client"].delete_experiment(store["exp"].experiment_id)
    code, out, err = compare_cli(capsys, "experiment=del", f"tracking_uri={store['uri']}")
    assert code == 2 and out == ""
    assert err.startswith("error: experiment 'del' is deleted (in MLflow's trash)")
    with pytest.raises(TrackingError, match="is deleted"):
        compare("del", tracking_uri=store["uri"], plots=False, log=False)


@pytest.mark.slow
def test_ctrl_c_during_a_long_bootstrap_is_one_line(store: dict[str, Any]) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.compare", "experiment=del", "sweep=all",
         f"tracking_uri={store['uri']}", "bootstrap=50000000", "plots=false", "log=false"],
        cwd=store["cwd"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(6)  # MLflow's imports and the store; then the bootstrap runs for minutes
    assert proc.poll() is None
    proc.send_signal(signal.SIGINT)
    time.sleep(0.1)
    proc.send_signal(signal.SIGINT)  # a second Ctrl-C while the first is handled
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == ("interrupted (signal 2): harness.compare stopped; "
                                            "nothing more was logged to MLflow")


def test_a_store_that_cannot_be_opened_is_one_line_without_its_password(
        capsys: pytest.CaptureFixture[str]) -> None:
    # no PostgreSQL driver, or nothing listening on port 9: one line either way
    code, out, err = compare_cli(capsys, "experiment=x",
                                 "tracking_uri=postgresql://u:S3CRETpw@127.0.0.1:9/db")
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("error: ")
    assert "S3CRETpw" not in err and "Traceback" not in err
