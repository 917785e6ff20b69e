"""A persistent cache of judge replies, so a verdict is paid for once.

SQLite in WAL mode: many processes (parallel sweep jobs) read and write one file safely,
and each reply is committed as it arrives, so a run killed at any point loses at most the
calls that were in flight. The key is a hash of everything that can change a reply: the
endpoint, the model and every sampling parameter, the output format, the exact messages
(prompt template, question, answer, chunk, and for listwise judging the ORDERED chunk list)
and the draw index when several independent verdicts are asked for.

A cache that cannot be used (corrupt, read-only, locked, a file where its folder should be)
is refused when opened, before any judge call, with one line naming the file, the cause and
what to do (``ConfigError``). Later failures do not cost a run its paid verdicts: an
unreadable entry is a miss (counted in ``unreadable``, asked again and replaced); a failed
write prints one warning and the run goes on without storing.

A team shares one cache in PostgreSQL instead (``judge.cache_url``: the same keys and
entries, ``harness.judges.cache.postgres``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from harness.core.errors import ConfigError

#: Seconds a call waits for a lock another process holds (parallel jobs share the file).
BUSY_TIMEOUT_S = 60.0
#: Files up to this size get SQLite's ``quick_check`` when opened (about 1 ms per MB).
CHECK_MAX_BYTES = 256 * 2**20

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    prompt_sha TEXT NOT NULL,
    variant TEXT NOT NULL,
    created REAL NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    value TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS replies_prompt ON replies (prompt_sha);
CREATE INDEX IF NOT EXISTS replies_created ON replies (created);
"""
#: Files found locked: until when a new open reports it at once, and the error.
_LOCKED: dict[Path, tuple[float, ConfigError]] = {}
_COLUMNS = [line.split()[0] for line in _SCHEMA.splitlines() if line.startswith("    ")]
_ELSEWHERE = "set judge.cache_path=ANOTHER_FILE, or judge.cache=false to run without a cache"
_ADVICE = {
    "corrupt": f"delete it or move it aside (the judge's answers fill a new one), or {_ELSEWHERE}",
    "locked": f"wait until the process that holds it ends, or {_ELSEWHERE}",
    "readonly": f"make it and its folder writable, or {_ELSEWHERE}",
    "path": "set judge.cache_path=FILE in a writable folder (or $XDG_CACHE_HOME to one), or "
    "judge.cache=false to run without a cache",
    "other": _ELSEWHERE,
}


def default_path() -> Path:
    """``$XDG_CACHE_HOME/harness/verdicts.sqlite`` (default ``~/.cache/harness/...``)."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "harness" / "verdicts.sqlite"


def cache_key(parts: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of ``parts``."""
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


class VerdictCache:
    """Judge replies by key. Open it in the thread that uses it (sqlite3 connections are
    bound to their thread).

    Args:
        path: The SQLite file.
        create: Create the file (and its folder) when missing; else a missing file, or one
            without a cache in it, is an error (``harness cache``).
        write: Check that the file can be written to (not needed to only read it).

    Raises ``ConfigError`` when the file cannot be used: one line, the file, why, what to do.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, create: bool = True, write: bool = True
    ) -> None:
        self.path = Path(path).expanduser()
        #: Entries that could not be read (a damaged row or page): each counted as a miss.
        self.unreadable = 0
        self._write_failed = False
        _check_path(self.path, create)
        # The judge's concurrent calls each open the cache: after one waited out a lock,
        # the others are told at once rather than waiting in turn.
        locked = _LOCKED.get(self.path)
        if locked is not None and time.monotonic() < locked[0]:
            raise locked[1]
        db = None
        try:
            db = self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            self._open(create, write)
        except (sqlite3.Error, ConfigError) as e:
            if db is not None:
                db.close()
            if isinstance(e, ConfigError):
                raise
            error = self._error(e)
            if _cause(e)[0] == "locked":
                _LOCKED[self.path] = (time.monotonic() + BUSY_TIMEOUT_S, error)
            raise error from None
        _LOCKED.pop(self.path, None)

    def _open(self, create: bool, write: bool) -> None:
        """Check the file (intact, a verdict cache, writable) and set it up for use."""
        db = self._db
        db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        if (self.path.stat().st_size if self.path.exists() else 0) <= CHECK_MAX_BYTES:
            problems = [str(r[0]) for r in db.execute("PRAGMA quick_check(3)").fetchall()]
            if problems != ["ok"]:
                raise self._unusable("corrupt", f"the file is corrupt ({'; '.join(problems)})")
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        columns = [r[1] for r in db.execute("PRAGMA table_info(replies)")]
        if tables and columns != _COLUMNS:
            what = f"columns {columns}" if columns else f"tables {', '.join(sorted(tables)[:5])}"
            raise self._unusable("other", f"a SQLite database of something else ({what}), not a "
                                 "verdict cache; it is left as it is")
        if not tables and not create:
            raise ConfigError(f"verdict cache {self.path}: empty, nothing is cached in it")
        if write:
            db.execute("PRAGMA journal_mode = WAL")
            # NORMAL in WAL mode: a committed write survives the process being killed.
            db.execute("PRAGMA synchronous = NORMAL")
            db.executescript(_SCHEMA)
            db.execute("BEGIN IMMEDIATE")
            try:  # a write rolled back: a read-only file passes BEGIN and fails here
                db.execute("INSERT OR REPLACE INTO replies VALUES ('', '', '', '', 0, 0, 0, '')")
            finally:
                if db.in_transaction:
                    db.execute("ROLLBACK")

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored reply for ``key``, or ``None`` (also for an unreadable entry)."""
        try:
            row = self._db.execute("SELECT value FROM replies WHERE key = ?", (key,)).fetchone()
        except sqlite3.DatabaseError as e:
            if isinstance(e, sqlite3.ProgrammingError):
                raise
            self.unreadable += 1
            return None
        if row is None:
            return None
        reply = usable_reply(row[0])
        if reply is None:
            self.unreadable += 1
        return reply

    def put(
        self, key: str, value: dict[str, Any], *, model: str, prompt_sha: str, variant: str
    ) -> None:
        """Store a reply (committed at once). When the file stops taking writes, say so
        once on stderr and store nothing more: the run goes on, uncached."""
        if self._write_failed:
            return
        usage = value["usage"] if isinstance(value.get("usage"), dict) else {}
        try:
            self._db.execute(
                "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (key, model, prompt_sha, variant, time.time(), _count(usage.get("prompt_tokens")),
                 _count(usage.get("completion_tokens")), json.dumps(value, ensure_ascii=False)),
            )
        except sqlite3.DatabaseError as e:
            if isinstance(e, sqlite3.ProgrammingError):
                raise
            self._write_failed = True
            print(
                f"warning: {self._error(e)} (the run goes on; verdicts from now on are not "
                "cached, so a rerun pays for them again)",
                file=sys.stderr,
            )

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> tuple[list[Any], int]:
        """Run one statement (``harness cache``): rows and row count; a failure is
        a ``ConfigError``."""
        try:
            cursor = self._db.execute(sql, args)
            return cursor.fetchall(), cursor.rowcount
        except sqlite3.Error as e:
            raise self._error(e) from None

    def close(self) -> None:
        """Close the connection; say how many entries could not be read, if any."""
        if self.unreadable:
            print(
                f"warning: verdict cache {self.path}: {self.unreadable} entries could not be "
                "read (damaged, or locked too long); they counted as misses and were asked again",
                file=sys.stderr,
            )
            self.unreadable = 0
        self._db.close()

    def _unusable(self, kind: str, cause: str) -> ConfigError:
        return ConfigError(f"verdict cache {self.path}: {cause}; {_ADVICE[kind]}")

    def _error(self, e: sqlite3.Error) -> ConfigError:
        """The one line for a SQLite error on this file."""
        kind, cause = _cause(e)
        waited = f", waited {BUSY_TIMEOUT_S:g} s" if kind == "locked" else ""
        return self._unusable(kind, f"{cause} ({e}{waited})")


