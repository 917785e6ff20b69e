"""Issue 31, class 7 (a): every wait a judge's headers ask for is bounded by
``judge.max_wait`` and said aloud.

A ``Retry-After`` was capped at 60 s, but the mirror of ``x-ratelimit-*`` quotas was not: a
judge answering ``x-ratelimit-remaining-requests: 0`` with a reset of 10^6 s held every send
back for 11 days, silently. Now: a quota said spent past ``judge.max_wait`` is not waited for
(one ``warning:`` line; the run goes on while the endpoint answers), a refusal (429, 503)
whose headers ask for longer ends the run in one line (exit 2, finished rows kept), a wait
within the bound of 5 s or more is one ``warning:`` line naming the header. Through the CLI
(in process) against the real test judge on 127.0.0.1; reset forms: a duration, hours, an
RFC 3339 date, an HTTP date, a Unix time.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from conftest import CliResult, run_cli, sample_labels
from helpers.judge import pointwise, sample, score
from helpers.judge_server import JudgeServer

from harness.judges.transport.pacing import Pacer, duration
from harness.judges.transport.pacing.retries import retry_after_told
from harness.judges.transport.pacing.waits import SAY_AFTER, human

#: 2099-01-01T00:00:00Z as a Unix time (a reset 73 years away).
FAR = 4070908800
FAR_RFC3339, FAR_HTTP = "2099-01-01T00:00:00Z", "Thu, 01 Jan 2099 00:00:00 GMT"


class HeaderJudge(JudgeServer):
    """The test judge; its 200 replies also carry ``ok_headers``, and its 429 and 503
    replies carry ``refused_headers`` instead of the ``Retry-After`` knob's."""

    def __init__(self, *args: Any, ok_headers: Mapping[str, str] | None = None,
                 refused_headers: Mapping[str, str] | None = None, **knobs: Any) -> None:
        super().__init__(*args, **knobs)
        self.ok_headers = dict(ok_headers or {})
        self.refused_headers = None if refused_headers is None else dict(refused_headers)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        response = await super()._chat(request)
        if response.status == 200:
            response.headers.update(self.ok_headers)
        elif response.status in (429, 503) and self.refused_headers is not None:
            response.headers.popall("Retry-After", None)
            response.headers.update(self.refused_headers)
        return response


def llm(url: str, *extra: str) -> tuple[str, ...]:
    return ("metric=llm_with_reference", "judge=local", f"judge.base_url={url}",
            "judge.model=test-judge", "tracking=none", *extra)


def warnings(result: CliResult) -> list[str]:
    return [x for x in result.stderr.splitlines() if x.startswith("warning: ")]


def one_error(result: CliResult) -> str:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = [x for x in result.stderr.splitlines() if x.startswith("error: ")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def partial_rows(result: CliResult) -> list[dict[str, Any]]:
    text = (result.out_dir / "samples.jsonl.partial").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines()]


#: Reset headers of a spent request quota, and the wait each says (from now, in seconds).
SPENT = [
    pytest.param("1000000s", 1e6, id="duration"),
    pytest.param("1000000", 1e6, id="bare-seconds"),
    pytest.param("17h", 17 * 3600.0, id="hours"),
    pytest.param(FAR_RFC3339, FAR - time.time(), id="rfc3339"),
    pytest.param(FAR_HTTP, FAR - time.time(), id="http-date"),
    pytest.param(str(FAR), FAR - time.time(), id="unix-time"),
]


@pytest.mark.parametrize(("reset", "wait"), SPENT)
def test_a_quota_said_spent_for_days_is_not_waited_for(
    tmp_path: Path, reset: str, wait: float
) -> None:
    # every reply says: no request left until `reset`; yet the endpoint answers them all
    spent = {"x-ratelimit-limit-requests": "100", "x-ratelimit-remaining-requests": "0",
             "x-ratelimit-reset-requests": reset}
    began = time.monotonic()
    with HeaderJudge(sample_labels(), ok_headers=spent) as server:
        result = run_cli(*llm(server.base_url, "run.limit=8"), cwd=tmp_path, timeout=60)
        assert server.stats.ok == server.stats.requests == 26  # 8 samples' chunks, once each
    assert time.monotonic() - began < 30  # it waited 11 days before
    assert result.returncode == 0, result.stderr
    assert result.summary()["n_scored"] == 8
    [line] = warnings(result)
    assert f"x-ratelimit-reset-requests: {reset}" in line and "judge.max_wait=60 s" in line
    assert "not waiting for it" in line
    said = float(line.split("the next request would wait ")[1].split(" s")[0])
    assert said >= wait * 2.02 / 100  # a whole request's refill (2.02 of 100 in `wait`) or more


