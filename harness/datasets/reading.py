"""Opening and reading dataset files and checking the settings that name them.

Only regular files are read (a named pipe would block forever, and the data is read more
than once), and every operating-system error becomes a one-line ``DatasetError`` naming
the file, and the line where it is known.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from harness.core.errors import ConfigError, DatasetError
from harness.datasets.fields import text_problem

BLOCK = 1 << 20

#: What a file that is not a regular file is, by ``stat.S_IFMT``.
_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a named pipe (FIFO)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}

#: ``(device, inode, size, mtime)``: a file's identity and version.
Signature = tuple[int, int, int, int]


def setting_path(key: str, value: object) -> Path:
    """The path a setting (``dataset.path``) names, ``~`` expanded; a ``ConfigError``
    naming ``key`` when it is not a usable path."""
    if not isinstance(value, (str, os.PathLike)) or not isinstance(os.fspath(value), str):
        raise ConfigError(f"{key}: expected a file path, got {value!r}")
    text = os.fspath(value)
    if "\x00" in text:
        raise ConfigError(f"{key}: expected a file path, got {text!r} (it has a NUL character)")
    problem = text_problem(text)
    if problem is not None:
        raise ConfigError(f"{key}: the path {text!r} {problem} (or rename the file)")
    try:
        return Path(text).expanduser()
    except RuntimeError as e:  # ~nosuchuser/...
        raise ConfigError(f"{key}: cannot expand {text!r} ({e})") from None


def file_kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is: "a file", "a directory", "a socket", ..."""
    return "a file" if stat.S_ISREG(mode) else _KINDS.get(stat.S_IFMT(mode), "a special file")


def _not_regular(mode: int) -> str:
    kind = file_kind(mode)
    if kind == "a directory":
        return "is a directory, not a file"
    return (
        f"is {kind}, not a regular file; the harness reads its data more than once, so save "
        "it to a file first"
    )


def _cannot(e: OSError) -> str:
    return f"cannot open ({e.strerror or e})"


def stat_file(path: Path) -> bool:
    """True for a readable regular file, False when nothing is there; else a
    ``DatasetError`` saying what is wrong (a directory, a pipe, no permission, ...)."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as e:
        raise DatasetError(str(path), _cannot(e)) from None
    if not stat.S_ISREG(mode):
        raise DatasetError(str(path), _not_regular(mode))
    if not os.access(path, os.R_OK):
        raise DatasetError(str(path), "file is not readable")
    return True


def open_regular(path: Path) -> BinaryIO:
    """Open a regular file for reading, without ever blocking (on a FIFO with no writer);
    a ``DatasetError`` when that fails or the path is something else."""
    nonblock = getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, os.O_RDONLY | nonblock | getattr(os, "O_BINARY", 0))
    except (FileNotFoundError, NotADirectoryError):
        raise DatasetError(str(path), "file not found") from None
    except OSError as e:
        raise DatasetError(str(path), _cannot(e)) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise DatasetError(str(path), _not_regular(mode))
        if nonblock:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def signature(f: BinaryIO) -> Signature:
    """The identity and version of an open file."""
    st = os.fstat(f.fileno())
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def read_block(f: BinaryIO, path: Path, line: int | None = None) -> bytes:
    """The next block of ``f``; a ``DatasetError`` (at ``line``) when the read fails."""
    try:
        return f.read(BLOCK)
    except OSError as e:
        raise DatasetError(
            str(path), f"reading failed ({e.strerror or e}); check the disk or the copy",
            line=line,
        ) from None


def check_unchanged(path: Path, before: Signature, after: Signature) -> None:
    """A ``DatasetError`` when the file changed between two ``signature`` calls."""
    if before[2] != after[2]:
        what = f"its size went from {before[2]:,} to {after[2]:,} bytes"
    elif before != after:
        what = "it was modified or replaced"
    else:
        return
    raise DatasetError(
        str(path),
        f"changed while the run read it ({what}); run again once the file is complete",
    )


def read_lines(
    path: Path,
    on_block: Callable[[bytes], None] | None = None,
    on_open: Callable[[Signature], None] | None = None,
) -> Iterator[tuple[int, bytes]]:
    """``(1-based line number, raw line with its newline)`` for each line of a regular file.

    Args:
        path: The file.
        on_block: Called with each block read (e.g. to hash the file on the way).
        on_open: Called with the file's ``signature`` once it is open.

    A read error is a ``DatasetError`` at the line being read, and a file that changes
    while it is read one when its end is reached.
    """
    with open_regular(path) as f:
        before = signature(f)
        if on_open is not None:
            on_open(before)
        number, rest = 0, b""
        while block := read_block(f, path, number + 1):
            if on_block is not None:
                on_block(block)
            parts = (rest + block).split(b"\n")
            rest = parts.pop()
            for part in parts:
                number += 1
                yield number, part + b"\n"
        if rest:
            number += 1
            yield number, rest
        check_unchanged(path, before, signature(f))


def file_sha256(path: Path, expect: Signature | None = None) -> str:
    """The sha256 of a file's bytes; a ``DatasetError`` when it cannot be read, or when
    it is no longer the version ``expect`` (read earlier in the run)."""
    hasher = hashlib.sha256()
    with open_regular(path) as f:
        if expect is not None:
            check_unchanged(path, expect, signature(f))
        while block := read_block(f, path):
            hasher.update(block)
    return hasher.hexdigest()


def count_lines(path: Path) -> int:
    """The number of lines of a file (a last line without a newline counts)."""
    lines, last = 0, b"\n"
    with open_regular(path) as f:
        while block := read_block(f, path):
            lines += block.count(b"\n")
            last = block[-1:]
    return lines + (last != b"\n")


def allow_large_cells() -> None:
    """Lift the csv module's 128 KiB cell limit: a chunk may be megabytes long."""
    import csv
    import sys

    limit = sys.maxsize
    while True:
        try:
            csv.field_size_limit(limit)
            return
        except OverflowError:
            limit //= 2


def decode_line(raw: bytes, path: str | os.PathLike[str], number: int) -> str:
    """Line ``number`` (1-based) of ``path`` as text: UTF-8, a leading BOM dropped."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DatasetError(
            str(path),
            f"not valid UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1}); "
            "save the file as UTF-8",
            line=number,
        ) from None
    return text[1:] if number == 1 and text.startswith("\ufeff") else text


def load_json(text: str, path: Path, line: int = 1, document: bool = False) -> Any:
    """``text`` parsed: line ``line`` of ``path``, or a whole ``document``; a one-line
    ``DatasetError`` at the line where it is not valid JSON."""
    try:  # about 3x faster; what it refuses (NaN, a lone surrogate, 1e400) json reads
        return msgspec.json.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        pass
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        at = e.lineno if document else line
        raise DatasetError(
            str(path), f"not valid JSON ({e.msg} at column {e.colno})", line=at
        ) from None
    except (ValueError, RecursionError) as e:  # a 5,000-digit number, deep nesting
        why = "nested too deeply" if isinstance(e, RecursionError) else str(e)
        raise DatasetError(str(path), f"not valid JSON ({why})", line=line) from None
