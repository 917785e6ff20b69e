"""The verdict cache on PostgreSQL (``judge.cache_url``): one cache for every process and
machine of a team, through psycopg 3 (``pip install -e '.[teams]'``).

Same key and same entries as the SQLite file (``harness.judges.cache.sqlite``), in the schema
``harness_cache`` (``harness.judges.cache.schema``), created on first use under an
advisory lock, so that many first users at once are safe. A key is *claimed* before the
judge is asked: its row, without a reply yet, names this judge's owner id and a lease;
others asking for the key wait (polling, on the event loop: never blocking it) until the
reply is stored, then use it. The owner renews its live claims every third of the lease; a
claim whose owner died (lease run out) is taken over; a failed call releases its claim.
An entry stored but unusable is asked again without a claim (at most one duplicate).

Cost against a server on the same machine: a hit is one statement, a miss three. A server
that stops answering mid-run (``harness.judges.cache.stall``) is one warning, then uncached.
Credentials: the URL's password (or ``PGPASSWORD``, ``~/.pgpass``: libpq reads them) is
never printed or written: every message shows the URL through ``redact_uri``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
import time
import uuid
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from harness.core.redact import register
from harness.judges.cache.batches import PgLines
from harness.judges.cache.schema import (
    RELEASE,
    RENEW,
    SELECT_VALUE,
    TRY_CLAIM,
    UPSERT_REPLY,
    check_url,
    connect_error,
    ensure_schema,
    import_psycopg,
    shown,
    token_count,
    url_password,
)
from harness.judges.cache.sqlite import usable_reply
from harness.judges.cache.stall import Stalled, deadline

if TYPE_CHECKING:
    import psycopg

#: Connections one judge holds at most (its concurrent calls share them).
POOL_SIZE = 4
#: Seconds between a waiter's looks at a key another process holds (grows to the maximum).
POLL_FIRST_S, POLL_MAX_S = 0.02, 0.5
#: Seconds to wait for the server when connecting.
CONNECT_TIMEOUT_S = 10


class PgVerdictCache:
    """Judge replies by key in PostgreSQL, shared; claims so that a key is paid for once.

    Args:
        url: ``postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE``.
        lease_s: Seconds a claim lives without renewal (the judge passes 2 x its timeout).
        max_claims: Keys this judge claims or waits for at once (``turn``; the judge passes
            its ``max_concurrency``): a batch does not claim keys it will not ask for soon,
            and a few waiters poll, not thousands.
        setting: The setting named in messages.

    Use it on one event loop: ``await open()``, then ``get``, ``claim``, ``put``,
    ``release``; ``await aclose()``.
    """

    def __init__(
        self, url: str, *, lease_s: float = 120.0, max_claims: int = 16,
        setting: str = "judge.cache_url",
    ) -> None:
        self.url, self.setting = url, setting
        self.location = shown(url)
        self.lease_s = max(float(lease_s), 1.0)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        #: Entries that could not be read (each counted as a miss); keys found held by
        #: another process and waited for.
        self.unreadable = self.waits = 0
        self._held: set[str] = set()
        self._idle: list[psycopg.AsyncConnection[Any]] = []
        self._slots: asyncio.Semaphore | None = None
        self._turns = asyncio.Semaphore(max(1, max_claims))
        self._beat: asyncio.Task[None] | None = None
        self._broken = False
        self._psycopg: Any = None
        self.lines = PgLines(self._conn, lambda: self._broken, self._fail,
                             lambda: (self._psycopg.Error, Stalled))

    async def open(self) -> None:
        """Connect, create the tables on first use and check them; ``ConfigError`` (one
        line naming the setting and what to do) when the cache cannot be used."""
        self._psycopg = import_psycopg(self.setting)
        self._slots = asyncio.Semaphore(POOL_SIZE)
        try:
            conn = await self._connect()
        except (self._psycopg.Error, Stalled) as e:
            raise connect_error(e, self.url, self.setting) from None
        try:
            async with deadline(conn):
                await ensure_schema(conn, self.url, self.setting)
        except Stalled as e:
            await conn.close()
            raise connect_error(e, self.url, self.setting) from None
        except BaseException:
            await conn.close()
            raise
        self._idle.append(conn)

    async def _connect(self) -> psycopg.AsyncConnection[Any]:
        """A new connection (a failure is ``psycopg.Error``: mid-run, a warning)."""
        for secret in (url_password(self.url), os.environ.get("PGPASSWORD")):
            register(secret)
        conn = await self._psycopg.AsyncConnection.connect(
            self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
            application_name="harness-verdict-cache",
        )
        try:
            async with deadline(conn):
                await conn.execute("SET search_path TO harness_cache")
                # a server crash may lose the last moments' replies (paid again), never
                # corrupt anything; waiting for the disk on every claim and reply costs more
                await conn.execute("SET synchronous_commit TO off")
        except BaseException:
            await conn.close()
            raise
        return conn

    @contextlib.asynccontextmanager
    async def _conn(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A pooled connection; its statements end within a deadline or raise ``Stalled``
        (``stall.deadline``); one that stalled or failed is not used again."""
        assert self._slots is not None, "open() first"
        async with self._slots:
            conn = self._idle.pop() if self._idle else await self._connect()
            ok = False
            try:
                async with deadline(conn):
                    yield conn
                ok = True
            finally:
                if ok and not conn.closed:
                    self._idle.append(conn)
                elif not conn.closed:
                    with contextlib.suppress(Exception):
                        await conn.close()

    def turn(self) -> asyncio.Semaphore:
        """Held from ``claim`` to ``put`` or ``release`` (``async with``)."""
        return self._turns

    async def get(self, key: str) -> dict[str, Any] | None:
        """The stored reply for ``key``, or ``None`` (also for an unusable entry)."""
        if self._broken:
            return None
        try:
            async with self._conn() as conn:
                row = await (await conn.execute(SELECT_VALUE, (key,))).fetchone()
        except (self._psycopg.Error, Stalled) as e:
            self._fail(e)
            return None
        if row is None or row[0] is None:  # no entry, or claimed and not paid for yet
            return None
        reply = usable_reply(row[0])
        if reply is None:
            self.unreadable += 1
        return reply

    async def claim(self, key: str, seen: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """Own ``key`` (``None``: ask the judge, then ``put`` or ``release``), or the reply
        another process stored meanwhile. While another process holds the key, wait. An
        entry that is stored but unusable (``seen``, or unreadable) is ``None`` unclaimed:
        the caller pays and replaces it."""
        delay, waited = POLL_FIRST_S, False
        claim = {"key": key, "owner": self.owner, "lease": self.lease_s}
        while not self._broken:
            try:
                async with self._conn() as conn:
                    owned = await (await conn.execute(
                        TRY_CLAIM, {**claim, "created": time.time()}
                    )).fetchone()
                    row = None if owned else await (
                        await conn.execute(SELECT_VALUE, (key,))
                    ).fetchone()
            except (self._psycopg.Error, Stalled) as e:
                self._fail(e)
                break
            if owned:
                self._held.add(key)
                if self._beat is None:
                    self._beat = asyncio.ensure_future(self._renew())
                return None
            if row is not None and row[0] is not None:  # stored (meanwhile)
                reply = usable_reply(row[0])
                self.waits += waited
                return reply if reply != seen else None
            if row is not None:  # claimed by another: wait (no row: released, claim again)
                waited = True
                await asyncio.sleep(delay)
                delay = min(delay * 1.5, POLL_MAX_S)
        return None  # the cache failed: ask the judge, uncached

    async def put(
        self, key: str, value: dict[str, Any], *, model: str, prompt_sha: str, variant: str
    ) -> None:
        """Store a reply and release this judge's claim of it, in one statement."""
        self._held.discard(key)
        if self._broken:
            return
        usage = value["usage"] if isinstance(value.get("usage"), dict) else {}
        args = {
            "key": key, "owner": self.owner, "model": model, "prompt_sha": prompt_sha,
            "variant": variant, "created": time.time(),
            "prompt_tokens": token_count(usage.get("prompt_tokens")),
            "completion_tokens": token_count(usage.get("completion_tokens")),
            "value": json.dumps(value, ensure_ascii=False),
        }
        try:
            async with self._conn() as conn:
                await conn.execute(UPSERT_REPLY, args)
        except (self._psycopg.Error, Stalled) as e:
            self._fail(e)

    async def release(self, key: str) -> None:
        """Give up the claim of ``key`` (the call failed): the next asker pays."""
        if key not in self._held:
            return
        self._held.discard(key)
        if self._broken:
            return  # the claim runs out with its lease
        try:
            async with self._conn() as conn:
                await conn.execute(RELEASE, (key, self.owner))
        except (self._psycopg.Error, Stalled) as e:
            self._fail(e)

    async def _renew(self) -> None:
        """Extend this judge's live claims every third of the lease."""
        while not self._broken:
            await asyncio.sleep(self.lease_s / 3)
            if not self._held:
                continue
            try:
                async with self._conn() as conn:
                    await conn.execute(RENEW, (self.lease_s, self.owner, sorted(self._held)))
            except (self._psycopg.Error, Stalled) as e:
                self._fail(e)

    def _fail(self, e: Exception) -> None:
        """One warning; the run goes on without the cache (as the SQLite file's writes)."""
        if not self._broken:
            self._broken = True
            line = connect_error(e, self.url, self.setting)
            print(f"warning: {line} (the run goes on; verdicts from now on are not cached, so "
                  "a rerun pays for them again)", file=sys.stderr)

    async def aclose(self) -> None:
        """Release the claims still held, stop renewing, close the connections."""
        if self._beat is not None:
            self._beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._beat
            self._beat = None
        for key in sorted(self._held):
            await self.release(key)
        if self.unreadable:
            print(f"warning: verdict cache {self.location}: {self.unreadable} entries could not "
                  "be read; they counted as misses and were asked again", file=sys.stderr)
            self.unreadable = 0
        while self._idle:
            with contextlib.suppress(Exception):
                await self._idle.pop().close()


__all__ = ["PgVerdictCache", "check_url"]  # check_url lives in schema; imported from here too
