"""Adaptive pacing against simulated servers, in virtual time: many server shapes in seconds.

The real ``Pacer`` and a request loop shaped like ``harness.judges.transport.sending.post``
(acquire, send, release, back off on 429/503/time-outs, retry after the server's
``Retry-After``) run on an asyncio loop whose clock jumps to the next timer instead of
sleeping, so a run of 1000 requests at 200 ms takes milliseconds and gives the same
numbers on a busy machine.
The HTTP path itself is tested against ``tests/helpers/judge_server.py``; this covers the limiter's
decisions over latency shapes a real server has: jitter, heavy tails, fast/slow mixes, a few
slots with a queue, random 429s, a token-rate limit with headers, and a change mid-run.
"""

from __future__ import annotations

import asyncio
import math
import random
import selectors
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.judges.transport.pacing import CONGESTED, Pacer, backoff, retry_after, should_retry

Draw = Callable[[random.Random], float]


def constant(mean: float) -> Draw:
    return lambda rng: mean


def gaussian(mean: float, sd: float) -> Draw:
    return lambda rng: max(0.001, rng.gauss(mean, sd))


def lognormal(median: float, p99_over_median: float) -> Draw:
    sigma = math.log(p99_over_median) / 2.326
    return lambda rng: median * math.exp(rng.gauss(0.0, sigma))


def bimodal(fast: float, slow: float, p_slow: float) -> Draw:
    return lambda rng: (slow if rng.random() < p_slow else fast) * rng.uniform(0.9, 1.1)


@dataclass
class Shape:
    """A server: service time per request, slots (None: as many as asked), faults."""

    name: str
    service: Draw
    slots: int | None = None
    p429: float = 0.0
    retry_after: float = 1.0
    p503: float = 0.0
    #: a token bucket: (tokens per second, capacity, tokens per request); 429 + headers
    token_rate: tuple[float, float, float] | None = None
    #: from this time on, service times x ``slow_factor`` and ``later_slots`` slots
    change_at: float | None = None
    slow_factor: float = 1.0
    later_slots: int | None = None
    #: requests waiting beyond this many are answered 503 at once (a bounded server queue)
    queue_limit: int | None = None
    #: every request in [start, end) seconds is answered 503 (an outage)
    storm: tuple[float, float] | None = None
    #: service time x (1 + active / batching): a batching server (vLLM), slower per request
    #: but faster in all as more run at once
    batching: float | None = None

    def mean_service(self, n: int = 20000, seed: int = 1) -> float:
        rng = random.Random(seed)
        return sum(self.service(rng) for _ in range(n)) / n


class _Clockwork(selectors.SelectSelector):
    def __init__(self) -> None:
        super().__init__()
        self.loop: VirtualLoop | None = None

    def select(self, timeout: float | None = None) -> list[Any]:
        assert self.loop is not None
        if timeout is None:
            raise RuntimeError("simulation deadlock: nothing scheduled")
        self.loop.now += max(timeout, 0.0)
        return []


class VirtualLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock advances to the next timer at once."""

    def __init__(self) -> None:
        selector = _Clockwork()
        super().__init__(selector)
        selector.loop = self
        self.now = 0.0

    def time(self) -> float:
        return self.now


@dataclass
class ServerStats:
    requests: int = 0
    ok: int = 0
    status_429: int = 0
    status_503: int = 0
    cancelled: int = 0
    in_flight: int = 0
    in_flight_max: int = 0
    busy: float = 0.0  # slot-seconds of service


class SimServer:
    """Serves requests under a shape: a FIFO queue in front of the slots."""

    def __init__(self, shape: Shape, loop: VirtualLoop, seed: int) -> None:
        self.shape, self.loop = shape, loop
        self.rng = random.Random(seed)
        self.stats = ServerStats()
        self.active = 0
        self.waiting: deque[asyncio.Future[None]] = deque()
        self.bucket = shape.token_rate[1] if shape.token_rate else 0.0
        self.bucket_at = 0.0

    def _slots(self) -> int | None:
        s = self.shape
        if s.change_at is not None and self.loop.now >= s.change_at and s.later_slots:
            return s.later_slots
        return s.slots

    def _free(self) -> bool:
        slots = self._slots()
        return slots is None or self.active < slots

    def _wake(self) -> None:
        while self.waiting and self._free():
            fut = self.waiting.popleft()
            if not fut.done():
                self.active += 1
                fut.set_result(None)

    def _bucket_headers(self) -> dict[str, str]:
        assert self.shape.token_rate is not None
        rate, cap, _ = self.shape.token_rate
        now = self.loop.now
        self.bucket = min(cap, self.bucket + (now - self.bucket_at) * rate)
        self.bucket_at = now
        return {"x-ratelimit-limit-tokens": str(int(cap)),
                "x-ratelimit-remaining-tokens": str(int(self.bucket)),
                "x-ratelimit-reset-tokens": f"{(cap - self.bucket) / rate:.3f}s"}

    async def handle(self) -> tuple[int, dict[str, str]]:
        s, st = self.shape, self.stats
        st.requests += 1
        headers: dict[str, str] = {}
        if s.token_rate is not None:  # as a rate limiter does: counted when it arrives
            headers = self._bucket_headers()
            cost = s.token_rate[2]
            if self.bucket < cost:
                st.status_429 += 1
                await asyncio.sleep(0.005)
                wait = (cost - self.bucket) / s.token_rate[0]
                return 429, {**headers, "retry-after": f"{math.ceil(wait)}"}
            self.bucket -= cost
            headers = self._bucket_headers()
        if s.p429 and self.rng.random() < s.p429:
            st.status_429 += 1
            await asyncio.sleep(0.005)
            return 429, {"retry-after": str(s.retry_after)}
        storm = s.storm is not None and s.storm[0] <= self.loop.now < s.storm[1]
        full = s.queue_limit is not None and len(self.waiting) >= s.queue_limit
        if storm or full or (s.p503 and self.rng.random() < s.p503):
            st.status_503 += 1
            await asyncio.sleep(0.005)
            return 503, {"retry-after": str(s.retry_after)}
        service = s.service(self.rng)
        if s.change_at is not None and self.loop.now >= s.change_at:
            service *= s.slow_factor
        if s.batching:
            service *= 1 + self.active / s.batching
        if self._free() and not self.waiting:
            self.active += 1
        else:
            fut: asyncio.Future[None] = self.loop.create_future()
            self.waiting.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled():
                    self.active -= 1
                    self._wake()
                st.cancelled += 1
                raise
        st.in_flight += 1
        st.in_flight_max = max(st.in_flight_max, st.in_flight)
        start = self.loop.now
        try:
            await asyncio.sleep(service)
        except asyncio.CancelledError:
            st.cancelled += 1
            raise
        finally:
            st.busy += self.loop.now - start
            st.in_flight -= 1
            self.active -= 1
            self._wake()
        st.ok += 1
        return 200, headers


@dataclass
class Result:
    shape: str
    pacing: str
    concurrency: int
    wall: float
    judgements: int
    requests: int
    timeouts: int
    cancelled: int
    backoffs: int
    final_limit: int
    peak: int
    server_max: int
    limits: list[tuple[float, int]] = field(default_factory=list)

    @property
    def per_s(self) -> float:
        return self.judgements / self.wall


def simulate(
    shape: Shape, n: int = 1000, concurrency: int = 64, pacing: str = "adaptive",
    timeout: float = 60.0, max_retries: int = 5, seed: int = 0, memory: str | None = None,
    slots_known: int | None = None,
) -> Result:
    """Run ``n`` judgements against ``shape`` with the real ``Pacer``; all at once, as the
    runner's batch does."""
    loop = VirtualLoop()
    server = SimServer(shape, loop, seed)
    pacer = Pacer(concurrency, adaptive=pacing == "adaptive", clock=loop.time, memory=memory,
                  timeout=timeout, slots=slots_known)
    if shape.token_rate:  # what the transport tells it before any reply (max_tokens)
        pacer.note_tokens(int(shape.token_rate[2]))
    timeouts = 0
    limits: list[tuple[float, int]] = []
    random.seed(seed)  # backoff()'s jitter

    async def ask() -> None:
        nonlocal timeouts
        ticket = await pacer.acquire()
        retries, ok = 0, False
        try:
            while True:
                if ticket is None:
                    ticket = await pacer.acquire()
                try:
                    status, headers = await asyncio.wait_for(server.handle(), timeout)
                except asyncio.TimeoutError:
                    timeouts += 1
                    pacer.stats.timeouts += 1
                    pacer.back_off(ticket)
                    hint = None
                else:
                    if status == 200:
                        ok = True
                        pacer.observe(headers, ticket.sent_at)
                        if shape.token_rate:
                            pacer.note_tokens(int(shape.token_rate[2]))
                        return
                    hint = retry_after(headers)
                    if status in CONGESTED:
                        pacer.back_off(ticket, hint, status, headers)
                    if not should_retry(status, headers):
                        return
                if retries >= max_retries:
                    return
                retries += 1
                await asyncio.sleep(backoff(retries, hint))
                ticket = pacer.renew(ticket)
        finally:
            if ticket is not None:
                pacer.release(ticket, ok)
            limits.append((loop.now, pacer.permits()))

    async def main() -> None:
        await asyncio.gather(*(ask() for _ in range(n)))

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    st = pacer.stats
    return Result(shape.name, pacing, concurrency, loop.now, server.stats.ok,
                  server.stats.requests, timeouts, server.stats.cancelled, st.backoffs,
                  st.final_limit, st.peak_in_flight, server.stats.in_flight_max, limits)


