"""A run's output folder: checked before Hydra writes into it, claimed for one run, and
files that are either complete or clearly marked incomplete.

Rows stream into ``samples.jsonl.partial`` and are renamed to ``samples.jsonl`` when the
run has finished; the other files are written whole under a temporary name and renamed.
A folder that holds another run's outputs, or a run in progress, is never reused.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

from harness.errors import ConfigError, HarnessError

#: Present while a run writes into its folder (holds the writer's pid).
RUNNING = ".harness-running"
PARTIAL = ".partial"
#: Files whose presence means a folder already holds a run's outputs.
OUTPUTS = ("summary.json", "samples.jsonl", "samples.jsonl.partial", "agreement.jsonl")


class OutputError(HarnessError):
    """An output file could not be written (disk full, permissions, a vanished folder)."""


def reason(error: OSError) -> str:
    """The operating system's words for ``error`` (``No space left on device``)."""
    return error.strerror or os.strerror(error.errno or 0) or str(error)


def check_folder(folder: str | Path, setting: str) -> Path:
    """Create ``folder`` if needed and make sure a run can write there and has not already.

    Raises:
        ConfigError: naming ``setting`` (``hydra.run.dir``), the folder and the cause.
    """
    path = Path(folder).expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".harness-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise ConfigError(
            f"{setting}={folder}: cannot write the run's outputs there ({reason(e)}); "
            f"choose another folder, e.g. {setting}=outputs/my-run"
        ) from None
    used = [name for name in (*OUTPUTS, RUNNING) if (path / name).exists()]
    if used:
        what = "a run in progress" if used == [RUNNING] else f"an earlier run's {used[0]}"
        raise ConfigError(
            f"{setting}={folder}: the folder already holds {what}; a run never writes over "
            "another's outputs: choose a new folder (or leave it unset for a fresh one)"
        )
    return path


def claim(folder: Path, setting: str = "hydra.run.dir") -> None:
    """Mark ``folder`` as being written by this process (refused if another run has it,
    naming ``setting``: two runs started at once both pass ``check_folder``)."""
    marker = folder / RUNNING
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        raise ConfigError(
            f"{setting}={folder}: another run is writing there ({marker} exists); a run never "
            "writes over another's outputs: choose a new folder (or leave it unset for a fresh one)"
        ) from None
    except OSError as e:
        raise OutputError(f"cannot write into {folder} ({reason(e)})") from None
    with os.fdopen(fd, "w") as handle:
        handle.write(str(os.getpid()))


def release(folder: Path) -> None:
    """The run has ended: the folder is no longer being written."""
    with contextlib.suppress(OSError):
        (folder / RUNNING).unlink()


def write_text(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` whole: a temporary name first, then an atomic rename."""
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(text, "utf-8")
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise OutputError(f"cannot write {path} ({reason(e)}){_hint(e)}") from None
    return path


@contextlib.contextmanager
def streamed(path: Path) -> Iterator[Path]:
    """Rows go to ``PATH.partial``; the caller renames it with ``finalise`` when done.

    An ``OSError`` while writing (disk full) becomes one ``OutputError`` naming the file;
    the partial file stays, clearly incomplete by its name.
    """
    partial = partial_of(path)
    try:
        yield partial
    except OSError as e:
        raise OutputError(
            f"cannot write {partial} ({reason(e)}){_hint(e)}; the rows written so far are "
            "kept there"
        ) from None


def partial_of(path: Path) -> Path:
    """Where the rows of ``path`` stream to until the run has finished."""
    return path.with_name(path.name + PARTIAL)


def finalise(path: Path) -> Path:
    """Rename the finished ``PATH.partial`` to ``PATH``."""
    try:
        os.replace(partial_of(path), path)
    except OSError as e:
        raise OutputError(f"cannot rename {partial_of(path)} to {path} ({reason(e)})") from None
    return path


def _hint(error: OSError) -> str:
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return "; free some space or write elsewhere (hydra.run.dir=...)"
    if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "; choose a writable folder (hydra.run.dir=...)"
    return ""


#: Characters ``str.splitlines`` breaks on that JSON leaves raw: escaped in rows.
_LINE_BREAKS = {c: f"\\u{c:04x}" for c in (0x85, 0x2028, 0x2029)}
_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode


def json_line(row: Any) -> str:
    """One JSON-lines row (no newline): UTF-8 kept, but line separators escaped, so readers
    that split lines on them do not cut the row."""
    line = _ENCODE(row)
    return line if line.isascii() else line.translate(_LINE_BREAKS)


def strip_keys(path: Path, keys: Collection[str]) -> None:
    """Remove ``keys`` from every JSON row of the rows file ``path`` (rewritten whole)."""
    if not keys:
        return
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    try:
        with open(path, encoding="utf-8") as src, open(tmp, "w", encoding="utf-8") as dst:
            for line in src:
                row = json.loads(line)
                dst.write(json_line({k: v for k, v in row.items() if k not in keys}) + "\n")
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise OutputError(f"cannot rewrite {path} ({reason(e)}){_hint(e)}") from None
