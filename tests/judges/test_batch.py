"""judge.batch=true against the test judge's Batch API, over HTTP with the real openai
client: the same scores as realtime at half the server's bill, rounds as batches, the
provider's limits, every fault, and a run stopped and run again that pays nothing twice."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli, sample_labels
from helpers.judge import listwise, pointwise, sample, score
from helpers.judge_server import JudgeServer

from harness.core.errors import ConfigError, JudgeUnavailable
from harness.core.types import JudgeStats
from harness.judges.openai_chat import OpenAIJudge
from harness.metrics.judged import JudgedMetric
from harness.metrics.ranking import average_precision

#: Six samples of three chunks; a chunk is relevant iff its number is odd.
CHUNKS = {f"passage {i}: " + "words about the tower " * (i % 3 + 1): i % 2 for i in range(18)}
TEXTS = list(CHUNKS)
SAMPLES = [sample(TEXTS[3 * s: 3 * s + 3], sid=f"s{s}", question=f"Question {s}?")
           for s in range(6)]
N_LINES = 18
EXPECTED = [[CHUNKS[c] for c in s.retrieved_contexts] for s in SAMPLES]


@pytest.fixture
def server():
    with JudgeServer(CHUNKS, retry_after="0.01") as s:
        yield s


def batched(tmp_path: Path, name: str = "cache", **kw: Any) -> dict[str, Any]:
    """A batch-mode judge's settings, its cache in ``tmp_path``."""
    return {"batch": True, "batch_poll": 0.02, "cache_path": str(tmp_path / f"{name}.sqlite"),
            **kw}


def verdicts(results: list[Any]) -> list[Any]:
    return [r.verdicts for r in results]


