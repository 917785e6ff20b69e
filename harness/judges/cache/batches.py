"""Which Batch API batch each paid-for request is in (``judge.batch``), kept in the verdict
cache beside the replies: a run stopped while its batches run (Ctrl-C, a crash, a closed
laptop) finds them again by its requests' keys, and pays for no request twice.

The table ``batch_lines`` (in the SQLite file and in PostgreSQL alike) holds, per request
key, the batch it was sent in and what storing its reply needs (model, prompt hash,
variant). Between the upload of a batch's input file and the batch's creation the batch is
``file:<input file id>`` (``FILE``): a process killed in between, or a creation whose answer
was lost, finds the batch by its input file. A row lives until the reply of its line is
stored (``settle`` stores the replies and drops the rows in one transaction), or until the
line is known lost (a failed line, a batch expired, cancelled or forgotten).

A store that fails mid-run prints one warning and the run goes on: batches it could not
record are not found by a rerun (which then pays for them again).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

from harness.core.errors import ConfigError
from harness.judges.cache.schema import UPSERT_REPLY, token_count
from harness.judges.cache.sqlite import VerdictCache

#: What storing a request's reply needs: ``(model, prompt_sha, variant)``.
Meta = tuple[str, str, str]
#: A reply to store: its key, the reply (``content``, ``logprobs``, ``usage``), its meta.
Reply = tuple[str, dict[str, Any], Meta]
#: The batch name of lines whose input file is uploaded and whose batch may not exist yet.
FILE = "file:"

_COLUMNS = """key TEXT PRIMARY KEY, batch TEXT NOT NULL, model TEXT NOT NULL,
    prompt_sha TEXT NOT NULL, variant TEXT NOT NULL, created {real} NOT NULL"""
_SQLITE_DDL = (f"CREATE TABLE IF NOT EXISTS batch_lines ({_COLUMNS.format(real='REAL')})",
               "CREATE INDEX IF NOT EXISTS batch_lines_batch ON batch_lines (batch)")
_PG_DDL = (
    f"CREATE TABLE IF NOT EXISTS harness_cache.batch_lines "
    f"({_COLUMNS.format(real='DOUBLE PRECISION')})",
    "CREATE INDEX IF NOT EXISTS batch_lines_batch ON harness_cache.batch_lines (batch)",
)
#: ``pg_advisory_xact_lock`` key serialising the table's creation.
_PG_LOCK = 0x68626174  # "hbat"
_SQLITE_REPLY = "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?, ?, ?)"


class BatchLines(Protocol):
    """The ``batch_lines`` table of one verdict cache."""

    async def prepare(self) -> None:
        """Create the table when missing (``ConfigError`` when it cannot be)."""

    async def pending(self, key: str) -> str | None:
        """The batch ``key`` was sent in and is not settled yet, or ``None``."""

    async def record(self, batch: str, lines: Sequence[tuple[str, Meta]]) -> None:
        """``lines`` (key and meta) were sent in ``batch``."""

    async def rename(self, old: str, new: str) -> None:
        """Batch ``old`` (``file:ID``) is now known as ``new`` (the batch's id)."""

    async def of_batch(self, batch: str) -> dict[str, Meta]:
        """Every unsettled line of ``batch``: key -> meta."""

    async def settle(self, batch: str, replies: Sequence[Reply], done: Sequence[str]) -> None:
        """Store ``replies`` and forget the lines ``done`` (answered or lost), at once."""


def _row(batch: str, key: str, meta: Meta) -> tuple[str, str, str, str, str, float]:
    return (key, batch, *meta, time.time())


def _reply_row(key: str, value: dict[str, Any], meta: Meta) -> tuple[Any, ...]:
    usage = value["usage"] if isinstance(value.get("usage"), dict) else {}
    return (key, *meta, time.time(), token_count(usage.get("prompt_tokens")),
            token_count(usage.get("completion_tokens")), json.dumps(value, ensure_ascii=False))


def _warn(where: str, error: Exception) -> None:
    print(f"warning: verdict cache {where}: cannot record the Batch API's batches ({error}); "
          "the run goes on, but a rerun cannot resume them and pays for them again",
          file=sys.stderr)


class SqliteLines:
    """``batch_lines`` in the SQLite file (``VerdictCache.query``: one statement a call,
    transactions by ``BEGIN``/``COMMIT``)."""

    def __init__(self, cache: VerdictCache) -> None:
        self.cache = cache
        self.broken = False

    async def prepare(self) -> None:
        """Create the table (``ConfigError`` naming the file when it cannot be)."""
        for statement in _SQLITE_DDL:
            self.cache.query(statement)

    def _many(self, statements: Sequence[tuple[str, Sequence[tuple[Any, ...]]]]) -> None:
        """Each statement over each of its rows, in one transaction; a failure warns once."""
        if self.broken:
            return
        try:
            self.cache.query("BEGIN IMMEDIATE")
            try:
                for sql, rows in statements:
                    for args in rows:
                        self.cache.query(sql, tuple(args))
                self.cache.query("COMMIT")
            except BaseException:
                self.cache.query("ROLLBACK")
                raise
        except ConfigError as e:
            self.broken = True
            _warn(str(self.cache.path), e)

    async def pending(self, key: str) -> str | None:
        """The batch of ``key``, or ``None``."""
        if self.broken:
            return None
        try:
            rows, _ = self.cache.query("SELECT batch FROM batch_lines WHERE key = ?", (key,))
        except ConfigError:
            return None
        return str(rows[0][0]) if rows else None

    async def record(self, batch: str, lines: Sequence[tuple[str, Meta]]) -> None:
        """Record ``lines`` as sent in ``batch``."""
        self._many([("INSERT OR REPLACE INTO batch_lines VALUES (?, ?, ?, ?, ?, ?)",
                     [_row(batch, key, meta) for key, meta in lines])])

    async def rename(self, old: str, new: str) -> None:
        """``old`` is now ``new``."""
        self._many([("UPDATE batch_lines SET batch = ? WHERE batch = ?", [(new, old)])])

    async def of_batch(self, batch: str) -> dict[str, Meta]:
        """The unsettled lines of ``batch``."""
        if self.broken:
            return {}
        try:
            rows, _ = self.cache.query(
                "SELECT key, model, prompt_sha, variant FROM batch_lines WHERE batch = ?",
                (batch,))
        except ConfigError:
            return {}
        return {str(r[0]): (str(r[1]), str(r[2]), str(r[3])) for r in rows}

    async def settle(self, batch: str, replies: Sequence[Reply], done: Sequence[str]) -> None:
        """Store ``replies``, forget ``done``."""
        self._many([(_SQLITE_REPLY, [_reply_row(k, v, m) for k, v, m in replies]),
                    ("DELETE FROM batch_lines WHERE key = ? AND batch = ?",
                     [(key, batch) for key in done])])


class PgLines:
    """``batch_lines`` in PostgreSQL, through the cache's pooled connections.

    Args:
        conn: The cache's connection context (statements within its deadline).
        broken: Whether the cache has failed (it then runs uncached).
        fail: Report a failure (one warning; the cache runs uncached from then on).
        errors: The exceptions a statement may raise (``psycopg.Error``, a stall).
    """

    def __init__(self, conn: Callable[[], AbstractAsyncContextManager[Any]],
                 broken: Callable[[], bool], fail: Callable[[Exception], None],
                 errors: Callable[[], tuple[type[Exception], ...]]) -> None:
        self._conn, self._broken, self._fail, self._errors = conn, broken, fail, errors

    async def prepare(self) -> None:
        """Create the table under an advisory lock (many first users at once are safe)."""
        async with self._conn() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_PG_LOCK,))
            for statement in _PG_DDL:
                await conn.execute(statement)

    async def _run(self, work: Callable[[Any], Any]) -> Any:
        if self._broken():
            return None
        try:
            async with self._conn() as conn:
                return await work(conn)
        except self._errors() as e:
            self._fail(e)
            return None

    async def pending(self, key: str) -> str | None:
        """The batch of ``key``, or ``None``."""
        async def work(conn: Any) -> Any:
            return await (await conn.execute(
                "SELECT batch FROM batch_lines WHERE key = %s", (key,))).fetchone()
        row = await self._run(work)
        return None if row is None else str(row[0])

    async def record(self, batch: str, lines: Sequence[tuple[str, Meta]]) -> None:
        """Record ``lines`` as sent in ``batch``."""
        async def work(conn: Any) -> None:
            async with conn.transaction(), conn.cursor() as cur:
                await cur.executemany(
                    "INSERT INTO batch_lines VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (key) "
                    "DO UPDATE SET batch = EXCLUDED.batch, created = EXCLUDED.created",
                    [_row(batch, key, meta) for key, meta in lines])
        await self._run(work)

    async def rename(self, old: str, new: str) -> None:
        """``old`` is now ``new``."""
        async def work(conn: Any) -> None:
            await conn.execute("UPDATE batch_lines SET batch = %s WHERE batch = %s", (new, old))
        await self._run(work)

    async def of_batch(self, batch: str) -> dict[str, Meta]:
        """The unsettled lines of ``batch``."""
        async def work(conn: Any) -> Any:
            return await (await conn.execute(
                "SELECT key, model, prompt_sha, variant FROM batch_lines WHERE batch = %s",
                (batch,))).fetchall()
        rows = await self._run(work) or []
        return {str(r[0]): (str(r[1]), str(r[2]), str(r[3])) for r in rows}

    async def settle(self, batch: str, replies: Sequence[Reply], done: Sequence[str]) -> None:
        """Store ``replies``, forget ``done``."""
        names = ("key", "model", "prompt_sha", "variant", "created", "prompt_tokens",
                 "completion_tokens", "value")

        async def work(conn: Any) -> None:
            async with conn.transaction(), conn.cursor() as cur:
                if replies:
                    await cur.executemany(UPSERT_REPLY, [
                        dict(zip(names, _reply_row(k, v, m), strict=True)) for k, v, m in replies])
                await cur.execute("DELETE FROM batch_lines WHERE batch = %s AND key = ANY(%s)",
                                  (batch, list(done)))
        await self._run(work)
