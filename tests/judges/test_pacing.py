"""Adaptive pacing: how many judge requests are in flight follows the server's capacity.

Three layers. Over HTTP against the test judge (``tests/helpers/judge_server.py``) with the real
openai SDK, on the shapes real servers have: jittered, heavy-tailed and bimodal latency
(the limit must stay at the ceiling: the regression where a lucky fast reply made it fall to
1), a few slots with a queue (filled, no time-outs, no cancelled work), random 429s (left
alone), a token-rate limit (followed through its headers), slow-drip replies, 503s and
time-outs (halved, then recovered). Throughput is asserted against the server's own count of
requests in flight. Then the same limiter in virtual time (``helpers.pacing_sim``) over
1000 judgements per shape against fixed limits and the physical limit, and its arithmetic.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from helpers import pacing_sim as sim
from helpers.judge_server import JudgeServer, Label, LabelKey

from harness.core.errors import ConfigError
from harness.core.types import Completion, JudgeRequest
from harness.judges.openai_chat import OpenAIJudge
from harness.judges.transport import pacing
from harness.judges.transport.pacing import INITIAL, Pacer, backoff, duration, retry_after

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
                *(judge.ask(JudgeRequest(messages(i), "pointwise"), parse) for i in range(n)),
                return_exceptions=True,
            )
        finally:
            await judge.aclose()

    t0 = time.perf_counter()
    out = asyncio.run(main())
    return [o if isinstance(o, str) else f"error: {o}" for o in out], time.perf_counter() - t0


def errors(out: list[str]) -> list[str]:
    return [o for o in out if o.startswith("error")]


def mean_in_flight(server: JudgeServer) -> float:
    """Requests the server was working on, on average, from the first to the last."""
    st = server.stats
    return st.busy_s / (st.last_leave - st.first_enter)


# ------------------------------------------------------------------ latency that varies

#: Servers with room for every request: the limit must grow to the ceiling and stay there.
JITTER = {
    "constant": {},
    "gaussian-50%": {"latency_sd_ms": 50},
    "lognormal-p99-5x": {"latency_tail": 5},
    "bimodal-20%-5x": {"slow_ms": 500, "slow_share": 0.2},
}


@pytest.mark.slow
@pytest.mark.parametrize("shape", list(JITTER))
def test_varying_latency_keeps_every_allowed_request_in_flight(shape: str) -> None:
    n, ceiling = 320, 32  # about ten round trips at the ceiling
    with JudgeServer(labels(n), latency_ms=200, seed=5, **JITTER[shape]) as server:
        judge = judge_for(server, max_concurrency=ceiling)
        out, _ = run(judge, n)
        adaptive = mean_in_flight(server)
    assert not errors(out)
    s = judge.stats
    assert s.final_limit == ceiling and s.backoffs == 0 and s.pauses == 0
    assert server.stats.in_flight_max == ceiling
    assert s.requests == server.stats.requests == n  # nothing re-sent
    # By the server's own count, the default keeps about as many requests in flight as a
    # fixed limit at the ceiling does on the same server shape, on this machine, now (a
    # collapsed limit would give a few). Measured against that run, not against the
    # ceiling: on a loaded machine the client itself cannot keep 32 in flight at 100 ms.
    with JudgeServer(labels(n), latency_ms=200, seed=5, **JITTER[shape]) as server:
        run(judge_for(server, max_concurrency=ceiling, pacing="fixed"), n)
        fixed = mean_in_flight(server)
    assert adaptive >= 0.5 * fixed, (adaptive, fixed)  # a collapsed limit gives ~1 / 24


# ------------------------------------------------------------------ a few slots and a queue


@pytest.mark.slow
@pytest.mark.parametrize("tail", [0, 3])
def test_adaptive_pacing_fills_the_slots_without_timeouts(tail: float) -> None:
    n = 48  # 3 s of work for 4 slots; 48 at once would wait up to 3 s: past the timeout
    with JudgeServer(labels(n), concurrency=SLOTS, latency_ms=LATENCY * 1000,
                     latency_tail=tail) as server:
        judge = judge_for(server, timeout=2.0)
        out, _ = run(judge, n)
    assert not errors(out)
    s = judge.stats
    assert s.timeouts == s.retries == s.failures == 0
    assert s.requests == s.calls == n == server.stats.requests  # no duplicate work
    assert server.stats.cancelled == 0
    # the slots had work >= 80 % of the time from the first request to the last answer
    # (measured by the server, so a busy machine slows both sides alike)
    assert server.stats.occupancy(SLOTS) >= 0.8, server.stats.occupancy(SLOTS)
    assert SLOTS <= s.peak_in_flight <= INITIAL and s.final_limit <= INITIAL


@pytest.mark.slow
def test_fixed_pacing_on_the_same_server_times_out() -> None:
    """The fixed limit's behaviour, and proof that the test above can fail."""
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
    assert not errors(out)
    assert judge.stats.peak_in_flight == 3 == server.stats.in_flight_max