def physical_limit(shape: Shape, n: int, concurrency: int) -> float:
    """The least time any client could take: ``n`` services over the usable slots (or the
    token rate), ignoring faults."""
    slots = min(shape.slots or concurrency, concurrency)
    t = n * shape.mean_service() / slots
    if shape.token_rate is not None:
        rate, cap, cost = shape.token_rate
        t = max(t, (n * cost - cap) / rate)
    return t


def best_fixed(shape: Shape, n: int, concurrency: int, timeout: float = 60.0,
               seed: int = 0) -> Result:
    """The fastest fixed limit that completes every judgement, from a search over
    1..concurrency."""
    grid = sorted({c for c in (1, 2, 4, 6, 8, 10, 12, 16, 24, 32, 48, 64, 96, 128)
                   if c <= concurrency} | {concurrency})
    runs = [simulate(shape, n, c, "fixed", timeout, seed=seed) for c in grid]
    return min(runs, key=lambda r: (-r.judgements, r.wall))  # complete runs first


SHAPES = {
    "constant": Shape("constant", constant(0.2)),
    "gauss25": Shape("gauss25", gaussian(0.2, 0.05)),
    "gauss50": Shape("gauss50", gaussian(0.2, 0.1)),
    "lognormal": Shape("lognormal", lognormal(0.2, 5.0)),
    "bimodal": Shape("bimodal", bimodal(0.1, 1.0, 0.2)),
    "slots8": Shape("slots8", constant(0.2), slots=8),
    "slots8_jitter": Shape("slots8_jitter", lognormal(0.2, 3.0), slots=8),
    "slots4_slow": Shape("slots4_slow", gaussian(2.0, 0.5), slots=4),
    "random429": Shape("random429", constant(0.2), p429=0.05, retry_after=1.0),
    "tokens": Shape("tokens", gaussian(0.2, 0.05), token_rate=(20000.0, 20000.0, 500.0)),
    "shrinks": Shape("shrinks", gaussian(0.2, 0.05), change_at=2.0, later_slots=8),
    "grows": Shape("grows", gaussian(0.2, 0.05), slots=8, change_at=5.0, later_slots=1000),
    "batching": Shape("batching", gaussian(0.2, 0.05), batching=32.0),
    "bounded_queue": Shape("bounded_queue", gaussian(0.2, 0.05), slots=8, queue_limit=8,
                           retry_after=1.0),
    "storm503": Shape("storm503", gaussian(0.2, 0.05), storm=(1.0, 1.5), retry_after=0.1),
}
