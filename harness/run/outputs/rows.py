"""The rows file: rows stream into ``samples.jsonl.partial`` and are renamed to
``samples.jsonl`` when the run has finished, so an incomplete file is marked by its name."""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

import msgspec

from harness.core.errors import ComponentFailed, JudgeUnavailable
from harness.core.text import writable
from harness.run.outputs.folder import OutputError, hint, reason

PARTIAL = ".partial"

_ENCODER = msgspec.json.Encoder()
_FAST, _LINES = _ENCODER.encode, _ENCODER.encode_lines


class IdChunk(msgspec.Struct, gc=False):
    """An id metric's chunk in a row as the loop builds it: written as
    ``{"id": ..., "verdict": ...}``, about half the cost of a dict (and never scanned by the
    garbage collector). A row that stays in memory (the report's, a labels run's) gets
    plain dicts (``plain_chunks``)."""

    id: str
    verdict: Any


def plain_chunks(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` (changed in place) with its ``IdChunk`` chunks as plain dicts."""
    chunks = row.get("chunks")
    if type(chunks) is list and chunks and type(chunks[0]) is IdChunk:
        row["chunks"] = [msgspec.structs.asdict(c) for c in chunks]
    return row


def _as_json(value: Any) -> Any:
    if isinstance(value, msgspec.Struct):
        return msgspec.structs.asdict(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


@contextlib.contextmanager
def streamed(path: Path) -> Iterator[Path]:
    """Rows go to ``PATH.partial``; the caller renames it with ``finalise`` when done.

    An ``OSError`` while writing (disk full) becomes one ``OutputError`` naming the file;
    the partial file stays, clearly incomplete by its name. The line of a run that stops
    keeping its rows (a component failed, the judge went away, an output could not be
    written) says how many rows were kept, and where.
    """
    partial = partial_of(path)
    try:
        yield partial
    except OSError as e:
        raise OutputError(
            f"cannot write {partial} ({reason(e)}){hint(e)}; {kept(partial)}"
        ) from None
    except (ComponentFailed, JudgeUnavailable, OutputError) as e:  # the run stops, rows kept
        if len(e.args) == 1 and isinstance(e.args[0], str) and "kept in" not in e.args[0]:
            line = e.args[0].removesuffix(_SO_FAR)  # the loop's words, without the count
            e.args = (f"{line}; {kept(partial)}",)
        raise


def kept(partial: Path) -> str:
    """``N rows scored before it are kept in PARTIAL``: for the line of a run that
    stopped (its rows file counted, newlines only: a row cut by a full disk is not one)."""
    count = 0
    try:
        with open(partial, "rb") as rows:
            while chunk := rows.read(1 << 20):
                count += chunk.count(b"\n")
    except OSError:
        return f"no rows are kept ({partial} cannot be read)"
    if count == 1:
        return f"1 row scored before it is kept in {partial}"
    return f"{count:,} rows scored before it are kept in {partial}"


_SO_FAR = "; the rows written so far are kept there"


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


#: Characters ``str.splitlines`` breaks on that JSON leaves raw: escaped in rows.
_LINE_BREAKS = {c: f"\\u{c:04x}" for c in (0x85, 0x2028, 0x2029)}
#: Rows are compact JSON (no space after ``,`` and ``:``): what msgspec writes.
SEPARATORS = (",", ":")
_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=SEPARATORS,
                           default=_as_json).encode
#: A number msgspec writes unlike ``repr`` (``1e16``, ``1e-7``, ``0.00001``; Python writes
#: ``1e+16``, ``1e-07``, ``1e-05``): such rows go to ``json`` instead. Every other float
#: msgspec writes is ``repr``'s (checked on 1M floats).
_EXPONENT = re.compile(rb"e[-+0-9]")
_SMALL = re.compile(rb"0\.0000")  # (a literal first byte: the search is fast)
_DIGITS = frozenset(b"0123456789.")
_NUMBER = frozenset(b"0123456789.-")
_BEFORE = frozenset(b":,[")  # what precedes a value in compact JSON


def _unlike_repr(raw: bytes) -> bool:
    """Whether compact JSON ``raw`` holds such a number (a value, not a string's text:
    ``"x1e5"`` is not one, ``"a,1e5"`` is taken for one, which only costs speed)."""
    for pattern in (_EXPONENT, _SMALL):
        for found in pattern.finditer(raw):
            at = found.start()
            if pattern is _EXPONENT:
                at -= 1
                if at < 0 or raw[at] not in _DIGITS:
                    continue
            while at > 0 and raw[at - 1] in _NUMBER:
                at -= 1
            if at > 0 and raw[at - 1] in _BEFORE:
                return True
    return False


def _encoded(row: Any) -> str:
    """``row`` as ``json.dumps(row, ensure_ascii=False, separators=(",", ":"))`` writes it:
    by msgspec (several times faster), by ``json`` where msgspec cannot match it (a lone
    surrogate, a key that is not a string or a number, a float subclass, an integer over
    64 bits) or the float text would differ."""
    try:
        raw = _FAST(row)
    except (TypeError, ValueError, OverflowError):
        return _ENCODE(row)
    if _unlike_repr(raw):
        return _ENCODE(row)
    return raw.decode()


def json_line(row: Any) -> str:
    """One JSON-lines row (no newline): UTF-8 kept, but line separators escaped, so readers
    that split lines on them do not cut the row. A NaN or an infinity is ``null``
    (``json`` refuses them)."""
    return _safe(_encoded(row))


def json_lines(rows: list[Any]) -> str:
    """``rows`` as JSON lines, each ending in a newline: the text ``json_line`` writes for
    each, encoded in one call where msgspec's text is ``json``'s (the common case)."""
    try:
        raw = _LINES(rows)
    except (TypeError, ValueError, OverflowError):
        raw = None
    if raw is None or _unlike_repr(raw):
        return "".join([json_line(row) + "\n" for row in rows])
    return _safe(raw.decode())


def _safe(text: str) -> str:
    if text.isascii():
        return text
    # inputs are checked where they are read (datasets, retrievers); what is left is a
    # server's or a library's text (a judge's reason), whose lone surrogates become U+FFFD
    return writable(text).translate(_LINE_BREAKS)


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
        raise OutputError(f"cannot rewrite {path} ({reason(e)}){hint(e)}") from None
