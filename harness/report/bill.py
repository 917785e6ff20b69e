"""What a judged run costs, on the console and in report.html: the bill after the run (the
``judge bill`` rows, "What it cost"; the numbers are ``harness.core.bill``'s, as
``summary.json``'s ``judge.bill`` holds them) and before it (``run.dry_run``'s lines)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.core.bill import bill, bill_line, usd
from harness.core.settings import Job


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


#: report.html's "What it cost" (rendered with autoescaping by ``harness.report.html``).
TEMPLATE = """<h2 id="cost">What it cost</h2>
<table class="summary cost">
{% for key, value in rows %}<tr><th>{{ key }}</th><td>{{ value }}</td></tr>
{% endfor %}</table>
{% if variants %}<table class="summary cost-variants"><tr><th>variant</th><th>requests</th>
<th>prompt tokens</th><th>completion tokens</th><th>cost</th><th>saved by the cache</th></tr>
{% for v in variants %}<tr><th>{{ v[0] }}</th>{% for cell in v[1:] %}<td>{{ cell }}</td>
{% endfor %}</tr>
{% endfor %}</table>{% endif %}
"""


def cost_section(judge: Mapping[str, Any] | None,
                 variants: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """What report.html's "What it cost" shows (``None``: no judge, no section): the bill's
    rows, and a row per variant of a run of several."""
    b = bill(judge or {})
    if b is None:
        return None
    rows = [(k, v) for k, v in _cells(b, (judge or {}).get("model")).items()]
    per = []
    for name, v in (variants or {}).items():
        own = bill(v.get("judge_stats") or {}) if isinstance(v, dict) else None
        if own is not None and len(variants or {}) > 1:
            cells = _cells(own, None)
            per.append((name, cells["requests"], cells["prompt tokens"],
                        cells["completion tokens"], cells["cost"], cells["saved by the cache"]))
    return {"rows": rows, "variants": per}


def _cells(b: Mapping[str, Any], model: Any) -> dict[str, str]:
    req, prompt, saved = b["requests"], b["prompt_tokens"], b["saved_by_verdict_cache"]
    share = prompt["cached_share"]
    if b["cost_usd"] is not None:
        paid = f"{usd(b['cost_usd'])} at the price paid" + (f" ({model})" if model else "")
    else:
        paid = "tokens only, no dollars" + (f" ({b['cost_unknown']})" if b["cost_unknown"]
                                           else "")
    money = f", {usd(saved['cost_usd'])}" if saved["cost_usd"] is not None and (
        b["cost_usd"] is not None) else ""
    return {
        "requests": f"{req['total']:,} ({req['realtime']:,} realtime, {req['batch']:,} batch)",
        "prompt tokens": f"{prompt['total']:,}" + (f" ({share:.0%} served from the "
                                                   "provider's prompt cache)" if share else ""),
        "completion tokens": f"{b['completion_tokens']:,}",
        "cost": paid,
        "saved by the cache": (f"{saved['requests']:,} requests, "
                               f"{saved['prompt_tokens'] + saved['completion_tokens']:,} "
                               f"tokens{money}" if saved["requests"] else "nothing (no reuse)"),
    }


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
    if e.get("in_running_batches"):
        repeats += f", {e['in_running_batches']:,} in running batches"
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