def batch_lines(server: JudgeServer) -> dict[str, list[dict[str, Any]]]:
    """The lines of each batch the server was sent, by batch id in creation order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for line in server.batch_api.lines:
        out.setdefault(line["batch"], []).append(line)
    return out


# ---- same scores, half the bill ----------------------------------------------------------


@pytest.mark.parametrize("variant", ["llm_with_reference", "contextual_precision"])
def test_batch_scores_as_realtime_at_half_the_servers_bill(tmp_path, server, variant):
    make = pointwise if variant == "llm_with_reference" else listwise
    one_by_one = {"max_concurrency": 1, "pacing": "fixed"}  # the batch's order: same caching
    realtime = score(make(server, judge={"cache_path": str(tmp_path / "rt.sqlite"),
                                         **one_by_one}), SAMPLES)
    sent_realtime = [r["body"] for r in server.requests]
    billed = server.stats.snapshot()
    server.reset_stats()
    server.clear_prefix_cache()
    metric = make(server, judge=batched(tmp_path))
    results = score(metric, SAMPLES)

    assert [r.score for r in results] == [r.score for r in realtime]  # per sample
    assert verdicts(results) == verdicts(realtime) == EXPECTED
    assert [r.details.get("reason") for r in results] == [r.details.get("reason")
                                                          for r in realtime]
    bill = server.stats.snapshot()
    assert server.stats.requests == 0  # not one realtime request
    assert bill["batch_billed_requests"] == bill["billed_requests"] == billed["billed_requests"]
    for part in ("prompt_tokens", "cached_tokens", "completion_tokens"):
        assert bill[f"billed_{part}"] == billed[f"billed_{part}"]
    assert bill["billed_usd"] == pytest.approx(billed["billed_usd"] / 2, rel=1e-9)
    # what it sends: the realtime requests, as lines of one batch per round
    rounds = list(batch_lines(server).values())
    assert sorted(json.dumps(line["body"], sort_keys=True) for r in rounds for line in r) == \
        sorted(json.dumps(b, sort_keys=True) for b in sent_realtime)
    if variant == "contextual_precision":  # its explanation follows its verdicts
        assert [len(r) for r in rounds] == [6, 6]
        assert all("<contexts>" in line["body"]["messages"][-1]["content"] for line in rounds[0])
        assert all("<verdicts>" in line["body"]["messages"][-1]["content"] for line in rounds[1])
        assert all(r.details["reason"].startswith("The score is") for r in results)
    else:
        assert [len(r) for r in rounds] == [N_LINES]
    stats = metric.judge.stats
    assert (stats.batches, stats.requests, stats.batch_requests) == (len(rounds),
                                                                      bill["billed_requests"],
                                                                      bill["billed_requests"])
    assert (stats.batch_prompt_tokens, stats.batch_cached_prompt_tokens,
            stats.batch_completion_tokens) == (bill["batch_billed_prompt_tokens"],
                                               bill["batch_billed_cached_tokens"],
                                               bill["batch_billed_completion_tokens"])
    assert stats.prompt_tokens == stats.batch_prompt_tokens
    assert stats.batch_ids == list(batch_lines(server))
    assert metric.describe()["judge"]["batch_ids"] == stats.batch_ids
    assert "batch_ids" not in stats.as_dict() and stats.as_dict()["batches"] == len(rounds)


def test_a_rerun_is_answered_by_the_cache(tmp_path, server):
    first = score(pointwise(server, judge=batched(tmp_path)), SAMPLES)
    metric = pointwise(server, judge=batched(tmp_path))
    again = score(metric, SAMPLES)
    assert verdicts(again) == verdicts(first) == EXPECTED
    assert server.stats.batches_created == 1 and metric.judge.stats.cache_hits == N_LINES
    assert metric.judge.stats.batches == 0


def test_a_request_asked_twice_goes_out_once(tmp_path, server):
    twice = [SAMPLES[0], SAMPLES[0], SAMPLES[1]]
    results = score(pointwise(server, judge=batched(tmp_path)), twice)
    assert verdicts(results) == [EXPECTED[0], EXPECTED[0], EXPECTED[1]]
    assert server.stats.batch_lines_submitted == 6


def test_progress_is_said_on_stderr(tmp_path, server, capsys):
    server.configure(batch_seconds=0.3)
    metric = pointwise(server, judge=batched(tmp_path))
    score(metric, SAMPLES)
    [batch_id] = metric.judge.stats.batch_ids
    said = [x for x in capsys.readouterr().err.splitlines() if x.startswith("judge batch")]
    assert said[0].startswith(f"judge batch {batch_id}: validating, 0/{N_LINES} lines, ")
    assert said[-1].startswith(f"judge batch {batch_id}: completed, {N_LINES}/{N_LINES} lines, ")
    assert any(": in_progress, " in x for x in said)
    assert len(said) <= 4  # a line per status, not per poll


# ---- the provider's limits ---------------------------------------------------------------


@pytest.mark.parametrize(("limits", "sizes"), [
    ({"batch_max_requests": 4}, [4, 4, 4, 4, 2]),
    ({"batch_max_requests": 50, "batch_max_bytes": 5000}, None),
])
def test_a_round_is_split_at_the_providers_limits(tmp_path, server, limits, sizes):
    results = score(pointwise(server, judge=batched(tmp_path, **limits)), SAMPLES)
    assert verdicts(results) == EXPECTED
    files = [f.data for f in server.batch_api.files.values() if f.purpose == "batch"]
    lines = [len(f.splitlines()) for f in files]
    assert sum(lines) == N_LINES == server.stats.batch_lines_submitted
    assert server.stats.batches_created == len(files) > 1
    if sizes is not None:
        assert lines == sizes
    else:
        assert all(len(f) <= 5000 for f in files)
        # each file is full: the next file's first line would not have fitted in it
        assert all(len(a) + len(b.splitlines(keepends=True)[0]) > 5000
                   for a, b in zip(files, files[1:], strict=False))


def test_the_whole_run_is_one_batch_of_samples(tmp_path, server):
    metric = pointwise(server, judge=batched(tmp_path, batch_max_requests=40_000))
    realtime = pointwise(server)
    try:
        assert metric.batch_size == 40_000 and realtime.batch_size is None
    finally:
        metric.close()
        realtime.close()


def test_a_panel_with_a_batch_judge_takes_the_whole_run_at_once_too(tmp_path, server):
    """``metric=[a,b]`` with ``judge.batch=true``: the panel's rounds are the batch judge's
    (the whole run), not ``run.batch_size``'s 1,024 samples, each a wait for a batch."""
    from harness.metrics.panel import Panel

    batch = pointwise(server, judge=batched(tmp_path, batch_max_requests=40_000))
    realtime = pointwise(server)
    both, alone = Panel([realtime, batch], ["a", "b"]), Panel([realtime], ["a"])
    try:
        assert both.batch_size == 40_000 and alone.batch_size is None
    finally:
        batch.close()
        realtime.close()


class FarAway:
    """The run's verdict cache across a slow network: each lookup (a reply, a batch line)
    waits 0-30 ms, and every seventh 0.4-0.8 s (a heavy tail), then asks the real cache."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.lines, self.asked = inner, self, 0
        self._lines = inner.lines

    async def _wait(self) -> None:
        self.asked += 1
        slow = self.asked % 7 == 0
        await asyncio.sleep((0.4 + 0.05 * (self.asked % 9)) if slow else 0.003 * (self.asked % 11))

    async def get(self, key: str) -> Any:
        await self._wait()
        return await self.inner.get(key)

    async def pending(self, key: str) -> Any:
        await self._wait()
        return await self._lines.pending(key)

    def __getattr__(self, name: str) -> Any:
        """The store's other methods, and its lines' (``record``, ``settle``, ...), as they are."""
        lines = ("prepare", "record", "rename", "of_batch", "settle")
        return getattr(self._lines if name in lines else self.inner, name)


def test_a_slow_cache_does_not_cut_the_round_into_several_batches(tmp_path, server):
    """Requests still being looked up in a slow cache hold the queue: the round's 18 lines
    go out as one batch, not one batch per lull."""
    metric = pointwise(server, judge=batched(tmp_path))
    try:
        metric.preflight()
        batcher = metric.judge.batcher
        batcher.store = FarAway(batcher.store)
        results = metric.score_batch(SAMPLES)
    finally:
        metric.close()
    assert verdicts(results) == EXPECTED
    assert batcher.store.asked >= 2 * N_LINES  # every reply and batch line looked up, slowly
    assert server.stats.batches_created == 1 and server.stats.batch_lines_submitted == N_LINES


# ---- faults --------------------------------------------------------------------------------


def test_failed_lines_are_retried_in_a_follow_up_batch(tmp_path, server):
    server.configure(batch_fail_lines=0.5)
    metric = pointwise(server, judge=batched(tmp_path))
    results = score(metric, SAMPLES)
    assert verdicts(results) == EXPECTED
    failed = server.stats.batch_lines_failed
    assert 0 < failed < N_LINES
    rounds = list(batch_lines(server).values())
    assert [len(r) for r in rounds] == [N_LINES, failed]
    assert server.stats.batch_lines_answered == N_LINES
    assert (metric.judge.stats.retries, metric.judge.stats.batches) == (failed, 2)


def test_failed_lines_are_retried_realtime_when_asked(tmp_path, server):
    server.configure(batch_fail_lines=0.5)
    results = score(pointwise(server, judge=batched(tmp_path, batch_retry="realtime")), SAMPLES)
    assert verdicts(results) == EXPECTED
    assert server.stats.batches_created == 1
    assert server.stats.requests == server.stats.batch_lines_failed > 0
    assert server.stats.billed_requests == N_LINES


def test_a_line_failing_past_max_retries_leaves_its_sample_unscored(tmp_path, server):
    server.configure(batch_fail_lines=1.0, batch_fail_times=99)
    results = score(pointwise(server, judge=batched(tmp_path, max_retries=1)), SAMPLES[:2])
    assert [r.score for r in results] == [None, None]
    assert results[0].error == ("chunk 1 of 3: the batch line failed: HTTP 500 Internal Server "
                                "Error: The server had an error processing this request (test "
                                "judge). (tried 2 times)")
    assert server.stats.batches_created == 2 and server.stats.batch_lines_submitted == 12


@pytest.mark.parametrize(("outcome", "missing"), [("expire", 9), ("cancel", 9), ("forget", 18)])
def test_lines_a_batch_never_answered_are_sent_again(tmp_path, server, outcome, missing):
    server.configure(batch_script=[outcome], batch_answered=0.5)
    metric = pointwise(server, judge=batched(tmp_path))
    results = score(metric, SAMPLES)
    assert verdicts(results) == EXPECTED
    first, again = batch_lines(server).values()
    assert len(first) == N_LINES and len(again) == missing  # only what is missing
    assert {x["custom_id"] for x in again} <= {x["custom_id"] for x in first}
    assert server.stats.batch_lines_answered == N_LINES
    assert server.stats.billed_requests == N_LINES  # nothing paid twice
    assert metric.judge.stats.failures == 0


def test_a_reply_that_cannot_be_used_is_re_asked_in_a_later_batch(tmp_path, server):
    server.configure(script=["malformed"])
    results = score(pointwise(server, judge=batched(tmp_path)), SAMPLES)
    assert verdicts(results) == EXPECTED
    first, again = batch_lines(server).values()
    [line] = again
    assert line["body"]["messages"][-1]["content"].endswith(
        "Reply with only the JSON object described above.")
    assert len(first) == N_LINES


def test_rate_limits_on_the_batch_endpoints_are_waited_out(tmp_path, server):
    metric = pointwise(server, judge=batched(tmp_path))  # 3 retries a call
    server.configure(batch_429=3)  # GET /batches (the preflight's) is refused 3 times
    metric.preflight()
    server.configure(batch_429=3)  # then POST /files
    try:
        results = metric.score_batch(SAMPLES)
    finally:
        metric.close()
    assert verdicts(results) == EXPECTED
    assert server.stats.batch_refused == 6
    assert server.stats.files_uploaded == 1
    assert server.stats.batches_created == 1 and server.stats.batch_lines_submitted == N_LINES


def test_a_rate_limit_asking_longer_than_max_wait_ends_the_run(tmp_path, server):
    metric = pointwise(server, judge=batched(tmp_path, max_wait=5))
    metric.preflight()
    server.configure(batch_429=1, retry_after="7200")
    with pytest.raises(JudgeUnavailable, match=r"^judge: POST /files at http://127\.0\.0\.1:\d+/v1 "
                       r"was refused \(HTTP 429 Too Many Requests: .*\) and asks to wait 7200 s "
                       r"\(2\.0 h\), longer than judge.max_wait=5 s"):
        try:
            metric.score_batch(SAMPLES)
        finally:
            metric.close()
    assert server.stats.batches_created == 0


def test_an_endpoint_without_the_batch_api_is_one_line_before_any_work(tmp_path):
    with JudgeServer(sample_labels(), batch_api=False) as server:
        result = run_cli("metric=llm_with_reference", "judge=local",
                         f"judge.base_url={server.base_url}", "judge.model=test-judge",
                         "tracking=none", "judge.batch=true", cwd=tmp_path)
        assert server.stats.requests == 0 and server.stats.files_uploaded == 0
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line == (f"error: judge.batch=true: {server.base_url} has no Batch API (GET /batches "
                    "answered 404 Not Found); set judge.batch=false to judge in realtime, or use "
                    "an endpoint that has one (OpenAI's, or an OpenAI-compatible one that serves "
                    "/v1/batches)")
    assert not result.out_dir.joinpath("samples.jsonl").exists()


# ---- a run stopped, then run again ----------------------------------------------------------


def stopped_after_creating(server: JudgeServer, metric: JudgedMetric, samples: list[Any]) -> None:
    """Score until the server has created a batch, then stop (as Ctrl-C does) and close."""
    async def until_created() -> None:
        work = asyncio.ensure_future(metric.scoring(samples))
        while server.stats.batches_created == 0:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        work.cancel()
        await asyncio.gather(work, return_exceptions=True)

    try:
        metric.preflight()
        metric.loop.run(until_created())
    finally:
        metric.close()


def test_a_stopped_run_run_again_resumes_its_batch(tmp_path, server, capsys):
    server.configure(batch_seconds=60)
    first = pointwise(server, judge=batched(tmp_path))
    stopped_after_creating(server, first, SAMPLES)
    [batch_id] = first.judge.stats.batch_ids
    err = capsys.readouterr().err
    assert (f"judge: batch {batch_id} still running at {server.base_url}, recorded in the "
            f"verdict cache {tmp_path / 'cache.sqlite'}: run the same command again to resume "
            "it (no request is sent or paid for twice)") in err
    server.configure(batch_seconds=0)
    metric = pointwise(server, judge=batched(tmp_path))
    results = score(metric, SAMPLES)
    assert verdicts(results) == EXPECTED
    assert server.stats.batches_created == 1 and server.stats.batch_lines_submitted == N_LINES
    assert metric.judge.stats.batches == 0 and metric.judge.stats.batch_requests == N_LINES
    assert first.judge.stats.resumed_batch_ids == []
    assert metric.judge.stats.resumed_batch_ids == [batch_id] and metric.judge.stats.batch_ids == []
    assert metric.describe()["judge"]["resumed_batch_ids"] == [batch_id]
    rows = sqlite3.connect(tmp_path / "cache.sqlite").execute(
        "SELECT COUNT(*) FROM batch_lines").fetchone()
    assert rows == (0,)  # every line settled


@pytest.mark.parametrize(("fate", "missing"), [("forget", 18), ("expire", 9), ("cancel", 9)])
def test_a_resumed_batch_that_ended_short_has_only_its_missing_lines_sent(tmp_path, server,
                                                                          fate, missing):
    server.configure(batch_seconds=60, batch_answered=0.5)
    first = pointwise(server, judge=batched(tmp_path))
    stopped_after_creating(server, first, SAMPLES)
    [batch_id] = first.judge.stats.batch_ids
    if fate == "forget":
        del server.batch_api.batches[batch_id]
    else:
        server.batch_api.batches[batch_id].outcome = fate
    server.configure(batch_seconds=0)
    results = score(pointwise(server, judge=batched(tmp_path)), SAMPLES)
    assert verdicts(results) == EXPECTED
    _, again = batch_lines(server).values()
    assert len(again) == missing
    assert server.stats.batch_lines_answered == server.stats.billed_requests == N_LINES


def file_pending(tmp_path: Path, server: JudgeServer, batch_id: str) -> None:
    """Make the cache say what a kill between the upload and the batch's creation leaves:
    the lines under their input file, the batch id unknown."""
    file_id = server.batch_api.batches[batch_id].input_file_id
    with sqlite3.connect(tmp_path / "cache.sqlite") as db:
        db.execute("UPDATE batch_lines SET batch = ? WHERE batch = ?", (f"file:{file_id}",
                                                                          batch_id))


def test_a_batch_created_by_a_lost_answer_is_found_by_its_input_file(tmp_path, server):
    server.configure(batch_seconds=60)
    first = pointwise(server, judge=batched(tmp_path))
    stopped_after_creating(server, first, SAMPLES)
    file_pending(tmp_path, server, first.judge.stats.batch_ids[0])
    server.configure(batch_seconds=0)
    again = pointwise(server, judge=batched(tmp_path))
    results = score(again, SAMPLES)
    assert verdicts(results) == EXPECTED
    assert server.stats.batches_created == 1 and server.stats.batch_lines_submitted == N_LINES
    assert again.judge.stats.resumed_batch_ids == first.judge.stats.batch_ids  # found by its file


def test_an_input_file_whose_batch_was_never_created_is_sent_again(tmp_path, server):
    server.configure(batch_seconds=60)
    first = pointwise(server, judge=batched(tmp_path))
    stopped_after_creating(server, first, SAMPLES)
    batch_id = first.judge.stats.batch_ids[0]
    file_pending(tmp_path, server, batch_id)
    del server.batch_api.batches[batch_id]  # the creation never happened
    server.configure(batch_seconds=0)
    again = pointwise(server, judge=batched(tmp_path))
    results = score(again, SAMPLES)
    assert verdicts(results) == EXPECTED
    assert server.stats.batches_created == 2 and server.stats.batch_lines_answered == N_LINES
    assert again.judge.stats.resumed_batch_ids == [] and len(again.judge.stats.batch_ids) == 1


# ---- settings and cost ---------------------------------------------------------------------


def test_batch_mode_needs_the_cache():
    with pytest.raises(ConfigError, match=r"^judge.batch=true keeps its batches in the verdict "
                       r"cache, .*; set judge.cache=true \(or judge.batch=false\)$"):
        OpenAIJudge("m", api_key_env=None, batch=True, cache=False)


@pytest.mark.parametrize(("setting", "value", "said"), [
    ("batch_poll", 0, "judge.batch_poll: expected finite float > 0, got 0"),
    ("batch_retry", "later", "judge.batch_retry: expected 'batch' or 'realtime', got 'later'"),
    ("batch_max_requests", 0, "judge.batch_max_requests: expected int >= 1, got 0"),
])
def test_batch_settings_are_checked(setting, value, said):
    with pytest.raises(ConfigError, match=f"^{said}"):
        OpenAIJudge("m", api_key_env=None, **{setting: value})


OPENAI = "https://api.openai.com/v1"
PRICES = {"gpt-4o-mini": {"input": 0.15, "cached_input": 0.075, "output": 0.60}}


@pytest.mark.parametrize(("entry", "factor"), [({}, 0.5), ({"batch": 0.6}, 0.6),
                                               ({"batch": 1.0}, 1.0)])
def test_the_batch_price_is_a_share_of_the_realtime_one(entry, factor):
    prices = {"gpt-4o-mini": {**PRICES["gpt-4o-mini"], **entry}}
    j = OpenAIJudge("gpt-4o-mini", base_url=OPENAI, api_key_env=None, prices=prices)
    j.transport.charge(1_000_000, 200_000, 100_000, batch=True)
    realtime = 0.8 * 0.15 + 0.2 * 0.075 + 0.1 * 0.60  # 0.195 USD
    assert j.stats.cost_usd == pytest.approx(factor * realtime)
    j.transport.charge(1_000_000, 200_000, 100_000)
    assert j.stats.cost_usd == pytest.approx((1 + factor) * realtime)


@pytest.mark.parametrize(("value", "said"), [
    (1.5, r"judge.prices.m.batch: expected finite float in \[0, 1\], got 1.5"),
    (-0.1, r"judge.prices.m.batch: expected finite float in \[0, 1\], got -0.1"),
])
def test_a_batch_factor_is_a_share(value, said):
    with pytest.raises(ConfigError, match=f"^{said}"):
        OpenAIJudge("m", api_key_env=None, prices={"m": {"input": 1.0, "batch": value}})


def test_stats_keep_the_ids_apart_from_the_counters():
    stats = JudgeStats(batches=2, batch_ids=["batch_a", "batch_b"], batch_requests=7)
    data = stats.as_dict()
    assert "batch_ids" not in data and stats.batch_ids == ["batch_a", "batch_b"]
    assert {k: data[k] for k in ("batches", "batch_requests", "batch_prompt_tokens",
                                 "batch_cached_prompt_tokens", "batch_completion_tokens")} == {
        "batches": 2, "batch_requests": 7, "batch_prompt_tokens": 0,
        "batch_cached_prompt_tokens": 0, "batch_completion_tokens": 0}
    assert all(isinstance(v, (int, float)) or v is None for v in data.values())


def test_the_summary_records_the_batches(tmp_path):
    with JudgeServer(sample_labels()) as server:
        result = run_cli("metric=llm_with_reference", "judge=local",
                         f"judge.base_url={server.base_url}", "judge.model=test-judge",
                         "tracking=none", "judge.batch=true", "judge.batch_poll=0.02",
                         f"judge.cache_path={tmp_path / 'c.sqlite'}", cwd=tmp_path)
        ids = list(server.batch_api.batches)
        lines = server.stats.batch_lines_answered
    assert result.returncode == 0, result.stderr
    judge = result.summary()["judge"]
    assert judge["batch_ids"] == ids and judge["batches"] == 1
    assert judge["batch_requests"] == judge["requests"] == lines > 0
    for row in result.rows():
        assert row["score"] == average_precision(row["verdicts"], 1e-10)
