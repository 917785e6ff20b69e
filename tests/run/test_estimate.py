"""The bill before the run (``run.dry_run``), in process: a judge gone dry against the real
test judge sends nothing and counts what it would send; the arithmetic of the estimate
(costs, times, totals) against hand calculations."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
from helpers.judge import PARIS, listwise, pointwise, sample, score
from helpers.judge_server import JudgeServer

from harness.judges import tokens
from harness.judges.expect import filler, synthetic
from harness.judges.replies import parse
from harness.judges.replies.schemas import schema
from harness.run.estimate import expected_time, priced, total_of

BERLIN = "The Brandenburg Gate is a monument in Berlin."


def chars_of(messages: list[dict[str, str]]) -> int:
    return sum(len(m["content"]) for m in messages)


# ---- made-up replies parse as the real ones do ------------------------------------------


def test_a_made_up_pointwise_reply_parses_as_relevant() -> None:
    content = json.dumps(synthetic(schema("pointwise"), "why"))
    assert parse.pointwise(content) == (1, "why")


@pytest.mark.parametrize("items", [1, 3, 7])
def test_a_made_up_listwise_reply_holds_one_verdict_per_chunk(items: int) -> None:
    content = json.dumps(synthetic(schema("listwise", items), "why"))
    assert parse.listwise(content, items) == [("yes", "why")] * items


def test_a_made_up_explanation_parses() -> None:
    assert parse.reason(json.dumps(synthetic(schema("reason"), "because"))) == "because"


@pytest.mark.parametrize("chars", [1, 40, 100, 333])
def test_filler_is_as_long_as_asked(chars: int) -> None:
    assert len(filler(chars)) in (chars, chars - 1)  # a trailing space is dropped


# ---- token counting: the approximation, and tiktoken never made to download -------------


def test_the_approximation_is_four_characters_a_token_rounded_up_per_request() -> None:
    messages = [{"role": "system", "content": "x" * 10}, {"role": "user", "content": "y" * 7}]
    assert tokens.APPROXIMATION.request(messages) == 5  # ceil(17 / 4), not 3 + 2
    assert tokens.APPROXIMATION.text("abcd" * 25) == 25
    assert not tokens.APPROXIMATION.exact


def test_an_unknown_model_is_approximated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert tokens.counter_for("test-judge") is tokens.APPROXIMATION
    assert tokens.counter_for("gpt-4o-mini") is tokens.APPROXIMATION  # no encoding on disk


def test_an_encoding_file_is_used_only_when_whole(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
    path = tmp_path / hashlib.sha1(url.encode()).hexdigest()
    assert tokens.cached_file("o200k_base") is None  # missing: tiktoken would download it
    path.write_bytes(b"not the encoding")
    assert tokens.cached_file("o200k_base") is None  # damaged: tiktoken would download it
    assert tokens.cached_file("gpt2") is None  # not one this module knows the hash of
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    assert tokens.cache_folder() is None  # tiktoken's cache off: it always downloads


def test_tiktokens_default_cache_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", "/somewhere")
    assert tokens.cache_folder() == Path("/somewhere")
    monkeypatch.delenv("DATA_GYM_CACHE_DIR")
    assert tokens.cache_folder() == Path(tempfile.gettempdir()) / "data-gym-cache"


# ---- costs, times and totals, by hand ---------------------------------------------------


def report(billed: int, prompt: int, completion: int, **kw: object) -> dict[str, object]:
    return {"model": "m", "requests": billed, "cached_requests": 0, "repeated_requests": 0,
            "billed_requests": billed, "prompt_tokens": prompt, "completion_tokens": completion,
            "max_concurrency": 16, "observed": None, "prices": None, "cost_unknown": None,
            **kw}


def test_cost_at_realtime_and_batch_prices() -> None:
    prices = {"input": 0.15, "cached_input": 0.075, "output": 0.60}
    out = priced(report(10, 1_000_000, 100_000, prices=prices))
    assert out["cost_usd"] == {"realtime": pytest.approx(0.15 + 0.06),
                               "batch": pytest.approx(0.105)}
    assert out["batch_factor"] == 0.5


def test_a_batch_factor_in_the_prices_is_used() -> None:
    prices = {"input": 2.0, "output": 8.0, "batch": 0.25}
    out = priced(report(1, 500_000, 250_000, prices=prices))
    assert out["cost_usd"]["realtime"] == pytest.approx(1.0 + 2.0)
    assert out["cost_usd"]["batch"] == pytest.approx(3.0 * 0.25)


def test_a_local_endpoint_is_priced_in_tokens_only() -> None:
    out = priced(report(4, 1000, 100, cost_unknown="local endpoint"))
    assert out["cost_usd"] is None and out["cost_unknown"] == "local endpoint"
    assert out["prompt_tokens"] == 1000


@pytest.mark.parametrize(("billed", "slots", "seconds"), [(100, 16, 14.0), (16, 16, 2.0),
                                                          (0, 16, 0.0), (3, 1, 6.0)])
def test_time_at_the_judges_concurrency(billed: int, slots: int, seconds: float) -> None:
    out = expected_time(report(billed, 0, 0, max_concurrency=slots))
    assert out["expected_time_s"] == seconds  # ceil(billed / slots) x 2 s
    assert "assumed" in out["time_by"]


def test_time_from_the_caches_latest_run() -> None:
    out = expected_time(report(100, 0, 0, observed={"requests": 50, "seconds": 10.0}))
    assert out["expected_time_s"] == 20.0  # 100 at 5 a second
    assert "verdict cache" in out["time_by"]


def test_totals_add_up_and_an_unknown_cost_is_unknown() -> None:
    priced_one = priced(report(10, 1_000_000, 0, prices={"input": 1.0, "output": 0.0}))
    local = priced(report(5, 300, 30, cost_unknown="local endpoint"))
    nothing = priced(report(0, 0, 0, cost_unknown="local endpoint"))
    both = total_of([priced_one, local])
    assert (both["requests"], both["prompt_tokens"], both["completion_tokens"]) == (
        15, 1_000_300, 30)
    assert both["cost_usd"] is None and both["cost_unknown"] == "local endpoint"
    known = total_of([priced_one, nothing])  # a part with nothing to send costs nothing
    assert known["cost_usd"] == {"realtime": 1.0, "batch": 0.5}
    assert total_of([])["requests"] == 0


# ---- a judge gone dry, against the real test judge --------------------------------------


def test_a_dry_judge_sends_nothing_and_counts_each_request() -> None:
    chunks = [PARIS, BERLIN, "Paris is in France."]
    with JudgeServer({}) as server:
        metric = pointwise(server)
        [dry] = [j.go_dry() for j in metric.judges().values()]
        results = score(metric, [sample(chunks), sample(chunks[:1], "t")])
        assert server.stats.requests == 0  # nor a preflight: /models was never asked
    assert [r.verdicts for r in results] == [[1, 1, 1], [1]]  # made-up verdicts: relevant
    got = dry.report()
    # the second sample's chunk is the first's: the real run's cache answers the repeat
    assert (got["requests"], got["billed_requests"], got["repeated_requests"]) == (4, 3, 1)
    assert got["cached_requests"] == 0
    messages = [metric.prompt.messages(question=sample([]).user_input,
                                       answer=sample([]).reference, context=c)
                for c in chunks]
    assert got["prompt_tokens"] == sum(math.ceil(chars_of(m) / 4) for m in messages)


def test_a_dry_judge_finds_what_a_real_run_paid_for(tmp_path: Path) -> None:
    cache = str(tmp_path / "verdicts.sqlite")
    samples = [sample([PARIS, BERLIN]), sample([BERLIN], "t")]
    with JudgeServer({}) as server:
        score(pointwise(server, judge={"cache_path": cache}), samples)
        paid = server.stats.requests
        metric = pointwise(server, judge={"cache_path": cache})
        [dry] = [j.go_dry() for j in metric.judges().values()]
        score(metric, [*samples, sample(["Paris is in France."], "new")])
        assert server.stats.requests == paid == 3
    got = dry.report()
    assert (got["requests"], got["cached_requests"], got["billed_requests"]) == (4, 3, 1)
    # the one to send is expected to answer as long as the cache's earlier replies did (two
    # distinct requests: the real run sent its repeated chunk twice at once, stored once)
    assert got["completion_tokens_by"].startswith("pointwise: the verdict cache, 2 earlier")


def test_a_dry_run_creates_no_cache_and_counts_repeats_once(tmp_path: Path) -> None:
    cache = tmp_path / "never" / "verdicts.sqlite"
    with JudgeServer({}) as server:
        metric = listwise(server, include_reason=False, judge={"cache_path": str(cache)})
        [dry] = [j.go_dry() for j in metric.judges().values()]
        score(metric, [sample([PARIS, BERLIN]), sample([PARIS, BERLIN], "again")])
        assert server.stats.requests == 0
    assert not cache.parent.exists()  # never created, not even its folder
    got = dry.report()
    assert (got["requests"], got["billed_requests"], got["repeated_requests"]) == (2, 1, 1)


def test_without_a_cache_every_request_is_to_send() -> None:
    with JudgeServer({}) as server:
        metric = listwise(server, judge={"cache": False})
        [dry] = [j.go_dry() for j in metric.judges().values()]
        score(metric, [sample([PARIS, BERLIN]), sample([PARIS, BERLIN], "again")])
        assert server.stats.requests == 0
    got = dry.report()
    # a listwise call and its explanation per sample, the repeat paid again (no cache)
    assert (got["requests"], got["billed_requests"]) == (4, 4)
    assert set(got["by_kind"]) == {"listwise", "reason"} and got["cache"] is None