@pytest.mark.parametrize(
    ("headers", "says"),
    [
        ({"Retry-After": "1000000"}, "retry-after: 1000000"),
        ({"Retry-After": FAR_HTTP}, f"retry-after: {FAR_HTTP}"),
        ({"retry-after-ms": "3600000"}, "retry-after-ms: 3600000"),
        ({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "17h"},
         "x-ratelimit-reset-requests: 17h"),
        ({"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": FAR_RFC3339},
         f"x-ratelimit-reset-tokens: {FAR_RFC3339}"),
        ({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": str(FAR)},
         f"x-ratelimit-reset-requests: {FAR}"),
    ],
    ids=["seconds", "http-date", "ms", "quota-hours", "quota-rfc3339", "quota-unix-time"],
)
def test_a_refusal_asking_for_hours_ends_the_run_in_one_line(
    tmp_path: Path, headers: dict[str, str], says: str
) -> None:
    # two samples answered (6 chunks, one at a time), then every request refused
    with HeaderJudge(sample_labels(), script=["ok"] * 6, fail_429=1.0, quick_429=True,
                     refused_headers=headers) as server:
        began = time.monotonic()
        result = run_cli(*llm(server.base_url, "judge.max_concurrency=1", "run.limit=5"),
                         cwd=tmp_path, timeout=60)
        took = time.monotonic() - began
        assert server.stats.requests == 7  # the refusal is not retried
    line = one_error(result)
    assert line.startswith(f"error: judge endpoint {server.base_url} refused a request "
                           "(HTTP 429) and asks to wait "), line
    assert f"({says}), longer than judge.max_wait=60 s" in line and "raise judge.max_wait" in line
    assert took < 30
    rows = partial_rows(result)
    assert [r["score"] is not None for r in rows] == [True, True]  # the rows before it stay
    assert not (result.out_dir / "samples.jsonl").exists()


def test_a_503_asking_for_an_hour_ends_the_run(tmp_path: Path) -> None:
    with HeaderJudge(sample_labels(), script=["503"], refused_headers={"Retry-After": "3600"}
                     ) as server:
        result = run_cli(*llm(server.base_url, "run.limit=1"), cwd=tmp_path, timeout=60)
    line = one_error(result)
    assert "refused a request (HTTP 503) and asks to wait 3600 s (1.0 h) (retry-after: 3600)" \
        in line


def test_the_bound_is_the_setting(tmp_path: Path) -> None:
    # Retry-After: 6 is within the default 60 s, not within judge.max_wait=5
    with HeaderJudge(sample_labels(), script=["429"], retry_after="6") as server:
        result = run_cli(*llm(server.base_url, "run.limit=1", "judge.max_wait=5"),
                         cwd=tmp_path, timeout=60)
        assert server.stats.status_429 == 1  # the sample's other two chunks were answered
    assert "asks to wait 6 s (retry-after: 6), longer than judge.max_wait=5 s" in one_error(
        result)


@pytest.mark.slow
def test_a_long_wait_within_the_bound_is_said_once(tmp_path: Path) -> None:
    # the three chunks' first requests are refused with Retry-After: 6, then answered
    with HeaderJudge(sample_labels(), script=["429"] * 3, retry_after="6") as server:
        began = time.monotonic()
        result = run_cli(*llm(server.base_url, "run.limit=1"), cwd=tmp_path, timeout=60)
        took = time.monotonic() - began
        assert server.stats.requests == 6
    assert result.returncode == 0, result.stderr
    assert result.summary()["n_scored"] == 1
    assert 6.0 <= took < 30
    [line] = warnings(result)  # one line for the three requests' waits
    assert line == (f"warning: judge endpoint {server.base_url} is rate-limited: waiting 6 s "
                    "(retry-after: 6; at most judge.max_wait=60 s)")


def test_a_short_wait_is_not_said(tmp_path: Path) -> None:
    with HeaderJudge(sample_labels(), script=["429"] * 3, retry_after="0.3") as server:
        result = run_cli(*llm(server.base_url, "run.limit=1"), cwd=tmp_path, timeout=60)
    assert result.returncode == 0, result.stderr
    assert warnings(result) == []


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        ("judge.max_wait=-1", "judge.max_wait: expected finite float >= 0, got -1"),
        ("judge.max_wait=inf", "judge.max_wait: expected finite float >= 0, got inf"),
        ("judge.max_timeouts_in_a_row=0",
         "judge.max_timeouts_in_a_row: expected int >= 1 or null, got 0"),
    ],
)
def test_the_bounds_are_checked_before_any_call(tmp_path: Path, setting: str, says: str) -> None:
    with JudgeServer(sample_labels()) as server:
        result = run_cli(*llm(server.base_url, setting, "run.limit=1"), cwd=tmp_path)
        assert server.stats.requests == 0
    assert one_error(result) == f"error: {says}"


