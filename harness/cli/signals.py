"""Signals, the same for every command (``harness`` and ``harness compare|report|cache``,
their old forms too): Ctrl-C (SIGINT), SIGTERM (a scheduler, ``kill``) and SIGHUP (a
closed terminal or SSH session) raise ``Interrupted``, which each command turns into one line
and exit code 128 + the signal's number. A signal repeated while the first is being handled
(two Ctrl-C 100 ms apart, or SIGTERM sent to the whole process group after Ctrl-C) is ignored
for ``REPEAT_S`` seconds, so that the clean stop it started is not itself interrupted, and
once the command exits because of one, every later one is (``exiting``).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

from harness.core.boundary import ran
from harness.core.errors import Interrupted

#: Seconds after a signal during which the same or another stop signal is ignored.
REPEAT_S = 3.0
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_last: list[float] = []


def _on_signal(signum: int, frame: FrameType | None) -> None:
    now = time.monotonic()
    if _last and now - _last[0] < REPEAT_S:
        return  # the first one is being handled: let it finish cleanly
    _last[:] = [now]
    raise Interrupted(signum)


def install() -> None:
    """Handle the stop signals in this process (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        return
    _last.clear()
    for signum in SIGNALS:
        signal.signal(signum, _on_signal)


def exiting(error: KeyboardInterrupt) -> int:
    """The command ends because of ``error``: further stop signals are ignored from now on
    (Python puts the default handlers back while it shuts down, and a second Ctrl-C then
    would kill the process, exit -2); return the exit code, 128 + the signal's number."""
    if threading.current_thread() is threading.main_thread():
        for signum in SIGNALS:
            signal.signal(signum, signal.SIG_IGN)
    return 128 + signal_number(error)


def signal_number(error: KeyboardInterrupt) -> int:
    """The signal behind ``error`` (a plain ``KeyboardInterrupt``: SIGINT)."""
    return error.signum if isinstance(error, Interrupted) else int(signal.SIGINT)


@contextlib.contextmanager
def stops(command: str, what: str = "nothing was written") -> Iterator[None]:
    """Install the handlers; a signal ends ``command`` with one line saying ``what`` became
    of its work, and exit code 128 + the signal's number."""
    main = threading.current_thread() is threading.main_thread()
    previous = {s: signal.getsignal(s) for s in SIGNALS} if main else {}
    install()
    try:
        yield
    except KeyboardInterrupt as e:
        previous.clear()  # the process ends: signals stay ignored (``exiting``)
        signum = signal_number(e)
        print(f"interrupted (signal {signum}): {command} stopped; {what}", file=sys.stderr)
        sys.exit(exiting(e))
    finally:  # a command called in process (a test, a script) leaves the handlers as found
        for signum, handler in previous.items():
            if handler is not None:
                signal.signal(signum, handler)


def stopped_line(error: KeyboardInterrupt, out_dir: Path) -> str:
    """The one line of a job stopped by a signal: what was running (the retriever, the
    judge, the metric, the writer), how many rows were kept and where, and what became of
    the tracked run (``harness.run.record.tracked`` marks the error with it)."""
    from harness.run.outputs.rows import kept

    signum = signal_number(error)
    doing = running(error)
    verb = "were" if doing and doing.startswith("the judges ") else "was"
    line = f"interrupted (signal {signum}){f' while {doing} {verb} running' if doing else ''}: "
    partials = sorted(out_dir.glob("*.jsonl.partial"))
    finished = [p for p in sorted(out_dir.glob("*.jsonl")) if p.name != "harness.jsonl"]
    if partials:
        line += "; ".join(kept(p) for p in partials)
    elif finished:
        line += f"every row was scored and is in {finished[0]}"
    else:
        line += f"no row was scored; nothing is kept in {out_dir}"
    run = getattr(error, "stopped_run", None) or {}
    if run.get("backend") == "mlflow":
        line += "; the MLflow run is marked KILLED"
    elif run.get("backend") not in (None, "none"):
        line += f"; the {run['backend']} run is marked KILLED"
    if run.get("judged"):
        line += "; the judge's verdicts so far are in its cache, so rerunning resumes"
    return line


#: ``(file ending, function or "")`` -> how the line names what ran there (innermost wins).
_ROLES = (("harness/run/loop.py", "evaluate"), ("harness/run/loop.py", "write"),
          ("harness/run/outputs/", ""), ("harness/run/record.py", "finish"),
          ("harness/shards/__init__.py", "score_shards"))


def running(error: BaseException) -> str | None:
    """What ``error`` (a signal) stopped: the part it came through first, as the part named
    itself (``harness.core.boundary.running``: ``retriever mypkg.search.Slow``, ``the judge of
    metric llm_with_reference``, ``the judges of metrics a, b``), else from the frames it
    passed through (``metric id_ranked``, ``the writer of the outputs``, ``the sharded
    scoring``); ``None``: none of them."""
    named = ran(error)
    if named is not None:
        return named
    found: str | None = None
    tb = error.__traceback__
    while tb is not None:
        code, local = tb.tb_frame.f_code, tb.tb_frame.f_locals
        path = code.co_filename.replace("\\", "/")
        for ending, function in _ROLES:
            if "/" + ending in path and function in ("", code.co_name):
                found = _role(ending, code.co_name, local) or found
                break
        tb = tb.tb_next
    return found


def _role(ending: str, function: str, local: dict[str, object]) -> str | None:
    if function == "evaluate":  # the scoring loop: its metric (once it is scoring)
        return str(local["component"]) if "component" in local else None
    if ending == "harness/shards/__init__.py":
        return "the sharded scoring"
    return "the writer of the outputs"
