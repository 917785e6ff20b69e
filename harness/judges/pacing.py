"""How many judge requests to keep in flight: a limit that finds the server's capacity.

``Pacer`` hands out permits (one per HTTP request) up to a limit. With ``adaptive`` pacing
the limit starts low and follows the server, as TCP and Netflix's concurrency-limits do:

* slow start: +3 per answered request (up to 4x per round trip) while the latency stays
  within ``TOLERANCE`` × the no-load latency (the least seen for that kind of request)
  for requests sent with at least a quarter of the limit in flight; three answers in a
  row above it end slow start, and the limit drops to what the server served without
  queueing (in flight × tolerance / latency ratio);
* then a gradient: per answer the limit moves 1/limit of the way to ``limit + √limit``
  while latency stays flat, or down to ``in flight when sent × tolerance / ratio + 1``
  when it rose (a server queue: about tolerance × the server's slots), so it changes by
  about one step per round trip;
* a 429, 503, time-out or dropped connection halves it (floor 1), once per round trip
  (only a request sent after the last halving halves it again); ``Retry-After`` pauses new
  sends until then.

``fixed`` pacing is a plain limit of ``max_concurrency``. The limit never exceeds the
ceiling: ``max_concurrency``, or the server's slot count when known (it also starts there).
A pacer given a ``memory`` key (the endpoint and model) starts where the last one with that
key in this process left off: the jobs of a sweep, or repeated ``harness.evaluate`` calls,
do not ramp up again.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
from collections import deque
from collections.abc import Callable, Mapping

from harness.types import JudgeStats

#: Latency up to this multiple of the no-load latency counts as flat (no server queue).
TOLERANCE = 1.5
#: The starting limit when the server's slot count is unknown.
INITIAL = 16
#: Slow start's step per answer with flat latency (the limit grows up to 4x per round trip).
GROWTH = 3.0
#: Consecutive answers above the tolerance that end slow start.
STREAK = 3
#: Longest server-directed pause honoured, in seconds (a longer ``Retry-After`` is refused).
MAX_RETRY_AFTER = 60.0
#: Statuses that mean the server is overloaded: the limit halves.
CONGESTED = frozenset({429, 503, 504})

#: What ``Pacer.acquire`` returns and ``release`` takes: (sent at, in flight then).
Ticket = tuple[float, int]

#: The limit (and whether slow start was still on) each endpoint ended at, in this process.
_LEARNED: dict[str, tuple[float, bool]] = {}


class Pacer:
    """Permits for requests in flight, under a limit that ``adaptive`` pacing adjusts."""

    def __init__(
        self,
        max_concurrency: int,
        *,
        adaptive: bool = True,
        slots: int | None = None,
        stats: JudgeStats | None = None,
        clock: Callable[[], float] = time.monotonic,
        memory: str | None = None,
    ) -> None:
        self.ceiling = min(max_concurrency, slots) if adaptive and slots else max_concurrency
        self.adaptive = adaptive
        start = self.ceiling if slots or not adaptive else min(self.ceiling, INITIAL)
        self.limit: float = float(start)
        self.in_flight = 0
        self.slow_start = adaptive
        self._memory = memory if adaptive else None
        if self._memory in _LEARNED:
            learned, self.slow_start = _LEARNED[self._memory]
            self.limit = min(max(learned, 1.0), float(self.ceiling))
            start = self.permits()
        self.stats = stats if stats is not None else JudgeStats()
        self.stats.final_limit = start
        self._clock = clock
        self._base: dict[str, float] = {}
        self._streak = 0
        self._halved_at = -math.inf
        self._resume_at = -math.inf
        self._timer: asyncio.TimerHandle | None = None
        self._waiters: deque[asyncio.Future[None]] = deque()

    def permits(self) -> int:
        """Requests allowed in flight now."""
        return max(1, int(self.limit))

    def _free(self) -> bool:
        return self.in_flight < self.permits() and self._clock() >= self._resume_at

    async def acquire(self) -> Ticket:
        """Wait for a permit (first come, first served); the HTTP time-out starts after."""
        if self._waiters or not self._free():
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            self._wake()
            try:
                await fut
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled():  # granted, then cancelled: pass it on
                    self.in_flight -= 1
                    self._wake()
                else:
                    with contextlib.suppress(ValueError):
                        self._waiters.remove(fut)
                raise
        else:
            self.in_flight += 1
        if self.in_flight > self.stats.peak_in_flight:
            self.stats.peak_in_flight = self.in_flight
        return self._clock(), self.in_flight

    def _wake(self) -> None:
        while self._waiters and self._free():
            fut = self._waiters.popleft()
            if not fut.done():
                self.in_flight += 1
                fut.set_result(None)
        wait = self._resume_at - self._clock()
        if self._waiters and wait > 0 and self._timer is None:
            def resume() -> None:
                self._timer = None
                self._wake()

            self._timer = asyncio.get_running_loop().call_later(wait, resume)

    def release(self, ticket: Ticket, kind: str = "", ok: bool = False) -> float:
        """Return a permit; ``ok``: the request was answered, its latency is a sample.
        Returns the request's latency in seconds."""
        now = self._clock()
        latency = now - ticket[0]
        if ok and self.adaptive:
            self._sample(kind, latency, ticket[1])
        self.in_flight -= 1
        self._wake()
        return latency

    def renew(self, ticket: Ticket) -> Ticket | None:
        """Keep a permit for a retry when the limit still allows it (a new ticket), else give
        it back (``None``: acquire again, behind the requests already waiting)."""
        if self.in_flight <= self.permits() and self.paused_for() == 0:
            return self._clock(), self.in_flight
        self.release(ticket)
        return None

    def _sample(self, kind: str, latency: float, sent_with: int) -> None:
        base = self._base.get(kind)
        if base is None or latency < base:
            self._base[kind] = base = max(latency, 1e-6)
        ratio = latency / base
        limit = self.limit
        busy = bool(self._waiters) or 2 * self.in_flight >= limit
        if self.slow_start:
            if ratio <= TOLERANCE:
                self._streak = 0
                if busy and (GROWTH + 1) * sent_with >= limit:  # flat with many in flight
                    limit += GROWTH
            else:
                self._streak += 1
                if self._streak >= STREAK:
                    self.slow_start = False
                    limit = min(limit, sent_with * TOLERANCE / ratio)
        elif ratio <= TOLERANCE:
            if busy:
                limit += math.sqrt(limit) / limit
        else:  # what the server served when this was sent, whatever the limit is now
            target = sent_with * TOLERANCE / ratio + 1.0
            if target < limit:
                limit += (target - limit) / limit
        self._set(limit)

    def _set(self, limit: float) -> None:
        self.limit = min(max(limit, 1.0), float(self.ceiling))
        self.stats.final_limit = self.permits()
        if self._memory is not None:
            _LEARNED[self._memory] = (self.limit, self.slow_start)

    def back_off(self, ticket: Ticket, retry_after: float | None = None) -> None:
        """The server is overloaded (429, 503, a time-out, a dropped connection): halve the
        limit, once per round trip, and pause new sends for ``retry_after`` seconds."""
        if not self.adaptive:
            return
        now = self._clock()
        if retry_after is not None and retry_after > 0:
            self._resume_at = max(self._resume_at, now + min(retry_after, MAX_RETRY_AFTER))
        if ticket[0] > self._halved_at:
            self._halved_at = now
            self.slow_start = False
            self.stats.backoffs += 1
            self._set(self.limit * 0.5)

    def paused_for(self) -> float:
        """Seconds until new sends resume (0: not paused)."""
        return max(0.0, self._resume_at - self._clock())


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms``, then ``retry-after`` in seconds
    or as an HTTP date), or ``None``."""
    if not headers:
        return None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            continue
        return seconds if math.isfinite(seconds) else MAX_RETRY_AFTER + 1
    value = headers.get("retry-after")
    if value:
        import email.utils

        with contextlib.suppress(TypeError, ValueError, OverflowError):
            when = email.utils.parsedate_to_datetime(value)
            return when.timestamp() - time.time()
    return None


def backoff(retry: int, hint: float | None = None) -> float:
    """Seconds before retry number ``retry`` (1, 2, ...): the server's hint when it gave one,
    else 0.5 s doubling up to 8 s, less up to a quarter at random (jitter)."""
    if hint is not None and 0 < hint <= MAX_RETRY_AFTER:
        return hint
    return min(0.5 * 2.0 ** (retry - 1), 8.0) * (1 - 0.25 * random.random())


def should_retry(status: int, headers: Mapping[str, str] | None) -> bool:
    """Whether a status is worth another try (as the openai SDK decides: 408, 409, 429,
    5xx, unless ``x-should-retry: false`` or a ``Retry-After`` past ``MAX_RETRY_AFTER``)."""
    hint = retry_after(headers)
    if hint is not None and hint > MAX_RETRY_AFTER:
        return False
    told = (headers or {}).get("x-should-retry")
    if told in ("true", "false"):
        return told == "true"
    return status in (408, 409, 429) or status >= 500
