"""A judged run's bill: what it sent and what it cost, from the judge's counters.

The counters are ``JudgeStats``'s as ``summary.json``'s ``judge`` block holds them: requests
answered (``requests``, batch lines included) and the part answered in batches
(``batch_requests``, when the judge batches; likewise each token total and its ``batch_*``
part), prompt tokens with the share the provider served from its prompt cache, the cost at the
price actually paid (``cost_usd``: realtime, batch and cached input each at its own price)
and what the verdict cache saved (``cache_hits``, ``saved_*``). A local endpoint has no
per-token price: its bill is tokens, no dollars (``cost_usd`` null, ``cost_unknown`` why).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The counters a variant of a run of several logs as ``judge/<variant>/<name>``.
BILL_COUNTERS = ("requests", "batch_requests", "prompt_tokens", "cached_prompt_tokens",
                 "batch_prompt_tokens", "batch_cached_prompt_tokens", "completion_tokens",
                 "batch_completion_tokens", "cost_usd", "cache_hits", "saved_cost_usd")


def _n(counters: Mapping[str, Any], key: str) -> int:
    value = counters.get(key)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def bill(counters: Mapping[str, Any]) -> dict[str, Any] | None:
    """The bill of a judge's counters (``None``: no judge); what ``summary.json``'s
    ``judge.bill`` holds."""
    if not counters or "requests" not in counters:
        return None
    total, batch = _n(counters, "requests"), _n(counters, "batch_requests")
    realtime = total - batch  # the totals hold the batch lines: their batch_* is a part
    prompt, cached = _n(counters, "prompt_tokens"), _n(counters, "cached_prompt_tokens")
    completion = _n(counters, "completion_tokens")
    cost, saved = counters.get("cost_usd"), counters.get("saved_cost_usd")
    return {
        "requests": {"realtime": realtime, "batch": batch, "total": total},
        "prompt_tokens": {"total": prompt, "cached": cached,
                          "cached_share": round(cached / prompt, 4) if prompt else None},
        "completion_tokens": completion,
        "cost_usd": None if cost is None else round(float(cost), 6),
        "cost_unknown": counters.get("cost_unknown") if cost is None else None,
        "saved_by_verdict_cache": {
            "requests": _n(counters, "cache_hits"),
            "prompt_tokens": _n(counters, "saved_prompt_tokens"),
            "completion_tokens": _n(counters, "saved_completion_tokens"),
            "cost_usd": None if saved is None else round(float(saved), 6)},
    }


def usd(value: float | None) -> str:
    """Dollars as the bill shows them: cents above a dollar, else four decimals."""
    if value is None:
        return "n/a"
    return f"${value:,.2f}" if value >= 1 else f"${value:.4f}"


def bill_line(counters: Mapping[str, Any]) -> str | None:
    """The console's ``judge bill``: requests by mode, prompt tokens with the cached share,
    the cost at the price paid, what the verdict cache saved (``None``: no judge)."""
    b = bill(counters)
    if b is None:
        return None
    req, prompt = b["requests"], b["prompt_tokens"]
    modes = f" ({req['realtime']:,} realtime, {req['batch']:,} batch)" if req["batch"] else ""
    share = prompt["cached_share"]
    cached = f" ({share:.0%} cached)" if share else ""
    if b["cost_usd"] is not None:
        paid = f"{usd(b['cost_usd'])} at the price paid"
    else:
        why = b["cost_unknown"]
        paid = "tokens only, no dollars" + (f" ({why})" if why else "")
    line = (f"{req['total']:,} requests{modes}, {prompt['total']:,} prompt tokens{cached}, "
            f"{b['completion_tokens']:,} completion tokens: {paid}")
    saved = b["saved_by_verdict_cache"]
    if saved["requests"]:
        money = f", {usd(saved['cost_usd'])}" if saved["cost_usd"] is not None and (
            b["cost_usd"] is not None) else ""
        line += (f"; the verdict cache saved {saved['requests']:,} requests "
                 f"({saved['prompt_tokens'] + saved['completion_tokens']:,} tokens{money})")
    return line



def bill_metrics(counters: Mapping[str, Any], prefix: str = "judge/") -> dict[str, float | None]:
    """What the bill adds to the logged metrics: ``<prefix>cached_prompt_share`` (the share
    of prompt tokens the provider served from its cache; 0 when none was paid for, a rerun
    the verdict cache answered, so every run of a config logs the same columns)."""
    b = bill(counters)
    if b is None:
        return {}
    return {f"{prefix}cached_prompt_share": b["prompt_tokens"]["cached_share"] or 0.0}


def variant_bill_metrics(variants: Mapping[str, Any] | None) -> dict[str, float | None]:
    """Each judged variant's bill counters of a run of several, as ``judge/<variant>/<name>``
    (``{}`` for a run of one)."""
    out: dict[str, float | None] = {}
    for name, v in (variants or {}).items():
        stats = v.get("judge_stats") if isinstance(v, Mapping) else None
        if isinstance(stats, Mapping) and stats:
            out.update({f"judge/{name}/{k}": stats[k] for k in BILL_COUNTERS if k in stats})
            out.update(bill_metrics(stats, f"judge/{name}/"))
    return out
