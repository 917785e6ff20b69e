"""``run_cli`` (the suite's in-process CLI runner) behaves as ``python -m harness`` does."""

import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import run_cli, run_cli_subprocess


def _normalised(text: str, cwd: Path) -> str:
    """``text`` without what differs between two runs: the folder, log times, durations."""
    text = text.replace(str(cwd), "CWD")
    text = re.sub(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\]", "[TIME]", text)
    return re.sub(r"(?m)^(  time +).*$", r"\1...", text)


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ["metric=non_llm", "run.limit=3"],  # a run: the printed summary
        ["-m", "metric=id_based,id_ranked", "hydra.sweep.dir=sweep"],  # Hydra's log lines
        ["metric=id_base"],  # Hydra's error, our hint, exit code 1
        ["run.limit=abc"],  # our one-line error, exit code 2
    ],
)
def test_in_process_run_prints_what_a_process_prints(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    inside = run_cli(*args, "tracking=none", cwd=tmp_path / "a")
    process = run_cli_subprocess(*args, "tracking=none", cwd=tmp_path / "b")
    assert inside.returncode == process.returncode
    a, b = tmp_path / "a", tmp_path / "b"
    assert _normalised(inside.stdout, a) == _normalised(process.stdout, b)
    assert _normalised(inside.stderr, a) == _normalised(process.stderr, b)


def test_in_process_run_leaves_the_process_as_it_was(tmp_path: Path) -> None:
    cwd, env, argv = os.getcwd(), dict(os.environ), list(sys.argv)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)}
    log_handlers = list(logging.getLogger().handlers)
    result = run_cli("run.limit=2", "tracking=none", cwd=tmp_path, env={"HARNESS_TEST_VAR": "1"})
    assert result.returncode == 0, result.stderr
    assert (os.getcwd(), dict(os.environ), sys.argv) == (cwd, env, argv)
    assert {s: signal.getsignal(s) for s in handlers} == handlers
    assert logging.getLogger().handlers == log_handlers


# an alarm that lands in a weakref callback is reported there and swallowed (the repeat
# alarm then stops the run): expected, not a leak
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_in_process_run_times_out_like_a_process(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"  # 400,000 samples: about 8 s of work on an idle machine
    path.write_text('{"retrieved_context_ids": ["a", "b"], "reference_context_ids": ["a"]}\n'
                    * 400_000, "utf-8")
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_cli("dataset=jsonl", f"dataset.path={path}", "tracking=none", cwd=tmp_path,
                timeout=0.3)
    assert time.monotonic() - started < 3.0  # stopped well before the work was done
    assert os.getcwd() != str(tmp_path)
    assert run_cli("run.limit=1", "tracking=none", cwd=tmp_path).returncode == 0  # Hydra reset
