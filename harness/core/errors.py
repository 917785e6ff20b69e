"""One exception tree for everything the harness reports to a user."""

from __future__ import annotations

import re
from collections.abc import Iterable

from harness.core.text import clip


class HarnessError(Exception):
    """Root of all errors the harness reports as one line, without a traceback."""


class ConfigError(HarnessError):
    """The composed configuration cannot run (unknown option, impossible combination)."""


class DatasetError(HarnessError):
    """A dataset file is missing or one of its records is malformed.

    The message always names the file, and where it applies the line (or, for a record of
    a JSON document, its 1-based ``row``) and the field.
    """

    def __init__(
        self,
        path: str,
        message: str,
        *,
        line: int | None = None,
        field: str | None = None,
        row: int | None = None,
    ) -> None:
        where = path if line is None else f"{path}:{line}"
        where = where if row is None else f"{path}: row {row}"
        what = message if field is None else f"field '{field}': {message}"
        super().__init__(f"{where}: {what}")
        self.path, self.line, self.field = path, line, field


class TrackingError(HarnessError):
    """The experiment tracker (MLflow) could not record the run."""


class RunFailed(HarnessError):
    """The run finished but breaks a limit the user set (e.g. ``run.max_unscored_frac``)."""


#: How a failed gate's line starts (after ``error: ``); a sweep tells gate failures by it.
GATE_FAILED = "gate failed: "


class GateFailed(HarnessError):
    """The run finished and is valid, but a CI gate failed (``run.fail_under``): exit 4."""

    def __init__(self, message: str, value: float | tuple[float, ...] = float("nan")) -> None:
        super().__init__(GATE_FAILED + message)
        self.value = value  # the job's objective: a sweep still ranks a gated job


def closest(name: str, options: Iterable[str]) -> str:
    """Return a ``" (did you mean 'x'?)"`` hint for a misspelt name, or ``""``."""
    import difflib

    match = difflib.get_close_matches(name, sorted(options), n=1, cutoff=0.6)
    return f" (did you mean '{match[0]}'?)" if match else ""


class JudgeError(HarnessError):
    """A judge call failed for good (after the transport and parse retries)."""


class JudgeUnavailable(HarnessError):
    """The judge endpoint stopped accepting connections, or refuses every call (the
    account's quota is spent): the run stops, keeping its rows."""


class ComponentFailed(HarnessError):
    """A component's code (a user's retriever or metric, a factory) raised, or answered
    something it must not: the run stops, keeping its rows, like a judge gone away."""


class JudgeParseError(JudgeError):
    """The judge answered, but not in the shape asked for."""


class JudgeReplyCut(JudgeError):
    """The reply stopped at the token limit (``finish_reason: length``) before it could be
    read: asking again with the same limit would cut it again."""


#: The longest line ``headline`` gives.
HEADLINE_CHARS = 300


def headline(message: str) -> str:
    """The first meaningful line of a (server's) multi-line message, for the console.

    A first line that is only a heading (``1 validation error:``, ``... for Model``, a bare
    field path) is joined to the lines after it; a FastAPI/pydantic error dict reads as
    ``loc: msg``.
    """
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    if not lines:
        return ""
    out = lines[0]
    for line in lines[1:4]:
        if not _is_heading(out):
            break
        out = f"{out.rstrip(':')}: {_pydantic_item(line)}"
    return clip(out, HEADLINE_CHARS)


def _is_heading(text: str) -> bool:
    last = text.rsplit(": ", 1)[-1]
    return (
        text.endswith(":")
        or re.search(r"\b\d+ validation errors?( for \w+)?$", text) is not None
        or re.fullmatch(r"[\w.\[\]-]+", last) is not None and "." in last
    )


def _pydantic_item(line: str) -> str:
    """``{'type': ..., 'loc': ('body', 'a', 'b'), 'msg': "..."}`` as ``a.b: ...``."""
    match = re.search(r"'loc': \(([^)]*)\), 'msg': (['\"])(.*?)\2(?:,|})", line)
    if match is None:
        return line
    parts = [p.strip().strip("'\"") for p in match.group(1).split(",") if p.strip()]
    if parts and parts[0] == "body":
        parts = parts[1:]
    return f"{'.'.join(parts)}: {match.group(3)}" if parts else match.group(3)


class Interrupted(KeyboardInterrupt):
    """The run was stopped by a signal (Ctrl-C's SIGINT, or SIGTERM)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum
