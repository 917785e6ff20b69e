"""``Pacer``: permits for requests in flight, under a limit that adaptive pacing moves
(``control``) and the server's rate-limit quotas hold back (``quotas``); waiting requests go in
the order ``harness.judges.transport.turns`` gives (critical path first, else first come).

Every answered request reports its latency and the mean number in flight during its flight,
from the integral of the in-flight count over time (``_advance``), not the count when it was
sent: the statistics of an epoch (``control.Epoch``).
"""

from __future__ import annotations

import asyncio
import heapq
import math
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from harness.core.types import JudgeStats
from harness.judges.transport import turns
from harness.judges.transport.pacing import memory as learned
from harness.judges.transport.pacing.control import INITIAL, MIN_EPOCH, Control, Epoch
from harness.judges.transport.pacing.quotas import Quotas
from harness.judges.transport.pacing.retries import MAX_RETRY_AFTER
from harness.judges.transport.pacing.waits import Waits, told_by

#: 429s at this share of the recent outcomes (at least ``MIN_OUTCOMES`` of them counted) are
#: a rate limit being hit, not noise: every send waits the ``Retry-After``.
RATE_LIMITED, MIN_OUTCOMES = 0.2, 4
#: Statuses that mean the server is overloaded: the limit halves.
OVERLOADED = frozenset({503, 504})
#: Statuses ``back_off`` is told about (429 is a rate limit: see ``back_off``).
CONGESTED = frozenset({429}) | OVERLOADED


@dataclass(slots=True)
class Ticket:
    """One request's permit: when it was sent, the in-flight integral then, its epoch."""

    sent_at: float
    area: float
    epoch: Epoch | None = None  # None: not counted in any epoch's statistics


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
        timeout: float | None = None,
        max_wait: float = MAX_RETRY_AFTER,
        where: str | None = None,
    ) -> None:
        self.ceiling = min(max_concurrency, slots) if adaptive and slots else max_concurrency
        self.adaptive = adaptive
        # a server's slots are the most it runs at once, not what it runs best (4 slots on 2
        # CPU cores): start at half of them and grow while goodput follows
        cold = max(1, self.ceiling // 2) if slots else min(self.ceiling, INITIAL)
        start = float(cold if adaptive else self.ceiling)
        self._memory = memory if adaptive else None
        warm = learned.recall(self._memory)
        if warm is not None:  # start warm, never below a cold start
            start = min(max(start, warm), float(self.ceiling))
        self.control = Control(self.ceiling, start, timeout=timeout if adaptive else None,
                               warm=warm is not None or not adaptive)
        self.quotas = Quotas(max_wait)
        self.waits = Waits(max_wait, where)  # server-directed waits: bounded, said aloud
        self.in_flight = 0
        self.stats = stats if stats is not None else JudgeStats()
        self._clock = clock
        self._area = 0.0
        self._area_at = clock()
        self._resume_at, self._resume_told = -math.inf, ""
        self._timer: asyncio.TimerHandle | None = None
        # (turn, arrival, future): a heap, the request that goes first on top
        self._waiters: list[tuple[tuple[int, int], int, asyncio.Future[None]]] = []
        self._arrivals = 0
        self._outcomes: deque[bool] = deque(maxlen=256)  # True: a 429
        self._delivered = 0  # answers so far
        self._epoch = self._new_epoch(None)
        self.stats.final_limit = self.permits()

    @property
    def limit(self) -> float:
        """The limit adaptive pacing chose (``permits`` also applies the time-out bound)."""
        return self.control.limit

    def permits(self) -> int:
        """Requests allowed in flight now."""
        return self.control.permits()

    # ------------------------------------------------------------------ permits

    def _free(self) -> bool:
        return self.in_flight < self.permits() and self._blocked_until() <= self._clock()

    def _blocked_until(self) -> float:
        """When new sends may resume: after a pause, and when every known rate-limit quota
        holds what one more request needs (at most ``max_wait`` from now)."""
        return self._held()[0]

    def _held(self) -> tuple[float, str]:
        """``_blocked_until`` and the header that holds the sends back."""
        if not self.quotas.known:
            return self._resume_at, self._resume_told
        until, told = self.quotas.holding(self._clock())
        self.waits.beyond(self.quotas)
        return (until, told) if until > self._resume_at else (self._resume_at, self._resume_told)

    def _advance(self) -> float:
        """Bring the integral of the in-flight count over time up to now; return now."""
        now = self._clock()
        self._area += self.in_flight * (now - self._area_at)
        self._area_at = now
        return now

    def _grant(self) -> None:
        """One more request in flight, counted against every known quota."""
        self.quotas.charge(self._advance())
        self.in_flight += 1

    def _ticket(self, counted: bool = True) -> Ticket:
        now = self._advance()
        epoch: Epoch | None = self._epoch
        if not counted or epoch is None or epoch.sent >= epoch.quota:
            epoch = None
        elif epoch.skip > 0:
            epoch.skip -= 1
            epoch = None
        else:
            epoch.sent += 1
        if self.in_flight > self.stats.peak_in_flight:
            self.stats.peak_in_flight = self.in_flight
        return Ticket(now, self._area, epoch)

    async def acquire(self) -> Ticket:
        """Wait for a permit (in ``turns.current()`` order among the waiting, else first
        come, first served); the HTTP time-out starts after."""
        if self._waiters or not self._free():
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._arrivals += 1
            heapq.heappush(self._waiters,
                           (turns.current(self.permits() // 2), self._arrivals, fut))
            self._wake()
            try:
                await fut
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled():  # granted, then cancelled: pass it on
                    self._advance()
                    self.in_flight -= 1
                    self._wake()
                else:
                    self._waiters = [w for w in self._waiters if w[2] is not fut]
                    heapq.heapify(self._waiters)
                raise
        else:
            self._grant()
        return self._ticket()

    def _wake(self) -> None:
        while self._waiters and self._free():
            fut = heapq.heappop(self._waiters)[2]
            if not fut.done():
                self._grant()
                fut.set_result(None)
        (until, told), now = self._held(), self._clock()
        wait = until - now
        if self._waiters and wait > 0:
            self.waits.say(now, until, told)
        if self._waiters and wait > 0 and self._timer is None:
            def resume() -> None:
                self._timer = None
                self._wake()

            self._timer = asyncio.get_running_loop().call_later(wait, resume)

    def release(self, ticket: Ticket, ok: bool = False) -> float:
        """Return a permit; ``ok``: the request was answered, its latency is a sample.
        Returns the request's latency in seconds."""
        now = self._advance()
        latency = now - ticket.sent_at
        if self.adaptive:
            if ok:
                self._outcomes.append(False)
                self._delivered += 1
            epoch = ticket.epoch
            if epoch is not None and epoch is self._epoch:
                epoch.done += 1
                if ok and latency > 0:
                    epoch.answers += 1
                    epoch.latency += latency
                    epoch.load += (self._area - ticket.area) / latency
                if epoch.judged():
                    probe = self.control.judge(
                        epoch, self._delivered - epoch.delivered, now - epoch.started)
                    self._changed(probe)
        self.in_flight -= 1
        self._wake()
        return latency

    def renew(self, ticket: Ticket) -> Ticket | None:
        """Keep a permit for a retry when the limit still allows it (a new ticket, counted in
        no epoch), else give it back (``None``: acquire again, behind the requests waiting)."""
        if self.in_flight <= self.permits() and self._blocked_until() <= self._clock():
            if ticket.epoch is self._epoch and ticket.epoch is not None:
                ticket.epoch.done += 1
            self.in_flight -= 1
            self._grant()  # a new send: counted against the quotas again
            return self._ticket(counted=False)
        self.release(ticket)
        return None

    # ------------------------------------------------------------------ epochs

    def _new_epoch(self, before: Epoch | None, probe: str = "") -> Epoch:
        limit = self.permits()
        # after a change of limit the first round trip of sends meets the old queue (a
        # probe's would look better than it is): only the sends after it count
        skip = limit if before is not None and before.limit != limit else 0
        self._epoch = Epoch(limit, max(MIN_EPOCH, limit), probe, skip, self._clock(),
                            self._delivered)
        return self._epoch

    def _changed(self, probe: str = "") -> None:
        """The limit may have moved: a new epoch, the memory, waiters woken."""
        self.stats.final_limit = self.permits()
        if self._memory is not None and not probe:
            learned.remember(self._memory, self.control.limit)
        self._new_epoch(self._epoch, probe)
        self._wake()

    # ------------------------------------------------------------------ overload

    def back_off(
        self, ticket: Ticket, retry_after: float | None = None, status: int | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """The server refused or dropped a request (``status`` 429, 503, 504; ``None``: a
        time-out or a dropped connection).

        A 429 is a rate limit: waiting helps, fewer in flight would not. Only its own
        request waits (its ``Retry-After``), unless 429s are ``RATE_LIMITED`` of the recent
        outcomes or the headers say the quota is spent: then every send waits too (for the
        mirrored quota's refill, else the ``Retry-After``). Overload (503, 504, a time-out, a
        dropped connection) pauses every send for the ``Retry-After`` and halves the limit.
        """
        if not self.adaptive:
            return
        now = self._clock()
        if status == 429:
            self._outcomes.append(True)
            self.quotas.refund(ticket.sent_at)
            window = max(MIN_OUTCOMES, self.permits())
            recent = list(self._outcomes)[-window:]
            spent = self.observe(headers, ticket.sent_at)
            if spent and self.quotas.known:
                return  # sends wait for the quota's refill, not for a rounded Retry-After
            if (spent or sum(recent) >= RATE_LIMITED * window) and retry_after:
                self._pause(now + min(retry_after, self.waits.max_wait), told_by(headers))
            return
        if retry_after is not None and retry_after > 0:
            self._pause(now + min(retry_after, self.waits.max_wait), told_by(headers))
        if self.control.halve(now, ticket.sent_at):
            self.stats.backoffs += 1
            self._changed()

    def _pause(self, until: float, told: str = "") -> None:
        if until > self._resume_at:
            self._resume_at, self._resume_told = until, told
            self.stats.pauses += 1

    def observe(self, headers: Mapping[str, str] | None, sent_at: float | None = None) -> bool:
        """Read the rate-limit headers of the reply to a request sent at ``sent_at`` (None:
        now); sends wait while a quota is spent. Returns whether one is."""
        if not self.adaptive or not headers:
            return False
        now = self._clock()
        spent, resume = self.quotas.read(headers, now, now if sent_at is None else sent_at)
        if resume is not None:
            self._pause(*resume)
        self.waits.beyond(self.quotas)
        if spent:
            self._wake()
        return spent

    def note_tokens(self, tokens: int) -> None:
        """Tokens one answered request used, ``max_tokens`` included (what a token quota
        must still hold to send)."""
        self.quotas.note_tokens(tokens)