def test_fixed_pacing_is_a_plain_limit() -> None:
    with JudgeServer(labels(40), latency_ms=50) as server:
        judge = judge_for(server, max_concurrency=10, pacing="fixed")
        run(judge, 40)
    assert judge.stats.peak_in_flight == 10 == server.stats.in_flight_max
    assert judge.stats.final_limit == 10


# ------------------------------------------------------------------ rate limits


@pytest.mark.slow
def test_random_429s_leave_the_limit_alone() -> None:
    """5 % of requests refused at once, at any load: only those wait their Retry-After."""
    n, ceiling = 300, 32
    with JudgeServer(labels(n), latency_ms=60, fail_429=0.05, quick_429=True,
                     retry_after="0.2", seed=2) as server:
        judge = judge_for(server, max_concurrency=ceiling)
        out, _ = run(judge, n)
    assert not errors(out)
    s = judge.stats
    assert server.stats.status_429 > 5  # the faults happened
    assert s.backoffs == 0 and s.pauses == 0 and s.final_limit == ceiling
    # every permit in use; the few waiting out their Retry-After keep theirs
    assert s.peak_in_flight == ceiling and server.stats.in_flight_max >= ceiling - 4


@pytest.mark.slow
def test_a_token_rate_limit_is_followed_through_its_headers() -> None:
    """A token bucket in front of the model (OpenAI's way: a request costs its prompt and
    max_tokens): adaptive pacing reads x-ratelimit-* and waits for the refill; a fixed limit
    keeps hitting it."""
    n, rate, burst = 60, 2400.0, 1200.0  # about 20 requests a second after the burst
    seen = {}
    for mode in ("adaptive", "fixed"):
        with JudgeServer(labels(n), latency_ms=50, token_rate=rate, token_burst=burst) as server:
            judge = judge_for(server, max_concurrency=32, pacing=mode, max_retries=10,
                              max_tokens=100)
            out, wall = run(judge, n)
        assert not errors(out), (mode, errors(out)[:2])
        seen[mode] = (server.stats.rate_limited, server.stats.requests, wall)
    refused, requests, wall = seen["adaptive"]
    # the first wave goes out before any header comes back (more of it on a slow machine):
    # those beyond the bucket are refused once, then the headers pace the rest
    assert refused <= 24 and requests <= n + 24, seen
    assert seen["fixed"][0] > 2 * max(refused, 5), seen  # what following the headers saved
    cost = judge.stats.prompt_tokens / n + 100
    floor = (n * cost - burst) / rate  # the bucket's own limit
    # never faster than the bucket; slower only by what a loaded 2-core machine adds (a
    # stall on a refill window would be many times the floor)
    assert floor * 0.9 <= wall <= floor * 2.5 + 2.0, (wall, floor)


def test_a_429_burst_pauses_every_send_for_its_retry_after() -> None:
    """A 429 among the few requests in flight is a rate limit being hit: every send waits."""
    with JudgeServer(labels(12), latency_ms=100, script=["429"], retry_after="0.4") as server:
        judge = judge_for(server, max_concurrency=4)
        out, _ = run(judge, 12)
    assert not errors(out)
    arrived = sorted(r["arrived"] for r in server.requests)
    first = arrived[:4]
    assert first[-1] - first[0] < 0.08  # the first four went out together
    # the 429 was answered after 100 ms; nothing was sent for the next 400 ms
    assert arrived[4] - first[0] >= 0.1 + 0.4 - 0.03, arrived
    s = judge.stats
    assert s.retries == 1 and s.pauses == 1 and s.backoffs == 0 and s.final_limit == 4
    assert s.requests == server.stats.requests == 13


