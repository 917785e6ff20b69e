"""The bill after the run, from a judge's counters (``harness.core.bill``), with the batch
counters the batched judge adds; figures by hand."""

from __future__ import annotations

from harness.compare.bill import cell
from harness.core.bill import bill, bill_line, bill_metrics, variant_bill_metrics
from harness.report.bill import bill_rows, cost_section

#: A run that sent 40 requests realtime and 60 in batches, 10 answered by the verdict cache:
#: as ``JudgeStats`` counts them, each total holds the batch lines, ``batch_*`` their part
#: (realtime 30,000 prompt tokens, 6,000 cached, 2,000 completion; batch 50,000, 10,000, 3,000).
COUNTERS = {
    "requests": 100, "batch_requests": 60, "prompt_tokens": 80_000,
    "cached_prompt_tokens": 16_000, "batch_prompt_tokens": 50_000,
    "batch_cached_prompt_tokens": 10_000, "completion_tokens": 5_000,
    "batch_completion_tokens": 3_000, "cost_usd": 0.0123456789,
    "cache_hits": 10, "saved_prompt_tokens": 8_000, "saved_completion_tokens": 500,
    "saved_cost_usd": 0.0021, "retries": 0, "parse_failures": 0, "failures": 0,
}


def test_the_bill_adds_realtime_and_batch() -> None:
    b = bill(COUNTERS)
    assert b is not None
    assert b["requests"] == {"realtime": 40, "batch": 60, "total": 100}
    assert b["prompt_tokens"] == {"total": 80_000, "cached": 16_000, "cached_share": 0.2}
    assert b["completion_tokens"] == 5_000
    assert b["cost_usd"] == 0.012346  # the price paid, as counted, to micro-dollars
    assert b["saved_by_verdict_cache"] == {"requests": 10, "prompt_tokens": 8_000,
                                           "completion_tokens": 500, "cost_usd": 0.0021}


def test_a_judge_without_batches_has_none() -> None:
    realtime = {**{k: v for k, v in COUNTERS.items() if not k.startswith("batch_")},
                "requests": 40, "prompt_tokens": 30_000, "cached_prompt_tokens": 3_000}
    b = bill(realtime)
    assert b is not None and b["requests"] == {"realtime": 40, "batch": 0, "total": 40}
    assert b["prompt_tokens"]["cached_share"] == 0.1  # 3,000 of 30,000
    assert "batch" not in (bill_line(realtime) or "")


def test_the_console_line() -> None:
    assert bill_line(COUNTERS) == (
        "100 requests (40 realtime, 60 batch), 80,000 prompt tokens (20% cached), 5,000 "
        "completion tokens: $0.0123 at the price paid; the verdict cache saved 10 requests "
        "(8,500 tokens, $0.0021)")


def test_a_local_endpoint_is_tokens_no_dollars() -> None:
    local = {**COUNTERS, "cost_usd": None, "saved_cost_usd": None,
             "cost_unknown": "local endpoint"}
    line = bill_line(local) or ""
    assert "tokens only, no dollars (local endpoint)" in line and "$" not in line
    section = cost_section(local)
    assert section is not None
    assert dict(section["rows"])["cost"] == "tokens only, no dollars (local endpoint)"


def test_a_rerun_the_verdict_cache_answered_logs_the_same_columns() -> None:
    answered = {"requests": 0, "prompt_tokens": 0, "cached_prompt_tokens": 0,
                "completion_tokens": 0, "cost_usd": 0.0, "cache_hits": 40}
    assert bill(answered)["prompt_tokens"]["cached_share"] is None  # nothing paid: no share
    assert bill_metrics(answered) == {"judge/cached_prompt_share": 0.0}  # but the column


def test_no_judge_no_bill() -> None:
    assert bill({}) is None and bill_line({}) is None and bill_rows(None) == []
    assert cost_section({"model": "x"}) is None and bill_metrics({}) == {}


def test_each_variant_of_several_gets_its_own_rows_and_metrics() -> None:
    other = {"requests": 5, "prompt_tokens": 1000, "cached_prompt_tokens": 0,
             "completion_tokens": 50, "cost_usd": 0.001, "cache_hits": 0}
    variants = {"a": {"judge_stats": COUNTERS}, "b": {"judge_stats": other}, "c": {}}
    rows = bill_rows(COUNTERS, variants)
    assert [r[1].split(":")[0] for r in rows[1:]] == ["a", "b"]
    metrics = variant_bill_metrics(variants)
    assert metrics["judge/b/requests"] == 5 and metrics["judge/a/batch_requests"] == 60
    assert metrics["judge/b/cached_prompt_share"] == 0.0
    assert metrics["judge/a/cached_prompt_share"] == 0.2
    assert not any(k.startswith("judge/c/") for k in metrics)
    section = cost_section(COUNTERS, variants)
    assert section is not None and [v[0] for v in section["variants"]] == ["a", "b"]


def test_compare_counts_batch_lines_once() -> None:
    assert cell({"requests": 100, "batch_requests": 60, "cost_usd": 0.0123}) == "$0.0123 (100 req)"
    assert cell({"requests": 100, "batch_requests": 60, "prompt_tokens": 80_000,
                 "cost_usd": None}) == "80,000 prompt tok, no $ (100 req)"
