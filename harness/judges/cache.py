"""A persistent cache of judge replies, so a verdict is paid for once.

SQLite in WAL mode: many processes (parallel sweep jobs) read and write one file safely,
and each reply is committed as it arrives, so a run killed at any point loses at most the
calls that were in flight. The key is a hash of everything that can change a reply: the
endpoint, the model and every sampling parameter, the output format, the exact messages
(prompt template, question, answer, chunk, and for listwise judging the ORDERED chunk list)
and the draw index when several independent verdicts are asked for.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

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
        path: The SQLite file (created with its folder when missing).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        self._db.execute("PRAGMA busy_timeout = 60000")
        self._db.execute("PRAGMA journal_mode = WAL")
        # NORMAL in WAL mode: a committed write survives the process being killed.
        self._db.execute("PRAGMA synchronous = NORMAL")
        self._db.executescript(_SCHEMA)

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored reply for ``key``, or ``None``."""
        row = self._db.execute("SELECT value FROM replies WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(
        self, key: str, value: dict[str, Any], *, model: str, prompt_sha: str, variant: str
    ) -> None:
        """Store a reply (committed at once)."""
        usage = value.get("usage") or {}
        self._db.execute(
            "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                key,
                model,
                prompt_sha,
                variant,
                time.time(),
                int(usage.get("prompt_tokens") or 0),
                int(usage.get("completion_tokens") or 0),
                json.dumps(value, ensure_ascii=False),
            ),
        )

    def summary(self) -> dict[str, Any]:
        """Size on disk and entries grouped by model, prompt and variant."""
        groups = self._db.execute(
            "SELECT model, prompt_sha, variant, COUNT(*), MIN(created), MAX(created), "
            "SUM(prompt_tokens), SUM(completion_tokens) FROM replies "
            "GROUP BY model, prompt_sha, variant ORDER BY MAX(created) DESC"
        ).fetchall()
        size = sum(
            p.stat().st_size
            for p in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm"))
            if p.exists()
        )
        return {
            "path": str(self.path),
            "bytes": size,
            "entries": sum(g[3] for g in groups),
            "groups": [
                {
                    "model": g[0],
                    "prompt_sha256": g[1],
                    "variant": g[2],
                    "entries": g[3],
                    "oldest": g[4],
                    "newest": g[5],
                    "prompt_tokens": g[6],
                    "completion_tokens": g[7],
                }
                for g in groups
            ],
        }

    def prune(
        self,
        *,
        older_than_s: float | None = None,
        prompt_sha: str | None = None,
        model: str | None = None,
    ) -> int:
        """Delete entries matching every given condition; return how many."""
        where: list[str] = []
        args: list[float | str] = []
        if older_than_s is not None:
            where.append("created < ?")
            args.append(time.time() - older_than_s)
        if prompt_sha is not None:
            where.append("prompt_sha LIKE ?")
            args.append(prompt_sha + "%")
        if model is not None:
            where.append("model = ?")
            args.append(model)
        if not where:
            raise ValueError("prune needs at least one condition")
        cursor = self._db.execute(f"DELETE FROM replies WHERE {' AND '.join(where)}", args)
        self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return cursor.rowcount

    def close(self) -> None:
        """Close the connection."""
        self._db.close()
