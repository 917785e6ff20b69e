"""A 429 that no wait cures (OpenAI's ``insufficient_quota``: the account's credit is spent)
stops the run at once with one line, keeping the rows judged before it; a 429 of a rate
limit is still waited for and retried."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli, sample_labels
from helpers.judge_server import JudgeServer


def llm(url: str, *extra: str) -> tuple[str, ...]:
    return ("metric=llm_with_reference", "judge=local", f"judge.base_url={url}",
            "judge.model=test-judge", "judge.max_concurrency=1", "judge.pacing=fixed",
            "judge.cache=false", "tracking=none", "run.report=false", *extra)


def errors(stderr: str) -> list[str]:
    assert "Traceback" not in stderr, stderr
    return [x for x in stderr.splitlines() if x.startswith("error: ")]


@pytest.mark.parametrize("max_retries", [0, 5])
def test_a_spent_quota_stops_the_run_at_once_keeping_its_rows(
        tmp_path: Path, max_retries: int) -> None:
    # one call at a time: the first sample's three chunks are judged, then the quota is spent
    with JudgeServer(sample_labels(), retry_after="0.01",
                     script=["ok", "ok", "ok", "quota", "ok", "ok"]) as judge:
        result = run_cli(*llm(judge.base_url, f"judge.max_retries={max_retries}"),
                         cwd=tmp_path)
        sent = judge.stats.requests
    assert result.returncode == 2, result.stderr
    [line] = errors(result.stderr)
    assert line.startswith(f"error: judge: {judge.base_url} refused the call: the account's "
                           "quota is spent (HTTP 429 Too Many Requests: You exceeded your "
                           "current quota"), line
    assert "waiting will not help" in line and "finished rows are kept" in line
    assert sent == 4  # never retried, and no other call was sent after it
    partial = list(tmp_path.glob("**/samples.jsonl.partial"))
    assert len(partial) == 1 and partial[0].read_text("utf-8").count("\n") == 1


def test_a_rate_limit_429_is_still_waited_for(tmp_path: Path) -> None:
    with JudgeServer(sample_labels(), retry_after="0.01",
                     script=["429", "429", "ok"]) as judge:
        result = run_cli(*llm(judge.base_url, "judge.max_retries=5", "run.limit=2"),
                         cwd=tmp_path)
        sent = judge.stats.requests
    assert result.returncode == 0, result.stderr
    assert sent == 6 + 2  # two samples of three chunks, and the two 429s retried
