"""One exception tree for everything the harness reports to a user."""

from __future__ import annotations

from collections.abc import Iterable


class HarnessError(Exception):
    """Root of all errors the harness reports as one line, without a traceback."""


class ConfigError(HarnessError):
    """The composed configuration cannot run (unknown option, impossible combination)."""


class DatasetError(HarnessError):
    """A dataset file is missing or one of its records is malformed.

    The message always names the file, and where it applies the line and the field.
    """

    def __init__(
        self, path: str, message: str, *, line: int | None = None, field: str | None = None
    ) -> None:
        where = path if line is None else f"{path}:{line}"
        what = message if field is None else f"field '{field}': {message}"
        super().__init__(f"{where}: {what}")
        self.path, self.line, self.field = path, line, field


class TrackingError(HarnessError):
    """The experiment tracker (MLflow) could not record the run."""


class RunFailed(HarnessError):
    """The run finished but breaks a limit the user set (e.g. ``run.max_unscored_frac``)."""


def closest(name: str, options: Iterable[str]) -> str:
    """Return a ``" (did you mean 'x'?)"`` hint for a misspelt name, or ``""``."""
    import difflib

    match = difflib.get_close_matches(name, sorted(options), n=1, cutoff=0.6)
    return f" (did you mean '{match[0]}'?)" if match else ""


class JudgeError(HarnessError):
    """A judge call failed for good (after the transport and parse retries)."""


class JudgeUnavailable(HarnessError):
    """The judge endpoint stopped accepting connections: the run stops, keeping its rows."""


class JudgeParseError(JudgeError):
    """The judge answered, but not in the shape asked for."""


class Interrupted(KeyboardInterrupt):
    """The run was stopped by a signal (Ctrl-C's SIGINT, or SIGTERM)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum
