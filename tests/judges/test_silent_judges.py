"""Issue 31, class 7 (b): a judge that accepts connections and never answers stops the run,
as one that refuses them does.

Each time-out halved the pacing limit down to 1 and each request was retried: 100 judgements
with ``judge.timeout=1`` took 215 s (``judge.max_retries=1``), about ten hours with the local
preset's defaults. Now ``judge.max_timeouts_in_a_row`` time-outs with nothing answered in
between, nor for two ``judge.timeout``, end the run in one line (exit 2, rows already scored
kept in ``samples.jsonl.partial``); a server that drips its reply slower than the time-out is
the same; a busy server that answers now and then is not stopped. Real HTTP on 127.0.0.1.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, run_cli, sample_labels, sample_rows
from helpers.judge import pointwise, sample, score
from helpers.judge_server import JudgeServer

from harness.core.errors import JudgeUnavailable
from harness.judges.transport.silence import QUIET_ROUNDS, Silence


def llm(url: str, *extra: str) -> tuple[str, ...]:
    return ("metric=llm_with_reference", "judge=local", f"judge.base_url={url}",
            "judge.model=test-judge", "tracking=none", *extra)


def one_error(result: CliResult) -> str:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    errors = [x for x in lines if x.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    return errors[0]


def partial_rows(result: CliResult) -> list[dict[str, Any]]:
    text = (result.out_dir / "samples.jsonl.partial").read_text("utf-8")
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.slow
def test_a_judge_that_never_answers_ends_the_run_in_seconds(tmp_path: Path) -> None:
    with JudgeServer(sample_labels(), hang=1.0) as server:
        began = time.monotonic()
        result = run_cli(*llm(server.base_url, "judge.timeout=0.5"), cwd=tmp_path, timeout=60)
        took = time.monotonic() - began
        sent = server.stats.requests
    line = one_error(result)
    assert line.startswith(f"error: judge endpoint {server.base_url} accepts connections but "
                           "answered none of the last "), line
    assert "within judge.timeout=0.5 s" in line and "since the first request" in line
    assert "judge.max_timeouts_in_a_row=null" in line
    # two rounds of time-outs (16 requests, then their retries under a halved limit), not
    # 116 judgements x 6 tries
    assert 8 <= sent <= 40
    assert took < 20
    assert not (result.out_dir / "samples.jsonl").exists()


@pytest.mark.slow
def test_a_judge_that_stops_answering_mid_run_keeps_the_rows_scored(tmp_path: Path) -> None:
    # one request at a time: two samples' six chunks answered, then nothing
    with JudgeServer(sample_labels(), script=["ok"] * 6, hang=1.0) as server:
        result = run_cli(*llm(server.base_url, "judge.timeout=0.3", "judge.max_concurrency=1",
                              "judge.max_timeouts_in_a_row=3", "run.limit=6"),
                         cwd=tmp_path, timeout=60)
        assert server.stats.ok == 6
    line = one_error(result)
    assert "answered none of the last 3 requests within judge.timeout=0.3 s" in line, line
    assert "(nothing answered for " in line
    rows = partial_rows(result)
    assert [r["id"] for r in rows] == [r["id"] for r in sample_rows()[:2]]
    # as the test judge's labels say: a chunk is relevant iff it is a reference
    assert [r["verdicts"] for r in rows] == [
        [int(c in r["reference_context_ids"]) for c in r["retrieved_context_ids"]]
        for r in sample_rows()[:2]]


@pytest.mark.slow
def test_a_reply_dripped_slower_than_the_timeout_is_silence_too(tmp_path: Path) -> None:
    # headers at once, then 8 pieces 0.5 s apart: 4 s a reply, judge.timeout=0.4
    with JudgeServer(sample_labels(), drip_ms=500) as server:
        began = time.monotonic()
        result = run_cli(*llm(server.base_url, "judge.timeout=0.4"), cwd=tmp_path, timeout=60)
        took = time.monotonic() - began
    line = one_error(result)
    assert "accepts connections but answered none of the last" in line
    assert "within judge.timeout=0.4 s" in line
    assert took < 20


@pytest.mark.slow
def test_a_burst_of_queued_requests_timing_out_together_is_not_silence(tmp_path: Path) -> None:
    # the first four requests (all in flight at once) never answer; their retries do: four
    # time-outs in a row, but within one time-out of the first send
    with JudgeServer(sample_labels(), script=["hang"] * 4) as server:
        result = run_cli(*llm(server.base_url, "judge.timeout=0.5", "judge.max_concurrency=4",
                              "judge.max_timeouts_in_a_row=4", "run.limit=2"),
                         cwd=tmp_path, timeout=60)
        assert server.stats.hangs == 4
    assert result.returncode == 0, result.stderr
    assert result.summary()["n_scored"] == 2
    assert result.summary()["judge"]["timeouts"] == 4


@pytest.mark.slow
def test_null_keeps_waiting_as_before(tmp_path: Path) -> None:
    # never stop for time-outs: the call fails after its retries, the sample is unscored
    with JudgeServer(sample_labels(), hang=1.0) as server:
        result = run_cli(*llm(server.base_url, "judge.timeout=0.3", "judge.max_retries=0",
                              "judge.max_timeouts_in_a_row=null", "run.limit=1",
                              "run.max_unscored_frac=1"), cwd=tmp_path, timeout=60)
        assert server.stats.requests == 3
    assert result.returncode == 0, result.stderr
    [row] = result.rows()
    assert row["score"] is None and "no answer within judge.timeout=0.3 s" in row["error"]


@pytest.mark.slow
def test_a_hundred_judgements_against_a_hung_judge_take_seconds_not_minutes() -> None:
    """The issue's case: 100 judgements, judge.timeout=1, max_retries 1 (215 s before)."""
    with JudgeServer(hang=1.0) as server:
        metric = pointwise(server, judge={"timeout": 1.0, "max_retries": 1,
                                          "max_concurrency": 64, "cache": False})
        samples = [sample([f"chunk {i}-{j}" for j in range(10)], f"s{i}") for i in range(10)]
        began = time.monotonic()
        with pytest.raises(JudgeUnavailable, match="answered none of the last"):
            score(metric, samples)
        took = time.monotonic() - began
        assert server.stats.requests <= 40
    assert took < 15  # about 2 x judge.timeout, and the sample's siblings' own time-outs


# ------------------------------------------------------------------ the rule, on a clock


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_silence_needs_both_the_count_and_the_quiet() -> None:
    clock = Clock()
    silence = Silence(3, timeout=1.0, clock=clock)
    silence.sending()
    clock.now = 1.0
    assert [silence.timed_out("http://j/v1") for _ in range(5)] == [None] * 5  # 1 s quiet
    clock.now = QUIET_ROUNDS * 1.0
    error = silence.timed_out("http://j/v1")  # 6 in a row, 2 s quiet
    assert isinstance(error, JudgeUnavailable)
    assert "answered none of the last 6 requests within judge.timeout=1 s (nothing answered " \
           "in the 2 s since the first request)" in str(error)
    with pytest.raises(JudgeUnavailable):  # every later send raises the same line
        silence.sending()


def test_an_answer_of_any_kind_resets_the_count() -> None:
    clock = Clock()
    silence = Silence(3, timeout=1.0, clock=clock)
    silence.sending()
    clock.now = 10.0
    assert silence.timed_out("w") is None and silence.timed_out("w") is None
    silence.answered()  # a 500 or a 429 is an answer too
    assert silence.timed_out("w") is None and silence.timed_out("w") is None  # 2 in a row
    clock.now = 11.5
    assert silence.timed_out("w") is None  # 3 in a row, but 1.5 s since the answer
    clock.now = 12.0
    error = silence.timed_out("w")
    assert error is not None and "(nothing answered for 2 s)" in str(error)


def test_no_limit_never_stops() -> None:
    clock = Clock()
    silence = Silence(None, timeout=1.0, clock=clock)
    silence.sending()
    clock.now = 1e6
    assert all(silence.timed_out("w") is None for _ in range(1000))
    silence.sending()  # still sends
