"""``run.dry_run`` for an OpenAI-compatible judge: every request built as the run would build
it and looked up in the verdict cache (only read), none sent.

``OpenAIJudge.go_dry`` puts a ``DryRun`` behind the judge's own ``ask``: the request body and
its cache key are the real run's, a cached reply is read as the real run reads it, and a
request the real run would send is counted and answered with a well-formed reply made from
its reply schema (``harness.judges.expect``), so the metric goes on as it would (a listwise sample's
explanation call is built from it). Nothing contacts the endpoint: no preflight, no request.

A request an earlier run sent in a Batch API batch that is still running (``judge.batch``,
the cache's ``batch_lines``) is counted apart (``in_running_batches``): with
``judge.batch=true`` the run waits for that batch and sends the request again only if the
batch is lost, so it is not among the requests to send or pay; a realtime run pays for it
again, and a note says so.

What a dry run assumes, and says in ``estimate.json``: every verdict of a made-up reply says
"relevant"; its reasons are as long as the cache's earlier replies of this variant and
prompt made them (else ``expect.REASON_CHARS``); the provider's prompt caching is not counted.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from harness.core.protocols import Kind
from harness.core.types import Completion
from harness.judges.batch.batcher import Batcher
from harness.judges.cache import lookup
from harness.judges.expect import Counts, History, filler, synthetic
from harness.judges.replies.read import tokens
from harness.judges.replies.schemas import schema
from harness.judges.tokens import TokenCounter, counter_for
from harness.judges.transport.chat import ChatTransport

#: The running batch an earlier run sent the request about to be built in (``None``: none),
#: set by ``DryStore.claim`` and read by ``DryRun.complete`` in the same task.
_IN_BATCH: contextvars.ContextVar[str | None] = contextvars.ContextVar("in_batch", default=None)


class DryStore:
    """The verdict cache, only read (opened on first use, in the judge's loop; a missing
    SQLite file is an empty cache, never created): a key this dry run made up a reply for
    answers as the stored reply would in the real run (``repeated``); nothing is written."""

    def __init__(self, dry: DryRun) -> None:
        self.dry, self.location = dry, ""
        self.inner: lookup.ReplyStore | None = None
        self._opened = False
        self._made: dict[str, dict[str, Any]] = {}
        self._found: dict[str, dict[str, Any]] = {}  # stored replies got, by key
        self._hits: Counter[str] = Counter()  # and how often each was taken

    def turn(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """No claims."""
        return contextlib.nullcontext()

    async def _open(self) -> lookup.ReplyStore | None:
        if not self._opened:
            self._opened = True
            dry = self.dry
            if dry.cache_url is not None:
                self.inner = await lookup.open_store(None, dry.cache_url, lease_s=60.0,
                                                     max_claims=1)
            elif (path := lookup.sqlite_path(dry.cache_path)).is_file():
                from harness.judges.cache.sqlite import VerdictCache

                self.inner = lookup.SqliteStore(VerdictCache(path, create=False, write=False))
            self.location = "" if self.inner is None else self.inner.location
        return self.inner

    async def get(self, key: str) -> dict[str, Any] | None:
        """The stored reply (counted as cached once the judge took it), or the one made up."""
        if key in self._made:
            self.dry.repeated += 1
            return self._made[key]
        inner = await self._open()
        hit = None if inner is None else await inner.get(key)
        if hit is not None:
            self._found[key] = hit
            self._hits[key] += 1
        return hit

    async def claim(self, key: str, seen: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """The key is asked for: a stored reply got for it was not usable (asked again);
        whether an earlier run's batch still running holds it is noted for ``complete``."""
        if key in self._found:
            self._hits[key] -= 1
        inner = await self._open()
        _IN_BATCH.set(None if inner is None else await inner.lines.pending(key))
        return None

    async def put(self, key: str, value: dict[str, Any], *, model: str, prompt_sha: str,
                  variant: str) -> None:
        """Keep the made-up reply in memory (a repeat of the request is answered by it);
        the first one reads the cache's history of this variant and prompt."""
        if not self._made and isinstance(self.inner, lookup.SqliteStore):
            self.dry.history.read(self.inner.cache, variant, prompt_sha, model)
        self._made[key] = value

    async def release(self, key: str) -> None:
        """Nothing held."""

    def taken(self) -> list[dict[str, Any]]:
        """The stored replies the judge took, once per time it took each."""
        return [self._found[k] for k, n in self._hits.items() for _ in range(max(0, n))]

    async def aclose(self) -> None:
        """Close the cache."""
        if self.inner is not None:
            await self.inner.aclose()
            self.inner = None


class DryTransport(ChatTransport):
    """A judge's transport that sends nothing: the real one's settings build every body
    (and so every cache key); ``complete`` counts the request and makes up its reply."""

    def __init__(self, inner: ChatTransport, dry: DryRun) -> None:  # noqa: D107
        self.__dict__.update(inner.__dict__)  # the same settings, bodies and identity
        self.dry = dry

    async def preflight(self) -> None:
        """The endpoint is not contacted (``judge.model=auto`` stays unresolved)."""

    async def complete(self, messages: list[dict[str, str]], kind: Kind, logprobs: bool = False,
                       draw: int = 0, items: int | None = None) -> Completion:
        """Count the request the real run would send; answer it with a made-up reply."""
        return self.dry.complete(messages, kind, items)

    async def aclose(self) -> None:
        """Nothing was opened."""


