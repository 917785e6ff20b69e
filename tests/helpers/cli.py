"""Running ``python -m harness ARGS``: in the pytest process, or in a child process.

``run_cli`` calls ``harness.cli.main.main()`` in this process with everything a child process
would get made to look the same: ``sys.argv``, the environment, the working directory,
stdout and stderr (captured, Hydra's log lines included: Hydra points its log handlers at
``sys.stdout`` when a run starts), the exit code (``SystemExit``), and a fresh Hydra. What
the run changes is put back afterwards: signal handlers (``cli.main`` installs one for
SIGTERM), log handlers, Hydra's global state. It saves the interpreter start-up and the
imports (about 0.7 s a run), so the bulk of the suite uses it.

``run_cli_subprocess`` is the real thing, for what only a process shows: signals, start-up
(``python -m harness`` itself), MLflow's background logging. Tests that use it are marked
``slow``.

Known difference: a run that dies with an exception Hydra does not handle gives exit code 1
and the traceback on stderr either way, but under a debugger or a coverage tracer Hydra
re-raises instead of printing its one-line report (``hydra._internal.utils.is_under_debugger``),
so such a test sees the traceback rather than Hydra's short message.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from helpers.paths import ROOT

#: ``sys.argv[0]`` of ``python -m harness``.
MAIN = str(ROOT / "harness" / "__main__.py")


@dataclass
class CliResult:
    """A finished CLI run."""

    returncode: int
    stdout: str
    stderr: str
    out_dir: Path

    def summary(self) -> dict[str, Any]:
        """The run's ``summary.json``."""
        summary: dict[str, Any] = json.loads((self.out_dir / "summary.json").read_text("utf-8"))
        return summary

    def rows(self) -> list[dict[str, Any]]:
        """The run's ``samples.jsonl``."""
        text = (self.out_dir / "samples.jsonl").read_text("utf-8")
        return [json.loads(line) for line in text.splitlines()]


def fresh_out(cwd: Path) -> Path:
    """``cwd/out`` for a folder's first run, then ``out-2``, ``out-3``, ...: a run never
    writes into a folder that holds another run's outputs (it refuses to)."""
    out, n = cwd / "out", 1
    while out.exists():
        n += 1
        out = cwd / f"out-{n}"
    return out


def cli_args(args: tuple[str, ...], out_dir: Path) -> list[str]:
    """``args`` with the output directory pinned (unless ``args`` pin it) and the progress
    bar off."""
    pinned = any(a.startswith("hydra.run.dir=") for a in args)
    return [*args, *([] if pinned else [f"hydra.run.dir={out_dir}"]), "run.progress=false"]


def out_dir_of(args: tuple[str, ...], cwd: Path) -> Path:
    """Where a run with ``args`` writes: the folder ``args`` pin, else a fresh one."""
    for arg in args:
        if arg.startswith("hydra.run.dir="):
            return Path(arg.partition("=")[2])
    return fresh_out(cwd)


def cli_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """This process's environment without ``MLFLOW_TRACKING_URI``, plus ``env``."""
    full = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    full.update(env or {})
    return full


def run_cli_subprocess(
    *args: str, cwd: Path, env: Mapping[str, str] | None = None, timeout: float = 120
) -> CliResult:
    """Run ``python -m harness ARGS`` in a child process, with outputs in ``cwd/out``."""
    out_dir = out_dir_of(args, cwd)
    proc = subprocess.run(
        [sys.executable, "-m", "harness", *cli_args(args, out_dir)],
        cwd=cwd,
        env=cli_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr, out_dir)


