"""Issue 24, class 7: every command handles the stop signals, and so does the helper process
they share (the background MLflow logger). SIGTERM or SIGHUP sent to the whole *process
group* (a scheduler, a closed terminal) marks the MLflow run KILLED, as Ctrl-C does; a second
Ctrl-C while the first is handled never reaches the default handler (exit -2). Exit codes:
128 + the signal's number, one ``interrupted`` line, never a traceback.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import sample_labels
from helpers import mlflow_runs
from helpers.cli import cli_env
from helpers.judge_server import JudgeServer

from harness.cli import signals
from harness.core.errors import Interrupted


def test_a_repeated_signal_is_ignored_while_the_first_is_handled() -> None:
    signals._last.clear()
    with pytest.raises(Interrupted) as e:
        signals._on_signal(signal.SIGTERM, None)
    assert e.value.signum == signal.SIGTERM
    assert signals._on_signal(signal.SIGINT, None) is None  # within REPEAT_S: ignored
    signals._last[:] = [time.monotonic() - signals.REPEAT_S - 1]
    with pytest.raises(Interrupted):  # later, a new one stops again
        signals._on_signal(signal.SIGINT, None)
    signals._last.clear()


@pytest.mark.parametrize(("raised", "code"), [(KeyboardInterrupt(), 130),
                                              (Interrupted(15), 143), (Interrupted(1), 129)])
def test_the_small_commands_end_a_signal_in_one_line(
        raised: KeyboardInterrupt, code: int, capsys: pytest.CaptureFixture[str]) -> None:
    before = {s: signal.getsignal(s) for s in signals.SIGNALS}
    try:
        with pytest.raises(SystemExit) as e, signals.stops("harness.report", "nothing written"):
            raise raised
        assert e.value.code == code
        assert capsys.readouterr().err == (f"interrupted (signal {code - 128}): harness.report "
                                           "stopped; nothing written\n")
        # the process is exiting: later signals are ignored, never the default handler's
        assert all(signal.getsignal(s) == signal.SIG_IGN for s in signals.SIGNALS)
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
    # a command that ends normally leaves the handlers as it found them
    with signals.stops("harness.cache"):
        pass
    assert {s: signal.getsignal(s) for s in signals.SIGNALS} == before


def start_group(tmp_path: Path, server: JudgeServer, store: str,
                name: str) -> subprocess.Popen[str]:
    """``python -m harness`` judging for a few seconds, in its own process group (as a
    scheduler or a terminal starts it), with Ctrl-C's SIGINT at its default."""
    args = ["metric=llm_with_reference", "judge=local", f"judge.base_url={server.base_url}",
            "judge.model=test-judge", "judge.max_concurrency=4", f"experiment_name={name}",
            f"hydra.run.dir={tmp_path / name}", "run.progress=false"]
    return subprocess.Popen(
        [sys.executable, "-m", "harness", *args], cwd=tmp_path,
        env=cli_env({"MLFLOW_TRACKING_URI": store}), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def wait_for_judging(server: JudgeServer) -> None:
    deadline = time.monotonic() + 60
    while server.stats.ok < 30 and time.monotonic() < deadline:
        time.sleep(0.01)


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_the_process_group_marks_the_run_killed(
        tmp_path: Path, mlflow_store: str, signum: int) -> None:
    name = f"group_{signum}"
    with JudgeServer(sample_labels(), latency_ms=150, concurrency=4) as server:
        proc = start_group(tmp_path, server, mlflow_store, name)
        wait_for_judging(server)
        os.killpg(proc.pid, signum)  # the helper process gets it too
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    assert f"interrupted (signal {signum})" in err and "Traceback" not in err
    [run] = mlflow_runs.runs(mlflow_store, name)
    assert run.info.status == "KILLED"


@pytest.mark.slow
def test_two_ctrl_c_100_ms_apart(tmp_path: Path, mlflow_store: str) -> None:
    with JudgeServer(sample_labels(), latency_ms=150, concurrency=4) as server:
        proc = start_group(tmp_path, server, mlflow_store, "twice")
        wait_for_judging(server)
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    [line] = [x for x in err.splitlines() if x.startswith("interrupted")]  # the job's, once
    assert line.startswith("interrupted (signal 2) while the judge of metric "
                           "llm_with_reference was running: ")
    assert "the MLflow run is marked KILLED" in line
    [run] = mlflow_runs.runs(mlflow_store, "twice")
    assert run.info.status == "KILLED"


@pytest.mark.slow
def test_a_terminated_sweep_parent_is_killed_not_finished(
        tmp_path: Path, mlflow_store: str) -> None:
    with JudgeServer(sample_labels(), latency_ms=150, concurrency=4) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness", "-m", "metric=llm_with_reference", "judge=local",
             f"judge.base_url={server.base_url}", "judge.model=test-judge",
             "judge.max_concurrency=4", "run.limit=30,31", "experiment_name=sweep_term",
             f"hydra.sweep.dir={tmp_path / 'sweep'}", "run.progress=false"],
            cwd=tmp_path, env=cli_env({"MLFLOW_TRACKING_URI": mlflow_store}),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        wait_for_judging(server)
        os.killpg(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "Traceback" not in err
    runs = mlflow_runs.runs(mlflow_store, "sweep_term")
    [parent] = [r for r in runs if r.data.tags.get("harness.sweep") == "parent"]
    assert parent.info.status == "KILLED"
    assert {r.info.status for r in runs if r is not parent} <= {"KILLED"}
    assert not (tmp_path / "sweep" / "report.html").exists()
