"""Issue 13, pacing: how many judge requests are in flight follows the server.

Over HTTP against the test judge (``tests/judge_server.py``) with the real openai SDK: a slow
server with a few slots (no time-outs, no cancelled work, no duplicate requests, throughput
near the slots' capacity, where a fixed limit of 64 times out), back-off on 429 (its
Retry-After pauses every send), 503 and time-outs, and an output format refused with a 500
that steps down without spending a retry. Then the limiter's arithmetic on a fake clock.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from judge_server import JudgeServer, Label, LabelKey

from harness.errors import ConfigError
from harness.judges.openai_chat import OpenAIJudge
from harness.judges.pacing import INITIAL, Pacer, backoff, retry_after
from harness.types import Completion

SLOTS, LATENCY = 4, 0.25


def labels(n: int) -> dict[LabelKey, Label]:
    return {f"chunk {i}": i % 2 for i in range(n)}


def judge_for(server: JudgeServer, **kw: Any) -> OpenAIJudge:
    kw.setdefault("max_concurrency", 64)
    return OpenAIJudge("test-judge", base_url=server.base_url, api_key_env=None, cache=False,
                       **kw)


def messages(i: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"<question>\nq{i}\n</question>\n\n"
                                        f"<context>\nchunk {i}\n</context>"}]


def run(judge: OpenAIJudge, n: int, seen: Callable[[], Any] | None = None,
        preflight: bool = False) -> tuple[list[Any], float]:
    """Ask ``n`` pointwise judgements at once (after the preflight when asked); return the
    outcomes (content or the error text) and the wall time. ``seen`` is called after each
    reply (to trace the limit)."""

    def parse(c: Completion) -> str:
        if seen is not None:
            seen()
        return c.content

    async def main() -> list[Any]:
        if preflight:
            await judge.preflight()
        try:
            return await asyncio.gather(
                *(judge.ask(messages(i), "pointwise", parse) for i in range(n)),
                return_exceptions=True,
            )
        finally:
            await judge.aclose()

    t0 = time.perf_counter()
    out = asyncio.run(main())
    return [o if isinstance(o, str) else f"error: {o}" for o in out], time.perf_counter() - t0


# ------------------------------------------------------------------ a server with 4 slots


def test_adaptive_pacing_fills_the_slots_without_timeouts() -> None:
    n = 40  # 2.5 s of work for 4 slots; 40 at once would wait up to 2.5 s: past the timeout
    with JudgeServer(labels(n), concurrency=SLOTS, latency_ms=LATENCY * 1000) as server:
        judge = judge_for(server, timeout=2.0)
        out, _ = run(judge, n)
    assert not [o for o in out if o.startswith("error")]
    s = judge.stats
    assert s.timeouts == s.retries == s.failures == 0
    assert s.requests == s.calls == n == server.stats.requests  # no duplicate work
    assert server.stats.cancelled == 0
    # the slots had work >= 80 % of the time from the first request to the last answer
    # (measured by the server, so a busy machine slows both sides alike)
    assert server.stats.occupancy(SLOTS) >= 0.8, server.stats.occupancy(SLOTS)
    assert SLOTS <= s.peak_in_flight < 64 and s.final_limit <= 3 * SLOTS


def test_fixed_pacing_on_the_same_server_times_out() -> None:
    """The old behaviour, and proof that the test above can fail."""
    n = 40
    with JudgeServer(labels(n), concurrency=SLOTS, latency_ms=LATENCY * 1000) as server:
        judge = judge_for(server, timeout=2.0, pacing="fixed", max_retries=1)
        run(judge, n)
    s = judge.stats
    assert s.peak_in_flight == n and s.timeouts > 0
    assert server.stats.cancelled > 0 and s.requests > n


def test_known_slots_start_and_cap_the_limit() -> None:
    with JudgeServer(labels(20), latency_ms=20, props={"total_slots": 3}) as server:
        judge = judge_for(server)
        out, _ = run(judge, 20, preflight=True)
    assert judge.transport.server_slots == 3
    assert not [o for o in out if o.startswith("error")]
    assert judge.stats.peak_in_flight == 3 == server.stats.in_flight_max


def test_fixed_pacing_is_a_plain_limit() -> None:
    with JudgeServer(labels(40), latency_ms=50) as server:
        judge = judge_for(server, max_concurrency=10, pacing="fixed")
        run(judge, 40)
    assert judge.stats.peak_in_flight == 10 == server.stats.in_flight_max
    assert judge.stats.final_limit == 10


def test_adaptive_pacing_grows_to_the_ceiling_when_latency_stays_flat() -> None:
    limits: list[float] = []
    with JudgeServer(labels(200), latency_ms=50) as server:
        judge = judge_for(server, max_concurrency=32)
        run(judge, 200, lambda: limits.append(judge.transport.pacer.limit))
    assert limits[0] <= INITIAL + 1 and max(limits) == 32
    assert judge.stats.peak_in_flight == 32 and judge.stats.backoffs == 0


def test_a_later_judge_on_the_same_endpoint_starts_where_the_last_one_ended() -> None:
    """Sweep jobs and repeated evaluate() calls in one process do not ramp up again."""
    n = 40
    with JudgeServer(labels(n), concurrency=SLOTS, latency_ms=LATENCY * 1000) as server:
        first = judge_for(server, timeout=2.0)
        run(first, n)
        learned = first.stats.final_limit
        second = judge_for(server, timeout=2.0)
        assert second.transport.pacer.permits() == learned < INITIAL
        out, _ = run(second, n)
        other = judge_for(server, timeout=2.0, max_concurrency=32)  # another setting: cold
        assert other.transport.pacer.permits() == INITIAL
        fixed = judge_for(server, timeout=2.0, pacing="fixed")
        assert fixed.transport.pacer.permits() == 64
    assert not [o for o in out if o.startswith("error")]
    assert second.stats.peak_in_flight <= learned + 1 < INITIAL
    assert second.stats.timeouts == second.stats.retries == 0


# ------------------------------------------------------------------ back-off


def test_a_429_pauses_every_send_for_its_retry_after() -> None:
    with JudgeServer(labels(12), latency_ms=100, script=["429"], retry_after="0.4") as server:
        judge = judge_for(server, max_concurrency=4)
        out, _ = run(judge, 12)
    assert not [o for o in out if o.startswith("error")]
    arrived = sorted(r["arrived"] for r in server.requests)
    first = arrived[:4]
    assert first[-1] - first[0] < 0.08  # the first four went out together
    # the 429 was answered after 100 ms; nothing was sent for the next 400 ms
    assert arrived[4] - first[0] >= 0.1 + 0.4 - 0.03, arrived
    s = judge.stats
    assert s.retries == 1 and s.backoffs == 1 and s.final_limit >= 2
    assert s.requests == server.stats.requests == 13


def test_fixed_pacing_does_not_pause_the_others() -> None:
    with JudgeServer(labels(12), latency_ms=100, script=["429"], retry_after="0.4") as server:
        judge = judge_for(server, max_concurrency=4, pacing="fixed")
        run(judge, 12)
    arrived = sorted(r["arrived"] for r in server.requests)
    assert arrived[4] - arrived[0] < 0.3
    assert judge.stats.backoffs == 0 and judge.stats.retries == 1


def test_503s_halve_the_limit_which_then_recovers() -> None:
    limits: list[float] = []
    with JudgeServer(labels(150), latency_ms=50, script=["ok"] * 40 + ["503"],
                     retry_after="0.05") as server:
        judge = judge_for(server, max_concurrency=32)
        out, _ = run(judge, 150, lambda: limits.append(judge.transport.pacer.limit))
    assert not [o for o in out if o.startswith("error")]
    s = judge.stats
    assert server.stats.status_503 == 1 and s.backoffs == 1 and s.retries == 1
    drop = max(range(len(limits) - 1), key=lambda i: limits[i] - limits[i + 1])
    before, low = limits[drop], limits[drop + 1]
    assert before > INITIAL and low == pytest.approx(before / 2, abs=1)  # halved ...
    assert limits[-1] > low  # ... and grew again
    assert s.requests == server.stats.requests == 151


def test_a_timeout_halves_the_limit_and_is_retried_under_it() -> None:
    limits: list[float] = []
    with JudgeServer(labels(150), latency_ms=100, script=["ok"] * 10 + ["hang"],
                     hang_seconds=5) as server:
        judge = judge_for(server, max_concurrency=16, timeout=0.5)
        out, _ = run(judge, 150, lambda: limits.append(judge.transport.pacer.limit))
    assert not [o for o in out if o.startswith("error")]
    s = judge.stats
    assert s.timeouts == 1 == s.backoffs == s.retries
    assert server.stats.cancelled == 1  # the hung request, abandoned once
    assert s.requests == server.stats.requests == 151
    assert limits[0] == 16 and min(limits) < 9 < limits[-1]  # halved, then grew


def test_a_format_refused_with_500_steps_down_without_a_retry() -> None:
    message = ("1 validation error for CreateChatCompletionRequest\nresponse_format.type\n"
               "  Input should be 'text' or 'json_object' [type=literal_error]")
    with JudgeServer(labels(3), script=["500"], error_message=message) as server:
        judge = judge_for(server, max_concurrency=1, max_retries=5)
        out, _ = run(judge, 3)
    assert not [o for o in out if o.startswith("error")]
    s = judge.stats
    assert judge.output_mode == "json_object" and s.output_mode_fallbacks == 1
    assert s.retries == 0 and s.requests == server.stats.requests == 4
    formats = [r["body"]["response_format"]["type"] for r in server.requests]
    assert formats == ["json_schema", "json_object", "json_object", "json_object"]


def test_an_ordinary_500_is_retried_with_the_retry_count_header() -> None:
    with JudgeServer(labels(1), script=["500", "500"]) as server:
        judge = judge_for(server, max_retries=3)
        out, _ = run(judge, 1)
    assert out == [out[0]] and not out[0].startswith("error")
    assert [r["headers"]["x-stainless-retry-count"] for r in server.requests] == ["0", "1", "2"]
    assert judge.stats.retries == 2 and judge.stats.requests == 3 and judge.stats.backoffs == 0


def test_pacing_is_checked() -> None:
    with pytest.raises(ConfigError, match=r"^judge.pacing: expected 'adaptive' or 'fixed', "
                                          r"got 'fast'$"):
        OpenAIJudge("m", api_key_env=None, pacing="fast")  # type: ignore[arg-type]


# ------------------------------------------------------------------ the arithmetic


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def acquire_all(pacer: Pacer, n: int) -> list[tuple[float, int]]:
    async def main() -> list[tuple[float, int]]:
        return [await pacer.acquire() for _ in range(n)]

    return asyncio.run(main())


def test_slow_start_grows_per_flat_answer_while_requests_wait() -> None:
    clock = Clock()
    pacer = Pacer(256, clock=clock)
    assert pacer.permits() == INITIAL

    async def main() -> None:
        tickets = [await pacer.acquire() for _ in range(INITIAL)]
        waiting = [asyncio.ensure_future(pacer.acquire()) for _ in range(200)]
        await asyncio.sleep(0)
        clock.now = 0.2
        for t in tickets:  # a round trip of flat answers
            pacer.release(t, "pointwise", ok=True)
        # +3 per answer sent with at least a quarter of the limit in flight (4..16 of 16)
        assert pacer.limit == INITIAL + 3 * (INITIAL - 3) and pacer.slow_start
        await asyncio.sleep(0)
        assert pacer.in_flight == int(pacer.limit)  # the waiting requests took the room
        for w in waiting:
            w.cancel()
        await asyncio.gather(*waiting, return_exceptions=True)

    asyncio.run(main())


def test_rising_latency_ends_slow_start_at_what_the_server_served() -> None:
    clock = Clock()
    pacer = Pacer(64, clock=clock)
    base = acquire_all(pacer, 1)[0]
    clock.now = 1.0
    pacer.release(base, "k", ok=True)  # the no-load latency: 1 s
    tickets = acquire_all(pacer, 8)
    clock.now = 4.0  # 3 s each: queued behind the server's slots
    for t in tickets[-3:]:
        pacer.release(t, "k", ok=True)
    assert not pacer.slow_start
    # 8 in flight gave 3x the no-load latency: the server serves about 8/3 at once, and
    # the limit allows that times the tolerance
    assert pacer.limit == pytest.approx(8 / 3 * 1.5)


def test_halving_happens_once_per_round_trip_and_floors_at_one() -> None:
    clock = Clock()
    pacer = Pacer(16, clock=clock, slots=16)
    tickets = acquire_all(pacer, 16)
    clock.now = 1.0
    for t in tickets:  # 16 time-outs of requests sent together: one halving
        pacer.back_off(t)
    assert pacer.limit == 8 and pacer.stats.backoffs == 1
    for _ in range(6):
        clock.now += 1.0
        pacer.back_off((clock.now - 0.5, 1))  # each sent after the last halving
    assert pacer.limit == 1 and pacer.permits() == 1


def test_retry_after_and_backoff() -> None:
    assert retry_after({"retry-after": "2"}) == 2.0
    assert retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after({"retry-after": "soon"}) is None and retry_after(None) is None
    assert backoff(1, 0.3) == 0.3  # the server's hint
    assert 0.375 <= backoff(1) <= 0.5 and 6.0 <= backoff(9) <= 8.0