def start_cli(
    *args: str, cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.Popen[str]:
    """Start ``python -m harness ARGS`` (outputs in ``fresh_out(cwd)``), stdout and stderr
    piped, as a foreground command would be: with Ctrl-C's SIGINT not ignored even when the
    tests themselves run in the background (a shell starts ``cmd &`` with SIGINT ignored, and
    children inherit that)."""
    return subprocess.Popen(
        [sys.executable, "-m", "harness", *cli_args(args, fresh_out(cwd))],
        cwd=cwd,
        env=cli_env(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_cli(
    *args: str, cwd: Path, env: Mapping[str, str] | None = None, timeout: float = 120
) -> CliResult:
    """Run ``python -m harness ARGS`` in this process, with outputs in ``fresh_out(cwd)``.

    Raises ``subprocess.TimeoutExpired`` after ``timeout`` seconds (main thread only), as
    the subprocess version does. Not thread-safe: one run at a time.

    MLflow logging is as the CLI does it: a single run logs from the helper process that
    ``cli.main`` starts (``tracking.background=auto``), so the store is opened afresh, as
    by a new process; a multirun logs from this process.
    """
    out_dir = out_dir_of(args, cwd)
    argv = [MAIN, *cli_args(args, out_dir)]
    stdout, stderr = io.StringIO(), io.StringIO()
    with _as_a_process(argv, cli_env(env), cwd, stdout, stderr), _deadline(argv, timeout):
        code = _call_main()
    return CliResult(code, stdout.getvalue(), stderr.getvalue(), out_dir)


def _call_main() -> int:
    """``harness.cli.main.main()``; its exit code as the interpreter would report it."""
    from harness.cli.main import main

    try:
        main()
    except SystemExit as e:
        return _exit_code(e.code)
    except Exception:  # the interpreter prints it and exits 1
        traceback.print_exc()
        return 1
    return 0


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message"): printed, exit code 1
    return 1


class _Deadline(BaseException):
    """Raised in the main thread when an in-process run overruns its timeout (a
    ``BaseException``, so that no ``except Exception`` in the harness swallows it)."""


#: After the deadline, the alarm repeats at this interval until the run stops: an alarm that
#: lands in a finalizer (``__del__``, a weakref callback) is printed and swallowed there.
_REPEAT_S = 0.2


@contextlib.contextmanager
def _deadline(argv: list[str], timeout: float) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    armed = [True]

    def expire(signum: int, frame: FrameType | None) -> None:
        if armed[0]:
            raise _Deadline

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, timeout, _REPEAT_S)
    try:
        yield
    except _Deadline:
        armed[0] = False
        raise subprocess.TimeoutExpired(argv, timeout) from None
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def _as_a_process(
    argv: list[str], env: dict[str, str], cwd: Path, stdout: io.StringIO, stderr: io.StringIO
) -> Iterator[None]:
    """Give the code inside the argv, environment, cwd and streams of ``python -m harness``,
    with a fresh Hydra; put everything back afterwards."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig

    saved_argv, saved_env, saved_cwd = sys.argv, dict(os.environ), os.getcwd()
    saved_streams = sys.stdout, sys.stderr
    saved_signals = {
        s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    }
    saved_path = list(sys.path)
    saved_hydra_config = HydraConfig.instance().cfg
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    GlobalHydra.instance().clear()
    try:
        sys.argv = argv
        _replace_environ(env)
        os.chdir(cwd)
        sys.stdout, sys.stderr = stdout, stderr
        yield
    finally:
        sys.stdout, sys.stderr = saved_streams
        os.chdir(saved_cwd)
        _replace_environ(saved_env)
        sys.argv = saved_argv
        for signum, previous in saved_signals.items():
            if previous is not None:
                signal.signal(signum, previous)
        sys.path[:] = saved_path
        # Hydra's per-run handlers (console on our StringIO, a file in the output dir)
        for handler in root.handlers:
            if handler not in saved_handlers:
                handler.close()
        root.handlers[:] = saved_handlers
        root.setLevel(saved_level)
        GlobalHydra.instance().clear()
        HydraConfig.instance().cfg = saved_hydra_config


def _replace_environ(env: Mapping[str, str]) -> None:
    for key in [k for k in os.environ if k not in env]:
        del os.environ[key]
    os.environ.update(env)


def compare_cli(capsys: Any, *args: str) -> tuple[int, str, str]:
    """``python -m harness.compare ARGS`` in this process: its exit code, stdout and stderr
    (``capsys``: pytest's fixture, read and reset)."""
    from harness.cli.compare import main as compare_main

    code = 0
    try:
        compare_main(list(args))
    except SystemExit as e:
        code = int(e.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def harness_command(monkeypatch: Any, capsys: Any, *args: str) -> tuple[int, str, str]:
    """``harness ARGS`` (the installed command, ``harness.cli.commands.main``) in this
    process: exit code, stdout, stderr."""
    from harness.cli import commands

    monkeypatch.setattr(sys, "argv", ["harness", *args])
    try:
        commands.main()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else int(e.code is not None)
    out = capsys.readouterr()
    return code, out.out, out.err