def test_a_judge_refusing_everything_is_bounded_by_max_retries() -> None:
    """429 forever, Retry-After 0.1 s: each call makes max_retries + 1 requests and fails."""
    with JudgeServer(fail_429=1.0, quick_429=True, retry_after="0.1") as server:
        metric = pointwise(server, judge={"max_retries": 2, "cache": False})
        began = time.monotonic()
        out = score(metric, [sample([f"chunk {i}-{j}" for j in range(3)], f"s{i}")
                             for i in range(4)])
        took = time.monotonic() - began
        assert server.stats.requests == 12 * 3
    assert all(r.score is None and "HTTP 429" in (r.error or "") for r in out)
    assert took < 10  # 3 rounds of 0.1 s pauses; (max_retries + 1) x max_wait at most


# ------------------------------------------------------------------ the parts, on a clock


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_mirror_holds_sends_at_most_max_wait(capsys: pytest.CaptureFixture[str]) -> None:
    async def main() -> None:
        clock = Clock()
        pacer = Pacer(8, clock=clock, max_wait=30.0, where="http://judge/v1")
        # 2 requests a 20 s: one more in 20.2 s (2.02 needed), within 30 s: waited, and said
        assert pacer.observe({"x-ratelimit-limit-requests": "2",
                              "x-ratelimit-remaining-requests": "0",
                              "x-ratelimit-reset-requests": "20s"}) is True
        assert pacer._blocked_until() == pytest.approx(20.2)
        waiter = asyncio.ensure_future(pacer.acquire())
        await asyncio.sleep(0)
        assert not waiter.done()
        waiter.cancel()
        # 2 a 100 s: 101 s to wait, past 30 s: nothing held back, said once
        assert pacer.observe({"x-ratelimit-limit-requests": "2",
                              "x-ratelimit-remaining-requests": "0",
                              "x-ratelimit-reset-requests": "100s"}) is True
        assert pacer._blocked_until() <= clock.now
        ticket = await pacer.acquire()
        pacer.release(ticket, True)

    asyncio.run(main())
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "warning: judge endpoint http://judge/v1 is rate-limited: waiting 20 s "
        "(x-ratelimit-reset-requests: 20s; at most judge.max_wait=30 s)",
        "warning: judge endpoint http://judge/v1 says a rate-limit quota is spent "
        "(x-ratelimit-reset-requests: 100s): the next request would wait 101 s, longer than "
        "judge.max_wait=30 s; not waiting for it (if the endpoint refuses requests for it, "
        "the run stops)",
    ]


def test_a_retry_after_pause_is_capped_at_max_wait() -> None:
    clock = Clock()
    pacer = Pacer(8, clock=clock, max_wait=2.0)
    ticket = asyncio.run(pacer.acquire())
    pacer.back_off(ticket, 1000.0, 503, {"retry-after": "1000"})
    assert pacer._resume_at - clock() == 2.0  # sends resume after max_wait, not 1000 s


def test_reset_headers_in_every_form() -> None:
    now = FAR - 90.0
    assert duration("1000000s", now) == 1e6 and duration("17h", now) == 61200.0
    assert duration("1h2m3.5s", now) == pytest.approx(3723.5) and duration("20ms") == 0.02
    assert duration(str(FAR), now) == 90.0  # a Unix time
    assert duration(FAR_RFC3339, now) == 90.0 and duration("2099-01-01T01:00:00+01:00", now) \
        == 90.0
    assert duration(FAR_HTTP, now) == 90.0
    assert duration("2020-01-01T00:00:00Z", now) == 0.0  # past: no wait
    assert duration("soon", now) is None and duration("5x") is None and duration(None) is None
    assert retry_after_told({"retry-after": FAR_HTTP}) is not None
    assert retry_after_told({"retry-after": "nan"}) == (float("inf"), "retry-after: nan")
    assert retry_after_told({"retry-after-ms": "250"}) == (0.25, "retry-after-ms: 250")


def test_long_waits_read_in_days_and_hours() -> None:
    assert human(90) == "90 s" and human(61200) == "61200 s (17.0 h)"
    assert human(1e6) == "1000000 s (11.6 days)" and SAY_AFTER == 5.0