def test_fixed_pacing_does_not_pause_the_others() -> None:
    with JudgeServer(labels(12), latency_ms=100, script=["429"], retry_after="0.4") as server:
        judge = judge_for(server, max_concurrency=4, pacing="fixed")
        run(judge, 12)
    arrived = sorted(r["arrived"] for r in server.requests)
    assert arrived[4] - arrived[0] < 0.3
    assert judge.stats.backoffs == 0 and judge.stats.retries == 1


# ------------------------------------------------------------------ overload


def test_503s_halve_the_limit_which_then_recovers() -> None:
    limits: list[float] = []
    with JudgeServer(labels(300), latency_ms=50, script=["ok"] * 40 + ["503"],
                     retry_after="0.05") as server:
        judge = judge_for(server, max_concurrency=32)
        out, _ = run(judge, 300, lambda: limits.append(judge.transport.pacer.permits()))
    assert not errors(out)
    s = judge.stats
    assert server.stats.status_503 == 1 and s.backoffs == 1 and s.retries == 1
    drop = max(range(len(limits) - 1), key=lambda i: limits[i] - limits[i + 1])
    before, low = limits[drop], limits[drop + 1]
    assert before > INITIAL and low == pytest.approx(before / 2, abs=1)  # halved ...
    assert limits[-1] > low  # ... and grew again
    assert s.requests == server.stats.requests == 301


@pytest.mark.slow
def test_a_timeout_halves_the_limit_and_is_retried_under_it() -> None:
    limits: list[float] = []
    # the time-out is 20 replies long: only the hung request reaches it, even when a loaded
    # machine (the slow lane beside process-starting tests) delays replies several-fold;
    # enough judgements that the run goes on for seconds after it
    n = 640
    with JudgeServer(labels(n), latency_ms=100, script=["ok"] * 10 + ["hang"],
                     hang_seconds=6) as server:
        judge = judge_for(server, max_concurrency=16, timeout=2.0)
        out, _ = run(judge, n, lambda: limits.append(judge.transport.pacer.permits()))
    assert not errors(out)
    s = judge.stats
    assert s.timeouts == 1 == s.backoffs == s.retries
    assert server.stats.cancelled == 1  # the hung request, abandoned once
    assert s.requests == server.stats.requests == n + 1
    assert limits[0] == 16 and min(limits) <= 8 < limits[-1]  # halved, then grew


def test_slow_drip_replies_are_latency_not_overload() -> None:
    """Headers at once, then the body in pieces: the reply is slow, the server not full."""
    n = 96
    with JudgeServer(labels(n), latency_ms=20, drip_ms=15) as server:
        judge = judge_for(server, max_concurrency=32, timeout=5.0)
        out, _ = run(judge, n)
    assert not errors(out)
    s = judge.stats
    assert s.backoffs == s.timeouts == 0 and s.final_limit == 32
    assert server.stats.in_flight_max == 32


def test_a_format_refused_with_500_steps_down_without_a_retry() -> None:
    message = ("1 validation error for CreateChatCompletionRequest\nresponse_format.type\n"
               "  Input should be 'text' or 'json_object' [type=literal_error]")
    with JudgeServer(labels(3), script=["500"], error_message=message) as server:
        judge = judge_for(server, max_concurrency=1, max_retries=5)
        out, _ = run(judge, 3)
    assert not errors(out)
    s = judge.stats
    assert judge.output_mode == "json_object" and s.output_mode_fallbacks == 1
    assert s.retries == 0 and s.requests == server.stats.requests == 4
    formats = [r["body"]["response_format"]["type"] for r in server.requests]
    assert formats == ["json_schema", "json_object", "json_object", "json_object"]


@pytest.mark.slow
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


# ------------------------------------------------------------------ memory between jobs


