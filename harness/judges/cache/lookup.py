"""A judge call through the verdict cache: look the key up, claim it, call, store.

Two stores answer the same five calls (``ReplyStore``): the SQLite file of one machine
(``judge.cache_path``, ``harness.judges.cache.sqlite``) and PostgreSQL shared by a team
(``judge.cache_url``, ``harness.judges.cache.postgres``). Only PostgreSQL claims keys: there two
processes asking for one key at once pay once; on the SQLite file parallel jobs that ask
for the same key at the same moment may both pay (once each, then it is stored).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar

from harness.core.errors import ConfigError, JudgeParseError
from harness.core.types import Completion, JudgeStats
from harness.judges.cache.batches import BatchLines, SqliteLines
from harness.judges.cache.postgres import PgVerdictCache, check_url
from harness.judges.cache.schema import shown
from harness.judges.cache.sqlite import VerdictCache, cache_key, default_path
from harness.judges.replies.read import clean_logprobs, clean_usage

T = TypeVar("T")


class ReplyStore(Protocol):
    """Where replies are kept (``location`` is shown, without credentials), and the Batch
    API's batches of the requests being paid for (``lines``, ``judge.batch``)."""

    location: str

    @property
    def lines(self) -> BatchLines:
        """The Batch API's lines of this cache."""

    def turn(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """Held from ``claim`` to ``put`` or ``release``: limits the keys held at once."""

    async def get(self, key: str) -> dict[str, Any] | None:
        """The stored reply, or ``None``."""

    async def claim(self, key: str, seen: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """``None``: the caller owns ``key`` and asks the judge; else a reply stored
        meanwhile by whoever held it (not ``seen``)."""

    async def put(
        self, key: str, value: dict[str, Any], *, model: str, prompt_sha: str, variant: str
    ) -> None:
        """Store a reply (and release the claim)."""

    async def release(self, key: str) -> None:
        """Give up a claim (the call failed)."""

    async def aclose(self) -> None:
        """Release what is held, close."""


class SqliteStore:
    """The SQLite file as a ``ReplyStore``: no claims (the file is one machine's)."""

    def __init__(self, cache: VerdictCache) -> None:
        self.cache = cache
        self.location = str(cache.path)
        self.lines = SqliteLines(cache)

    def turn(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """No limit (no claims)."""
        return contextlib.nullcontext()

    async def get(self, key: str) -> dict[str, Any] | None:
        """The stored reply, or ``None``."""
        return self.cache.get(key)

    async def claim(self, key: str, seen: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """Always the caller's."""
        return None

    async def put(
        self, key: str, value: dict[str, Any], *, model: str, prompt_sha: str, variant: str
    ) -> None:
        """Store a reply (committed at once)."""
        self.cache.put(key, value, model=model, prompt_sha=prompt_sha, variant=variant)

    async def release(self, key: str) -> None:
        """Nothing to release."""

    async def aclose(self) -> None:
        """Close the file."""
        self.cache.close()


def check_location(cache_path: str | None, cache_url: str | None) -> str | None:
    """``cache_url`` checked (``ConfigError`` before any work); at most one of the two."""
    if cache_url is None:
        return None
    if cache_path is not None:
        raise ConfigError(
            "judge.cache_path and judge.cache_url are both set: set judge.cache_url for the "
            "shared PostgreSQL cache, or judge.cache_path for a local file, not both"
        )
    return check_url(cache_url)


def location(cache_path: str | None, cache_url: str | None, *, on: bool = True) -> str | None:
    """Where the cache is, as outputs show it (the URL without credentials); ``None`` when
    the cache is off."""
    if not on:
        return None
    if cache_url is not None:
        return shown(cache_url)
    return str(sqlite_path(cache_path))


def sqlite_path(cache_path: str | None) -> Path:
    """The SQLite file (``None``: ``$XDG_CACHE_HOME/harness/verdicts.sqlite``)."""
    return Path(cache_path).expanduser() if cache_path else default_path()


async def open_store(
    cache_path: str | None, cache_url: str | None, *, lease_s: float, max_claims: int
) -> ReplyStore:
    """The PostgreSQL cache of ``cache_url``, else the SQLite file; ``ConfigError`` (one
    line) when it cannot be used."""
    if cache_url is not None:
        store = PgVerdictCache(cache_url, lease_s=lease_s, max_claims=max_claims)
        await store.open()
        return store
    return SqliteStore(VerdictCache(sqlite_path(cache_path)))


class Opener:
    """The cache of a judge, opened on first use, once (concurrent first users share the
    opening); the arguments are ``open_store``'s."""

    def __init__(self, cache_path: str | None, cache_url: str | None, *, lease_s: float,
                 max_claims: int) -> None:
        self.args = (cache_path, cache_url)
        self.lease_s, self.max_claims = lease_s, max_claims
        self.store: ReplyStore | None = None
        self._opening: asyncio.Future[ReplyStore] | None = None

    async def get(self) -> ReplyStore:
        """The open store."""
        if self.store is None:
            if self._opening is None:
                self._opening = asyncio.ensure_future(open_store(
                    *self.args, lease_s=self.lease_s, max_claims=self.max_claims))
            opening = self._opening
            try:
                self.store = await asyncio.shield(opening)
            finally:
                if opening is self._opening and opening.done():
                    self._opening = None
        return self.store

    async def aclose(self) -> None:
        """Close the store (when open)."""
        if self.store is not None:
            store, self.store = self.store, None
            await store.aclose()


def request_key(
    endpoint: str, variant: str, prompt_sha: str, body: bytes, served: Any
) -> str:
    """The cache key of a request: the endpoint (without credentials), the metric, the
    prompt's hash, the exact request body, and the weights that answer when the server
    says (``served``, else ``None``)."""
    parts: dict[str, Any] = {"v": 1, "endpoint": endpoint, "variant": variant,
                             "prompt_sha256": prompt_sha, "request": body.decode()}
    if served is not None:
        parts["served"] = served
    return cache_key(parts)


def _parsed(hit: dict[str, Any] | None, parse: Callable[[Completion], T]) -> tuple[T, Any] | None:
    """``(value, usage)`` from a stored reply, or ``None`` when the parser refuses it."""
    if not isinstance(hit, dict) or not isinstance(hit.get("content"), str):
        return None
    usage = clean_usage(hit.get("usage"))
    logprobs = clean_logprobs({"content": hit.get("logprobs")})
    try:
        return parse(Completion(hit["content"], logprobs, usage)), usage
    except JudgeParseError:
        return None  # an entry our parser no longer accepts: ask again


async def through_cache(
    store: ReplyStore,
    key: str,
    parse: Callable[[Completion], T],
    call: Callable[[], Awaitable[tuple[T, Completion]]],
    *,
    stats: JudgeStats,
    on_hit: Callable[[Mapping[str, Any]], None],
    meta: Mapping[str, str],
) -> T:
    """The stored reply for ``key`` parsed, else ``call()``'s value, its reply stored.

    A key another process is paying for is waited for (``ReplyStore.claim``), then read;
    a failed call releases the key, so the next asker pays.
    """
    hit = await store.get(key)
    found = _parsed(hit, parse)
    if found is not None:
        on_hit(found[1])
        return found[0]
    async with store.turn():
        # None: this process owns the key (or pays unclaimed, for an unusable entry)
        found = _parsed(await store.claim(key, hit), parse)
        if found is not None:  # another process paid for it meanwhile
            stats.cache_waits += 1
            on_hit(found[1])
            return found[0]
        stats.cache_misses += 1
        try:
            value, completion = await call()
        except BaseException:
            await store.release(key)
            raise
        reply = {"content": completion.content, "logprobs": completion.logprobs,
                 "usage": completion.usage}
        await store.put(key, reply, model=meta["model"], prompt_sha=meta["prompt_sha"],
                        variant=meta["variant"])
        return value
