"""What a judged run costs, in words: the bill after the run (the console's ``judge bill``
row, report.html's "What it cost", ``summary.json``'s ``judge.bill``) and before it
(``run.dry_run``'s lines).

The bill reads the judge's counters as ``summary.json`` holds them (``JudgeStats``):
requests sent realtime (``requests``) and in batches (``batch_requests``, when the judge
batches), prompt tokens with the share the provider served from its prompt cache, the
cost at the price actually paid (``cost_usd``: realtime, batch and cached input each at its
own price) and what the verdict cache saved (``cache_hits``, ``saved_*``). A local endpoint
has no per-token price: its bill is tokens, no dollars.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.core.settings import Job


def _n(counters: Mapping[str, Any], key: str) -> int:
    value = counters.get(key)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def bill(counters: Mapping[str, Any]) -> dict[str, Any] | None:
    """The bill of a judge's counters (``None``: no judge); what ``summary.json``'s
    ``judge.bill`` holds."""
    if not counters or "requests" not in counters:
        return None
    realtime, batch = _n(counters, "requests"), _n(counters, "batch_requests")
    prompt = _n(counters, "prompt_tokens") + _n(counters, "batch_prompt_tokens")
    cached = _n(counters, "cached_prompt_tokens") + _n(counters, "batch_cached_prompt_tokens")
    completion = _n(counters, "completion_tokens") + _n(counters, "batch_completion_tokens")
    cost, saved = counters.get("cost_usd"), counters.get("saved_cost_usd")
    return {
        "requests": {"realtime": realtime, "batch": batch, "total": realtime + batch},
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


def bill_rows(judge: Mapping[str, Any] | None,
              variants: Mapping[str, Any] | None = None) -> list[tuple[str, str]]:
    """``judge bill`` rows: the run's, then each variant's of a run of several."""
    line = bill_line(judge or {})
    if line is None:
        return []
    rows = [("judge bill", line)]
    for name, v in (variants or {}).items():
        own = bill_line(v.get("judge_stats") or {}) if isinstance(v, dict) else None
        if own is not None and len(variants or {}) > 1:
            rows.append(("judge bill", f"{name}: {own}"))
    return rows


def estimate_lines(estimate: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What a dry run prints: requests, tokens, cost and time, in total and per variant."""
    rows = [("dry run", f"{estimate['metric']} on {estimate['n_samples']:,} samples: "
                        "no judge request sent, nothing tracked")]
    variants = estimate.get("variants") or {}
    for name, v in variants.items():
        rows.append(("variant" if len(variants) > 1 else "judge", (
            f"{name}: " if len(variants) > 1 else "") + f"{v['model']}: {_needs(v)}"))
        rows.append(("tokens", f"prompt: {v['prompt_tokens_by']}; completion: "
                               f"{v['completion_tokens_by']}"))
        if v["billed_requests"]:
            rows.append(("time", v["time_by"]))
    if len(variants) != 1:
        rows.append(("total", _needs(estimate)))
    rows += [("note", n) for n in estimate.get("notes") or []]
    rows.append(("estimate", f"{estimate['output_dir']}/estimate.json"))
    return rows


def _needs(e: Mapping[str, Any]) -> str:
    """One estimate's requests, tokens, cost and time in a line."""
    cached = f", {e['cached_requests']:,} in the verdict cache" if e["cached_requests"] else ""
    repeats = (f", {e['repeated_requests']:,} repeats" if e.get("repeated_requests") else "")
    cost = e.get("cost_usd")
    if not e["billed_requests"]:
        money = "nothing to pay"
    elif cost is not None:
        money = f"~{usd(cost['realtime'])} realtime, ~{usd(cost['batch'])} batch"
    else:
        why = e.get("cost_unknown")
        money = "no dollars" + (f" ({why})" if why else "")
    time = f", ~{e['expected_time_s']:g} s" if e["billed_requests"] else ""
    return (f"{e['requests']:,} requests{cached}{repeats}: {e['billed_requests']:,} to send, "
            f"{e['prompt_tokens']:,} prompt + ~{e['completion_tokens']:,} completion tokens, "
            f"{money}{time}")


def print_estimate(estimate: Mapping[str, Any], job: Job, quiet: bool) -> None:
    """A dry run's lines on the console (a sweep's job: one line; the sweep ends with
    the total)."""
    if quiet:
        return
    if job.multirun:
        print(f"job {job.job_num} {job.run_name}: dry run: {_needs(estimate)}, "
              f"estimate in {job.out_dir}")
        return
    rows = estimate_lines(estimate)
    width = max(len(k) for k, _ in rows)
    print("\n".join(f"  {k:<{width}}  {v}" for k, v in rows))


def sweep_estimate_lines(estimate: Mapping[str, Any], where: str) -> str:
    """The end of a dry sweep: each job's line, and the total."""
    jobs = estimate["jobs"]
    lines = [f"dry sweep     {len(jobs)} job(s), no judge request sent, nothing tracked"]
    lines += [f"  job {name}: {_needs(e)}" for name, e in jobs.items()]
    lines.append(f"total         {_needs(estimate['total'])}")
    lines += [f"note          {n}" for n in estimate.get("notes") or []]
    lines.append(f"estimate      {where}")
    return "\n".join(lines)
