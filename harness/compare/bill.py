"""What each compared run cost: its judge bill from what it logged (``judge/cost_usd``,
``judge/requests``, ``judge/prompt_tokens``, each variant's ``judge/<variant>/...`` of a
run of several), a column of the table and ``table.json``'s ``bill`` of each row."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.core.bill import usd

_SHOWN = ("requests", "batch_requests", "prompt_tokens", "cached_prompt_tokens",
          "completion_tokens", "cost_usd", "saved_cost_usd", "cache_hits")


def run_bill(run: Any) -> dict[str, Any] | None:
    """A run's bill as it logged it (``None``: it asked no judge); ``cost_usd`` ``None``
    with ``cost_unknown`` (a local endpoint, an unpriced model): tokens, no dollars."""
    metrics, tags = run.data.metrics, run.data.tags
    if "judge/requests" not in metrics:
        return None
    out: dict[str, Any] = {k: metrics.get(f"judge/{k}") for k in _SHOWN}
    unknown = tags.get("judge.cost")
    out["cost_unknown"] = unknown.removeprefix("unknown (").rstrip(")") if unknown else None
    variants: dict[str, dict[str, Any]] = {}
    for key, value in metrics.items():
        name, _, counter = key.removeprefix("judge/").rpartition("/")
        if key.startswith("judge/") and name and counter in _SHOWN:
            variants.setdefault(name, {})[counter] = value
    if variants:
        out["variants"] = variants
    return out


def attach(rows: Sequence[dict[str, Any]], runs: Sequence[Any]) -> None:
    """Give each row its run's ``bill``."""
    by_id = {r.info.run_id: r for r in runs}
    for row in rows:
        run = by_id.get(row["run_id"])
        row["bill"] = None if run is None else run_bill(run)


def cell(bill: dict[str, Any] | None) -> str:
    """The table's cell: the cost at the price paid and the requests (tokens, no dollars,
    for a local endpoint); each variant's cost after it for a run of several."""
    if bill is None:
        return ""
    text = _one(bill)
    variants = bill.get("variants") or {}
    if len(variants) > 1:
        text += " = " + "; ".join(f"{n} {_one(v)}" for n, v in variants.items())
    return text


def _one(counters: dict[str, Any]) -> str:
    requests = int(counters.get("requests") or 0)  # batch lines included
    cost = counters.get("cost_usd")
    if cost is not None:
        return f"{usd(cost)} ({requests:,} req)"
    return f"{int(counters.get('prompt_tokens') or 0):,} prompt tok, no $ ({requests:,} req)"


def column(rows: Sequence[dict[str, Any]]) -> list[str] | None:
    """The ``judge cost`` column's cells (``None``: no run asked a judge)."""
    if not any(r.get("bill") for r in rows):
        return None
    return [cell(r.get("bill")) for r in rows]
