"""The requests a run's samples wait on, sent as Batch API batches (``judge.batch``).

A request (``send``) is answered from the verdict cache when a batch answered it already,
by the batch it is pending in when an earlier run sent it (the cache's ``batch_lines``:
the same command run again after a kill resumes it, never sends it again), else it joins
the queue. The queue goes out as one batch once no request has joined it for ``QUIET_S``
and none is still being looked up in the cache (the run's samples have all asked: a slow
cache, a PostgreSQL server far away, does not cut the round into several batches), or at
once at the provider's limits
(``judge.batch_max_requests``, ``judge.batch_max_bytes``: several files side by side). A
second round (a re-ask, contextual precision's explanation) follows as a later batch.

A batch is uploaded (its lines recorded as ``file:ID``), created (recorded under its id),
polled every ``judge.batch_poll`` seconds; when it ends, its answers are stored and its
lines forgotten at once, and the requests waiting on it resolved. A failed line is tried
again in a later batch (or realtime: ``judge.batch_retry``) up to ``judge.max_retries``
times, then its sample is unscored with the reason; a line the batch never reached
(expired, cancelled, or the batch forgotten: 404) goes out again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from harness.core.errors import JudgeError, JudgeUnavailable
from harness.core.types import Completion, JudgeStats
from harness.judges.batch import files, progress
from harness.judges.batch.api import BatchCalls
from harness.judges.batch.files import Ask
from harness.judges.cache.batches import FILE, Meta, Reply
from harness.judges.replies.read import clean_logprobs, clean_usage

if TYPE_CHECKING:
    from harness.judges.cache.lookup import ReplyStore

#: Seconds without a new request after which the queue goes out as a batch.
QUIET_S = 0.15
DONE = ("completed", "expired", "cancelled", "failed")


class Batcher:
    """One judge's requests as batches.

    Args:
        calls: The endpoint's Batch API.
        take: Reads a line's chat completion, counting its tokens at the batch price.
        stats: The judge's counters.
        on_hit: Counts a reply found in the cache.
        poll: Seconds between two looks at a running batch.
        max_requests: Lines a batch holds at most.
        max_bytes: Bytes an input file holds at most.
        max_retries: Later batches (or realtime requests) tried for a line that failed.
        retry: ``batch`` or ``realtime``: how a failed line is tried again.
    """

    def __init__(self, calls: BatchCalls, take: Callable[[bytes, bool], Completion],
                 stats: JudgeStats, on_hit: Callable[[Any], None], *, poll: float,
                 max_requests: int, max_bytes: int, max_retries: int, retry: str) -> None:
        self.calls, self.take, self.stats, self.on_hit = calls, take, stats, on_hit
        self.poll, self.max_requests, self.max_bytes = poll, max_requests, max_bytes
        self.max_retries, self.retry = max_retries, retry
        self.store: ReplyStore | None = None
        self.asks: dict[str, Ask] = {}  # by key: the requests waiting, each once
        self.queue: list[Ask] = []
        self.queued_bytes, self.last = 0, 0.0
        self.looking = 0  # requests still being looked up in the cache: not yet queued
        self.sent: dict[str, set[str]] = {}  # batch -> keys this process sent in it
        self.watching: dict[str, asyncio.Future[None]] = {}
        self.tasks: set[asyncio.Future[None]] = set()
        self._timer: asyncio.Future[None] | None = None
        self.progress = progress.Progress()

    async def prepare(self, store: ReplyStore | None) -> None:
        """Before any work: the cache's table of batch lines, and the endpoint's Batch API."""
        self.store = store
        if store is not None:
            await store.lines.prepare()
        await self.calls.check()

    async def complete(self, key: str, body: bytes, meta: Meta, logprobs: bool,
                       realtime: Callable[[], Awaitable[Completion]]) -> Completion:
        """The completion of one request (``key``: its verdict-cache key, also its line's
        ``custom_id``), trying a failed line again as the settings say; ``JudgeError`` when
        it failed for good, ``JudgeParseError`` when the answer holds no completion."""
        tries = 0
        while True:
            self.stats.calls += 1
            outcome = await self.send(key, body, meta, logprobs)
            if isinstance(outcome, Completion):
                return outcome
            if not (outcome.retry or outcome.lost) or tries >= self.max_retries:
                self.stats.failures += 1
                more = f" (tried {tries + 1} times)" if tries else ""
                raise JudgeError(f"{outcome.why}{more}")
            tries += 1
            self.stats.retries += 1
            if self.retry == "realtime" and not outcome.lost:
                return await realtime()

    async def send(self, key: str, body: bytes, meta: Meta, logprobs: bool) -> files.Outcome:
        """One try: the stored reply, else the answer of the batch the line is in (an
        earlier run's, a request asked twice) or will be in."""
        ask = self.asks.get(key)
        if ask is not None:  # asked already: the same answer
            return await asyncio.shield(ask.future)
        ask = Ask(key, body, meta, logprobs, asyncio.get_running_loop().create_future())
        self.asks[key] = ask
        try:
            if self.store is not None:
                self.looking += 1
                try:
                    hit = await self.store.get(key)
                    pending = None if hit is not None else await self.store.lines.pending(key)
                finally:
                    self.looking -= 1
                if hit is not None:  # answered by a batch, maybe not usable: its reader says
                    usage = clean_usage(hit.get("usage"))
                    self.on_hit(usage)
                    return Completion(hit["content"], clean_logprobs(
                        {"content": hit.get("logprobs")}) if logprobs else None, usage)
                if pending is not None:
                    ask.batch = pending
                    self._watch(pending)
                    return await asyncio.shield(ask.future)
            self._enqueue(ask)
            return await asyncio.shield(ask.future)
        finally:
            if self.asks.get(key) is ask:
                del self.asks[key]

    # ---- the queue -----------------------------------------------------------------------

    def _enqueue(self, ask: Ask) -> None:
        ask.line = files.line(ask.key, ask.body)
        if len(ask.line) > self.max_bytes:  # no file can hold it
            ask.future.set_result(files.Answer(why=f"the request's line ({len(ask.line)} "
                                               "bytes) is larger than judge.batch_max_bytes="
                                               f"{self.max_bytes}"))
            return
        if self.queued_bytes + len(ask.line) > self.max_bytes:
            self._flush()
        self.queue.append(ask)
        self.queued_bytes += len(ask.line)
        if len(self.queue) >= self.max_requests or self.queued_bytes >= self.max_bytes:
            self._flush()
            return
        self.last = time.monotonic()
        if self._timer is None:
            self._timer = asyncio.ensure_future(self._quiet())

    async def _quiet(self) -> None:
        """Send the queue once no request has joined it for ``QUIET_S`` and none is being
        looked up in the cache (it may join)."""
        try:
            while self.queue:
                wait = self.last + QUIET_S - time.monotonic()
                if wait <= 0 and not self.looking:
                    self._flush()
                    break
                await asyncio.sleep(wait if wait > 0 else QUIET_S)
        finally:
            self._timer = None

    def _flush(self) -> None:
        asks, self.queue, self.queued_bytes = self.queue, [], 0
        for part in files.cut([len(a.line) for a in asks], self.max_requests, self.max_bytes):
            self._spawn(self._submit([asks[i] for i in part]))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Future[None]:
        task = asyncio.ensure_future(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    async def _submit(self, asks: list[Ask]) -> None:
        """Upload, record, create, then follow one batch."""
        try:
            file_id = await self.calls.upload(b"".join(a.line for a in asks),
                                              "harness-batch.jsonl")
            name = FILE + file_id
            self._sent(asks, name)
            if self.store is not None:  # before the creation: a kill after it finds it
                await self.store.lines.record(name, [(a.key, a.meta) for a in asks])
            batch = await self.calls.create(file_id)
            if self.store is not None:
                await self.store.lines.rename(name, batch.id)
            self.sent.pop(name, None)
            self._sent(asks, batch.id)
            self.stats.batches += 1
            self.stats.batch_ids.append(batch.id)
            self.stats.requests += len(asks)
            self._watch(batch.id)
        except Exception as e:  # noqa: BLE001 (handed to the requests that wait on it)
            self._fail(asks, e)

    def _sent(self, asks: Sequence[Ask], batch: str) -> None:
        self.sent[batch] = {a.key for a in asks}
        for ask in asks:
            ask.batch, ask.line = batch, b""  # uploaded: the line's bytes are not needed

    def _fail(self, asks: Sequence[Ask], error: BaseException) -> None:
        for ask in asks:
            if not ask.future.done():
                ask.future.set_exception(error)

    def _watch(self, batch: str) -> None:
        if batch not in self.watching:
            self.watching[batch] = self._spawn(self._follow(batch))

    async def _follow(self, batch: str) -> None:
        """Poll ``batch`` until it ends, then settle it."""
        name = batch
        try:
            if batch.startswith(FILE):  # its creation's answer was lost: made or not?
                found = await self.calls.find(batch[len(FILE):])
                if found is None:
                    await self._settle(batch, {}, "its batch was never created")
                    return
                if self.store is not None:
                    await self.store.lines.rename(batch, found.id)
                self._moved(batch, found.id)
                batch = found.id
            if batch not in self.stats.batch_ids and batch not in self.stats.resumed_batch_ids:
                self.stats.resumed_batch_ids.append(batch)  # an earlier run's
            started = time.monotonic()
            while True:
                got = await self.calls.retrieve(batch)
                if got is None:
                    await self._settle(batch, {}, f"the server no longer knows batch {batch}")
                    return
                self.progress.say(got, started)
                if got.status in DONE:
                    break
                await asyncio.sleep(self.poll)
            if got.status == "failed":
                raise JudgeUnavailable(f"judge: the Batch API failed batch {batch} "
                                       f"({progress.errors(got)}); nothing of it was answered")
            answers: dict[str, files.Answer] = {}
            for file_id in (got.output_file_id, got.error_file_id):
                data = None if not file_id else await self.calls.content(file_id)
                answers.update(files.read(data or b""))
            await self._settle(batch, answers, f"batch {batch} ended {got.status}")
        except Exception as e:  # noqa: BLE001 (handed to the requests that wait on it)
            self._fail([a for a in self.asks.values() if a.batch in (name, batch)], e)
        finally:
            self.watching.pop(name, None)
            self.watching.pop(batch, None)

    def _moved(self, old: str, new: str) -> None:
        self.sent[new] = self.sent.pop(old, set()) | self.sent.get(new, set())
        for ask in self.asks.values():
            if ask.batch == old:
                ask.batch = new
        self.watching.setdefault(new, self.watching[old])

    async def _settle(self, batch: str, answers: dict[str, files.Answer], lost: str) -> None:
        """Store the answers, forget the batch's lines, resolve the requests waiting."""
        known = {} if self.store is None else await self.store.lines.of_batch(batch)
        waiting = {k for k, a in self.asks.items() if a.batch == batch}
        keys = set(known) | self.sent.pop(batch, set()) | set(answers) | waiting
        replies: list[Reply] = []
        outcomes: dict[str, files.Outcome | BaseException] = {}
        for key in sorted(keys):
            answer = answers.get(key) or files.Answer(
                why=f"the batch did not answer the line ({lost})", lost=True)
            ask = self.asks.get(key)
            if answer.body is None:
                outcomes[key] = answer
                continue
            try:
                completion = self.take(answer.body, True if ask is None else ask.logprobs)
            except JudgeError as e:  # no completion in it (JudgeParseError): re-asked
                outcomes[key] = e
                continue
            outcomes[key] = completion
            meta = known.get(key) if ask is None else ask.meta
            if meta is not None:
                replies.append((key, {"content": completion.content,
                                      "logprobs": completion.logprobs,
                                      "usage": completion.usage}, meta))
        if self.store is not None:
            await self.store.lines.settle(batch, replies, sorted(keys))
        for key, outcome in outcomes.items():
            ask = self.asks.get(key)
            if ask is None or ask.future.done():
                continue
            if isinstance(outcome, Completion):
                ask.future.set_result(outcome)
            elif ask.batch == batch:  # not a line that waits on another batch now
                if isinstance(outcome, BaseException):
                    ask.future.set_exception(outcome)
                else:
                    ask.future.set_result(outcome)

    async def aclose(self, store: ReplyStore | None) -> list[str]:
        """Stop waiting (the batches run on at the provider); say on stderr which still run
        and that a rerun resumes them (they are recorded in ``store``); their ids."""
        running = [b for b in self.watching if not b.startswith(FILE)]
        waiting = [t for t in (*self.tasks, self._timer) if t is not None and not t.done()]
        for task in waiting:
            task.cancel()
        await asyncio.gather(*waiting, return_exceptions=True)
        if running and store is not None:
            progress.still_running(running, self.calls.endpoint().where, store.location)
        return running

