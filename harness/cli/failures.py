"""What Hydra raises before a job starts, as one ``error:`` line and an exit code.

Hydra prints a traceback for anything that is not its compact composition error: a YAML
syntax error in the user's own config file, a callback or logging factory its execution
whitelist refuses, a logging config that does not configure. These are config problems
with a file, line or key to name. A job's own crash (the task function raised) is left to
Hydra's report, as are its compact composition errors (led by a did-you-mean hint).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from types import TracebackType
from typing import NoReturn

#: Exit codes: Hydra could not compose the config; a setting was refused or is bad.
COMPOSITION, BAD_CONFIG = 1, 2


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _frames(error: BaseException) -> list[tuple[str, str]]:
    """``(file, function)`` of every frame the errors of the chain passed through."""
    out = []
    for ex in _chain(error):
        tb: TracebackType | None = ex.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code
            out.append((code.co_filename.replace("\\", "/"), code.co_name))
            tb = tb.tb_next
    return out


def _flat(text: str) -> str:
    """A multi-line message as one line, without Hydra's links and key notes."""
    lines = [x.strip() for x in text.strip().splitlines()]
    kept = [x for x in lines if x and not x.startswith(("See https://", "full_key:"))]
    return " ".join(kept)


def _message(error: BaseException) -> str:
    """``error``'s message and its cause's, as one line."""
    text = _flat(str(error))
    cause = error.__cause__
    if cause is not None and _flat(str(cause)) not in text:
        text = f"{text}: {_flat(str(cause))}"
    return text


def _refused(text: str) -> str | None:
    """The target Hydra's execution whitelist refused, named in ``text``."""
    found = re.search(r"Target '([^']+)'", text)
    return found.group(1) if found and "whitelist" in text else None


_LOGGING_PART = re.compile(r"Unable to configure (formatter|handler|filter|logger|root logger)"
                           r"(?: '([^']+)')?")


def _logging_key(base: str, text: str) -> str:
    found = _LOGGING_PART.search(text)
    if not found:
        return base
    part, name = found.groups()
    return f"{base}.root" if part == "root logger" else f"{base}.{part}s.{name}"


def _full_key(error: BaseException) -> str | None:
    for ex in _chain(error):
        found = re.search(r"full_key: (\S+)", str(ex))
        if found:
            return found.group(1)
        for note in getattr(ex, "__notes__", ()):
            if note.startswith("full_key: "):
                return str(note.removeprefix("full_key: "))
    return None


def _yaml_line(error: BaseException) -> str:
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    problem = getattr(error, "problem", None) or getattr(error, "context", None) or str(error)
    context = getattr(error, "context", None)
    what = f"{context}: {problem}" if context and context != problem else str(problem)
    if mark is None:
        return f"a config file is not valid YAML ({_flat(what)})"
    return (f"{mark.name}, line {mark.line + 1}, column {mark.column + 1}: not valid YAML "
            f"({_flat(what)}); fix the file")


def one_line(error: BaseException) -> tuple[str, int] | None:
    """The error line (without ``error:``) and exit code for ``error``, raised while Hydra
    set up a run (composition, callbacks, logging); ``None`` to leave it to Hydra."""
    import yaml
    from hydra._internal.utils import _job_traceback
    from hydra.errors import CompactHydraException, HydraException
    from omegaconf.errors import OmegaConfBaseException

    from harness.core.errors import HarnessError

    for ex in _chain(error):
        if isinstance(ex, yaml.YAMLError):
            return _yaml_line(ex), COMPOSITION
        if isinstance(ex, HarnessError):  # ours, raised in Hydra's hands (a resolver)
            return str(ex), BAD_CONFIG
    frames = _frames(error)
    if any(f.endswith("hydra/_internal/callbacks.py") for f, _ in frames):
        key = _full_key(error) or "hydra.callbacks"
        text = _message(error)
        target = _refused(text)
        if target is not None:
            return (f"{key}._target_: {target!r} is refused: a Hydra callback may only be one "
                    "of the harness's own; nothing was called"), BAD_CONFIG
        return f"{key}: {text}", BAD_CONFIG
    if any(f.endswith(("logging/config.py", "hydra/_internal/logging_config.py"))
           for f, _ in frames):
        job = any(f.endswith("hydra/core/utils.py") and name in ("run_job", "_run_job")
                  for f, name in frames)
        text = _message(error)
        key = _logging_key("hydra.job_logging" if job else "hydra.hydra_logging", text)
        target = _refused(text)
        if target is not None:
            return (f"{key}: {target!r} is refused: a logging config may not name code to "
                    "call ('()' factories, classes outside logging); nothing was called"
                    ), BAD_CONFIG
        return f"{key}: {_LOGGING_PART.sub('', text).lstrip(': ')}", BAD_CONFIG
    if any(f.endswith("hydra/core/plugins.py") for f, _ in frames):
        names = {name for _, name in frames}
        key = ("hydra.launcher" if "instantiate_launcher" in names else "hydra.sweeper"
               if "instantiate_sweeper" in names else "hydra")
        return (f"{key}._target_: {_flat(str(error))}; choose an option of hydra/sweeper or "
                "hydra/launcher (nothing was called)"), BAD_CONFIG
    if _job_traceback(error.__traceback__) is not None or isinstance(
            error, CompactHydraException):
        return None
    for ex in _chain(error):
        full_key = getattr(ex, "full_key", None)
        if isinstance(ex, OmegaConfBaseException) and full_key:
            first = str(ex).strip().splitlines()[0] if str(ex).strip() else type(ex).__name__
            return f"{full_key}: {first}", BAD_CONFIG
    if isinstance(error, (HydraException, OmegaConfBaseException)):
        return _flat(str(error)) or type(error).__name__, COMPOSITION
    # anything else Hydra raised before a job: one line; the traceback on request
    return (f"{type(error).__name__}: {_flat(str(error))} (before any job ran; set "
            "HYDRA_FULL_ERROR=1 for the traceback)"), COMPOSITION


def hydra_report(error: Exception) -> NoReturn:
    """Hydra's own report of ``error`` (as without ``HYDRA_FULL_ERROR``), then exit 1."""
    from hydra._internal.utils import run_and_report

    def again() -> None:
        raise error

    saved = os.environ.pop("HYDRA_FULL_ERROR", None)
    try:
        run_and_report(again)
    finally:
        if saved is not None:
            os.environ["HYDRA_FULL_ERROR"] = saved
    raise SystemExit(1)  # run_and_report exits; kept for the type checker