@pytest.mark.slow
def test_a_later_judge_starts_warm_but_never_below_a_cold_start() -> None:
    """Sweep jobs and repeated evaluate() calls do not ramp up again, and a limit that fell
    is not carried into the next job."""
    with JudgeServer(labels(200), latency_ms=40) as server:
        first = judge_for(server, max_concurrency=32)
        run(first, 200)
        assert first.stats.peak_in_flight == 32
        learned = first.transport.pacer.permits()
        warm = judge_for(server, max_concurrency=32)
        assert warm.transport.pacer.permits() == max(learned, INITIAL)  # no ramp from 16
        other = judge_for(server, max_concurrency=48)  # another setting: cold
        assert other.transport.pacer.permits() == INITIAL
        fixed = judge_for(server, pacing="fixed")
        assert fixed.transport.pacer.permits() == 64
        key = warm.transport.pacer._memory
        assert key is not None
        pacing.memory.remember(key, 1.0)  # as a burst of 503s would leave it
        after_collapse = judge_for(server, max_concurrency=32)
        assert after_collapse.transport.pacer.permits() == INITIAL
        out, _ = run(after_collapse, 200)
    # it ramps past the cold start again (the exact peak depends on this machine's load)
    assert not errors(out) and after_collapse.stats.peak_in_flight > INITIAL


# ------------------------------------------------------------------ in virtual time

N, CEILING = 1000, 64


