"""What a judge's tokens cost, and where they are counted: the realtime price, the cached
input's, and the Batch API's share of them (``judge.prices``, ``harness.judges.checks``)."""

from __future__ import annotations

from collections.abc import Mapping

from harness.core.types import JudgeStats
from harness.judges.checks import BATCH_DISCOUNT


def usd(price: Mapping[str, float], prompt: int, cached: int, completion: int,
        batch: bool = False) -> float:
    """USD of one reply at ``price`` (a ``judge.prices`` entry): ``cached`` of its
    ``prompt`` tokens at the cached price (the input price when none is given), and the
    whole at the entry's ``batch`` factor (``BATCH_DISCOUNT`` unless set) for a line
    answered through the Batch API."""
    base = price.get("input", 0.0)
    total = ((prompt - cached) * base + cached * price.get("cached_input", base)
             + completion * price.get("output", 0.0)) / 1e6
    return total * price.get("batch", BATCH_DISCOUNT) if batch else total


def count(stats: JudgeStats, prompt: int, cached: int, completion: int, batch: bool) -> None:
    """Add one reply's tokens to the totals (and to their batch part for a Batch API line)."""
    stats.prompt_tokens += prompt
    stats.completion_tokens += completion
    stats.cached_prompt_tokens += cached
    if batch:
        stats.batch_requests += 1
        stats.batch_prompt_tokens += prompt
        stats.batch_completion_tokens += completion
        stats.batch_cached_prompt_tokens += cached