class GoesDry:
    """What makes a judge able to run dry (``run.dry_run``): ``go_dry``."""

    transport: ChatTransport
    cache_path: str | None
    cache_url: str | None
    cache_enabled: bool
    _cache: lookup.Opener
    batcher: Batcher | None

    def go_dry(self) -> DryRun:
        """From now on build and count every request, sending none: no preflight, the
        verdict cache only read, no Batch API (a batch's price comes from the same
        requests); returns what it counts."""
        run = DryRun(self.transport.model, self.cache_path, self.cache_url,
                     self.cache_enabled, batch=self.batcher is not None)
        run.transport = self.transport = DryTransport(self.transport, run)
        run.store = DryStore(run) if self.cache_enabled else None
        if run.store is not None:
            self._cache = Opened(run.store)
        self.batcher = None
        return run


class Opened(lookup.Opener):
    """A store already open (a dry run's): the judge's ``Opener`` for it."""

    def __init__(self, store: Any) -> None:
        self.store = store

    async def get(self) -> Any:
        return self.store

    async def aclose(self) -> None:
        """The dry store closes with its run."""


@dataclass
class DryRun:
    """One judge's dry run: what it would send and what the cache answers.

    Args:
        model: The model the requests name.
        cache_path, cache_url: The judge's verdict cache; ``cache_on``: whether it has one.
        batch: Whether the run would send through the Batch API (``judge.batch``).
    """

    model: str
    cache_path: str | None
    cache_url: str | None
    cache_on: bool
    batch: bool = False
    transport: Any = None
    store: DryStore | None = None
    sent: dict[str, Counts] = field(default_factory=dict)
    repeated: int = 0
    in_batches: Counter[str] = field(default_factory=Counter)  # requests, by running batch
    history: History = field(default_factory=History)
    _counter: TokenCounter | None = None

    @property
    def counter(self) -> TokenCounter:
        """The prompt's token counter (the model's tokenizer offline, else approximate)."""
        if self._counter is None:
            self._counter = counter_for(self.model)
        return self._counter

    def reason_chars(self, kind: str) -> int:
        """How long a made-up reply's reasons are (``History.reason_chars``)."""
        return self.history.reason_chars(kind)

    def complete(self, messages: list[dict[str, str]], kind: Kind,
                 items: int | None = None) -> Completion:
        """Count one request the real run would send (or, in batch mode, wait for in an
        earlier run's running batch); make up its reply from its schema."""
        node = schema(kind, items, self.model)
        reply = synthetic(node, filler(self.reason_chars(kind)))
        content = json.dumps(reply, ensure_ascii=False)
        running = _IN_BATCH.get()
        _IN_BATCH.set(None)
        if running is not None:
            self.in_batches[running] += 1
        counts = (Counts() if running is not None and self.batch
                  else self.sent.setdefault(kind, Counts()))
        prompt, done = self.counter.request(messages), self.counter.text(content)
        counts.requests += 1
        counts.prompt_tokens += prompt
        counts.items += items or 1
        counts.completion_tokens += done
        return Completion(content, None, {"prompt_tokens": prompt, "completion_tokens": done},
                          self.model, "stop")

    def report(self) -> dict[str, Any]:
        """This judge's requests and tokens, as ``estimate.json`` holds them per variant
        (costs and times are added by ``harness.run.estimate``)."""
        taken = self.store.taken() if self.store is not None else []
        cached_prompt = sum(tokens((r.get("usage") or {}).get("prompt_tokens")) for r in taken)
        cached_completion = sum(tokens((r.get("usage") or {}).get("completion_tokens"))
                                for r in taken)
        if not self.history.by_kind:  # no history read (PostgreSQL): the replies taken
            self.history.take(taken)
        by_kind, sources = {}, []
        for kind, counts in sorted(self.sent.items()):
            expected, source = self.history.expected(kind, counts)
            by_kind[kind] = {"requests": counts.requests, "prompt_tokens": counts.prompt_tokens,
                             "completion_tokens": expected}
            sources.append(f"{kind}: {source}")
        billed = sum(c.requests for c in self.sent.values())
        running = sum(self.in_batches.values())
        return {
            "model": self.model,
            "requests": billed + len(taken) + self.repeated + (running if self.batch else 0),
            "cached_requests": len(taken),
            "repeated_requests": self.repeated,
            "billed_requests": billed,
            "in_running_batches": running if self.batch else 0,
            "billed_though_in_batches": 0 if self.batch else running,
            "running_batches": sorted(self.in_batches),
            "prompt_tokens": sum(k["prompt_tokens"] for k in by_kind.values()),
            "completion_tokens": sum(k["completion_tokens"] for k in by_kind.values()),
            "by_kind": by_kind,
            "cache_saves": {"prompt_tokens": cached_prompt, "completion_tokens": cached_completion},
            "prompt_tokens_by": self.counter.method,
            "completion_tokens_by": "; ".join(sources) or "no requests",
            "cache": lookup.location(self.cache_path, self.cache_url, on=self.cache_on),
            "max_concurrency": self.transport.max_concurrency,
            "observed": self.history.observed(),
            **self.pricing(),
        }

    def pricing(self) -> dict[str, Any]:
        """``prices`` (USD per million tokens) of the model, or ``cost_unknown``: why not
        (a local endpoint, a model without a price)."""
        why = self.transport.unpriced()
        if why is not None:
            return {"prices": None, "cost_unknown": why}
        return {"prices": dict(self.transport.prices[self.transport.model]),
                "cost_unknown": None}