def fixed_best(shape: sim.Shape) -> sim.Result:
    """The best fixed limit among the ceiling and the slot count (the benchmark searches
    every limit: these two are where it always lands)."""
    options = {CEILING, shape.slots or CEILING, 2 * (shape.slots or CEILING // 2)}
    runs = [sim.simulate(shape, N, c, "fixed") for c in sorted(options) if c <= CEILING]
    return min(runs, key=lambda r: (-r.judgements, r.wall))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["constant", "gauss25", "gauss50", "lognormal", "bimodal",
                                  "slots8", "slots8_jitter", "random429", "tokens"])
def test_the_default_is_within_a_tenth_of_the_best_fixed_limit(name: str) -> None:
    shape = sim.SHAPES[name]
    ours, best = sim.simulate(shape, N, CEILING), fixed_best(shape)
    assert ours.judgements == N
    assert ours.wall <= 1.1 * best.wall, (ours.wall, best.concurrency, best.wall)
    if name in ("constant", "gauss25", "gauss50"):  # the server is not the bottleneck
        assert ours.wall <= 1.3 * sim.physical_limit(shape, N, CEILING)
    if name == "tokens":  # refused only before the first headers told the quota
        assert ours.requests <= 1.05 * N
    elif name != "random429":  # no injected faults: one request per judgement
        assert ours.requests <= 1.02 * N


@pytest.mark.parametrize("name", ["slots8", "slots8_jitter", "slots4_slow"])
def test_slot_limited_servers_cost_no_time_outs_and_no_cancelled_work(name: str) -> None:
    ours = sim.simulate(sim.SHAPES[name], N, CEILING)
    assert ours.timeouts == ours.cancelled == 0 and ours.requests == N
    assert ours.final_limit <= 4 * (sim.SHAPES[name].slots or 0)


def test_a_queue_never_grows_past_half_the_timeout() -> None:
    """4 slots of 250 ms and a 2 s time-out: what the fixed limit of 64 times out on."""
    shape = sim.Shape("short-timeout", sim.constant(0.25), slots=4)
    ours = sim.simulate(shape, 200, CEILING, timeout=2.0)
    fixed = sim.simulate(shape, 200, CEILING, "fixed", timeout=2.0, max_retries=1)
    assert ours.timeouts == ours.cancelled == 0 and ours.judgements == 200
    assert fixed.timeouts > 100 and fixed.judgements < 200


def test_a_fallen_limit_recovers() -> None:
    storm = sim.simulate(sim.SHAPES["storm503"], N, CEILING)  # 503 for every request, 0.5 s
    assert storm.backoffs >= 1 and min(limit for _, limit in storm.limits) <= INITIAL
    assert storm.final_limit == CEILING and storm.judgements == N
    grows = sim.simulate(sim.SHAPES["grows"], 2000, CEILING)  # 8 slots, then 1000 at 5 s
    before = [limit for t, limit in grows.limits if 4.0 < t < 5.0]
    assert max(before) <= 4 * 8 and grows.final_limit == CEILING


def test_an_overloaded_server_is_paced_far_better_than_a_fixed_limit() -> None:
    """8 slots and a queue of 8; beyond that, 503 with Retry-After: 1."""
    shape = sim.SHAPES["bounded_queue"]
    ours, fixed = sim.simulate(shape, N, CEILING), sim.simulate(shape, N, CEILING, "fixed")
    assert ours.judgements == N and ours.requests <= 1.15 * N
    assert fixed.judgements < 0.9 * N  # gave up on requests after five 503s
    assert fixed.requests > 1.5 * N


def test_the_limit_settles_at_the_knee_of_a_slot_limited_server() -> None:
    ours = sim.simulate(sim.SHAPES["slots8"], N, CEILING)
    late = [limit for t, limit in ours.limits if t > 5.0]
    assert min(late) >= 8 and max(late) <= 20  # slots + about one queue of them
    assert ours.server_max == 8


def test_memory_starts_the_next_job_warm_in_virtual_time() -> None:
    first = sim.simulate(sim.SHAPES["slots8"], 300, CEILING, memory="k")
    second = sim.simulate(sim.SHAPES["slots8"], 300, CEILING, memory="k")
    assert first.peak == CEILING  # the cold start overshot once ...
    assert second.peak <= 2 * first.final_limit  # ... the warm one did not
    assert second.wall <= first.wall * 1.01


# ------------------------------------------------------------------ the arithmetic


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_halving_happens_once_per_round_trip_and_floors_at_one() -> None:
    clock = Clock()
    pacer = Pacer(16, clock=clock)  # starts at 16 (INITIAL)

    async def main() -> None:
        tickets = [await pacer.acquire() for _ in range(16)]
        clock.now = 1.0
        for t in tickets:  # 16 time-outs of requests sent together: one halving
            pacer.back_off(t)
            pacer.release(t)
        assert pacer.permits() == 8 and pacer.stats.backoffs == 1
        for _ in range(6):
            clock.now += 1.0
            ticket = await pacer.acquire()
            pacer.back_off(ticket)  # each sent after the last halving
            pacer.release(ticket)
        assert pacer.permits() == 1 and pacer.stats.backoffs == 7  # at the floor too

    asyncio.run(main())


def test_a_spent_token_quota_holds_sends_until_it_refills() -> None:
    clock = Clock()
    pacer = Pacer(8, clock=clock)
    pacer.note_tokens(300)
    # 100 of 1000 tokens left, full again in 0.9 s: 1000 tokens a second
    headers = {"x-ratelimit-limit-tokens": "1000", "x-ratelimit-remaining-tokens": "100",
               "x-ratelimit-reset-tokens": "900ms"}
    assert pacer.observe(headers) is True
    need = 1.02 * 300 + 1
    assert pacer._blocked_until() == pytest.approx((need - 100) / 1000)
    clock.now = 1.0
    assert pacer._blocked_until() <= clock.now  # refilled
    assert pacer.observe({"x-ratelimit-remaining-requests": "5"}) is False
    fixed = Pacer(8, clock=clock, adaptive=False)
    assert fixed.observe(headers) is False and fixed._blocked_until() < 0


def test_durations_of_rate_limit_headers() -> None:
    assert duration("1s") == 1.0 and duration("6m0s") == 360.0 and duration("20ms") == 0.02
    assert duration("1h2m3.5s") == pytest.approx(3723.5) and duration("1.5") == 1.5
    assert duration("soon") is None and duration("5x") is None and duration(None) is None


def test_retry_after_and_backoff() -> None:
    assert retry_after({"retry-after": "2"}) == 2.0
    assert retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after({"retry-after": "soon"}) is None and retry_after(None) is None
    assert backoff(1, 0.3) == 0.3  # the server's hint
    assert 0.375 <= backoff(1) <= 0.5 and 6.0 <= backoff(9) <= 8.0