_CAUSES = [
    (("SQLITE_NOTADB", "SQLITE_CORRUPT"), "corrupt", "the file is corrupt"),
    (("SQLITE_BUSY", "SQLITE_LOCKED"), "locked", "another process holds it locked"),
    (("SQLITE_READONLY",), "readonly", "the file is read-only"),
    (("SQLITE_CANTOPEN",), "readonly", "SQLite cannot open it or create its journal beside it"),
    (("SQLITE_FULL",), "path", "the disk is full"),
]


def _cause(e: sqlite3.Error) -> tuple[str, str]:
    """The kind of a SQLite error (a key of ``_ADVICE``) and its cause in words."""
    name = getattr(e, "sqlite_errorname", "") or ""
    found = ((k, c) for prefixes, k, c in _CAUSES if name.startswith(prefixes))
    return next(found, ("other", "SQLite failed"))


def _check_path(path: Path, create: bool) -> None:
    """The folder of ``path`` is a folder (created when missing and ``create``), and
    ``path`` itself is a file (or missing, when ``create``)."""
    folders = (path.parent, *path.parent.parents)
    blocker = next((p for p in folders if p.exists() and not p.is_dir()), None)
    if blocker is not None:
        cause = f"{blocker} is a file, not a folder"
    elif path.exists() and not path.is_file():
        cause = f"{path} is a folder, not a file" if path.is_dir() else "not a regular file"
    elif not create and not path.exists():
        raise ConfigError(f"no verdict cache at {path} (judged runs create it; or give --path)")
    else:
        try:
            if create:
                path.parent.mkdir(parents=True, exist_ok=True)
            return
        except OSError as e:
            cause = f"cannot create its folder {path.parent} ({e.strerror})"
    raise ConfigError(f"verdict cache {path}: {cause}; {_ADVICE['path']}")


def _count(value: Any) -> int:
    return int(value) if _number(value) else 0


def _number(value: Any) -> bool:
    """A finite, non-negative int or float (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value) and value >= 0


def usable_reply(text: Any) -> dict[str, Any] | None:
    """A stored reply as the judge reads it, or ``None`` when it is not one (bad JSON, a
    field of the wrong type): the caller asks again and the entry is replaced."""
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or not isinstance(value.get("content"), str):
        return None
    usage = value.get("usage") or {}
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else "bad"
    if not isinstance(details, dict | None) or not _tokens(value.get("logprobs")):
        return None
    counts = [usage.get(k) for k in ("prompt_tokens", "completion_tokens", "total_tokens")]
    counts.append((details or {}).get("cached_tokens"))
    return {**value, "usage": usage} if all(c is None or _number(c) for c in counts) else None


def _tokens(value: Any) -> bool:
    """``value`` is ``None`` or has the shape of token logprobs: ``[{"token": str,
    "top_logprobs": [{"token", "logprob": number}, …]}, …]``."""
    if not isinstance(value, list) or not all(isinstance(t, dict) for t in value):
        return value is None
    for token in value:
        top = token.get("top_logprobs") or []
        if not isinstance(token.get("token", ""), str) or not isinstance(top, list):
            return False
        for cand in top:
            lp = cand.get("logprob") if isinstance(cand, dict) else None
            if isinstance(lp, bool) or not isinstance(lp, (int, float)):
                return False
    return True
