"""``run.dry_run=true``: the bill before the run.

The job runs as far as a judge request: composed, the dataset read and checked, the
retriever run, and every judge request built as the real run would build it, each looked up
in the verdict cache (only read). No request is sent, the endpoint is not contacted, no
tracked run is opened, no row is written: ``estimate.json`` in the run's folder says what the
run would ask (``requests``, ``cached_requests``), its tokens, its cost at ``judge.prices``
in realtime and in batch, and its expected time at the judge's concurrency.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.boundary import guarded
from harness.core.protocols import Parts
from harness.core.settings import Job
from harness.judges.checks import BATCH_DISCOUNT
from harness.run.plan import plan

#: The file a dry run writes in the run's folder (a sweep's folder gets the jobs' total).
ESTIMATE = "estimate.json"
#: Seconds a request is assumed to take when the verdict cache has no run to measure.
ASSUMED_LATENCY_S = 2.0
#: Counts that add up over variants and over a sweep's jobs.
ADDED = ("requests", "cached_requests", "repeated_requests", "billed_requests",
         "in_running_batches", "prompt_tokens", "completion_tokens")


@dataclass
class Estimate:
    """``estimate.json`` of one job (a ``Summary``: nothing of it is tracked)."""

    metric: str
    n_samples: int
    variants: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    options: dict[str, str] = field(default_factory=dict)
    dataset: dict[str, Any] = field(default_factory=dict)
    output_dir: str = ""

    @property
    def total(self) -> dict[str, Any]:
        """The variants added up (``cost_usd`` ``None`` when any variant's is unknown)."""
        return total_of(list(self.variants.values()))

    def as_json(self) -> dict[str, Any]:
        """``estimate.json``: the totals first, then each variant's."""
        return {"dry_run": True, "metric": self.metric, "n_samples": self.n_samples,
                **self.total, "variants": self.variants, "notes": self.notes,
                "options": self.options, "dataset": self.dataset, "output_dir": self.output_dir}

    def params(self) -> dict[str, str]:
        """Nothing is tracked."""
        return {}

    def metrics(self) -> dict[str, float | None]:
        """Nothing is tracked."""
        return {}

    def tags(self) -> dict[str, str]:
        """Nothing is tracked."""
        return {}


def total_of(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts, tokens, costs and times of ``parts`` (variants, or a sweep's jobs) added up:
    a cost is unknown (``None``) when one part's is and another's is known; one of no
    part is 0."""
    out: dict[str, Any] = {k: sum(int(p.get(k) or 0) for p in parts) for k in ADDED}
    costs = [p.get("cost_usd") for p in parts if p.get("billed_requests")]
    known = [c for c in costs if c is not None]
    if len(known) < len(costs):
        out["cost_usd"] = None
        out["cost_unknown"] = next(p.get("cost_unknown") for p in parts
                                   if p.get("billed_requests") and p.get("cost_usd") is None)
    else:
        out["cost_usd"] = {mode: round(sum(c[mode] for c in known), 6)
                           for mode in ("realtime", "batch")}
    out["expected_time_s"] = round(sum(float(p.get("expected_time_s") or 0) for p in parts), 1)
    return out


def priced(report: dict[str, Any]) -> dict[str, Any]:
    """A judge's ``report`` with its cost at ``judge.prices`` in realtime and in batch
    (``None``, with ``cost_unknown``, for a local endpoint or an unpriced model) and its
    expected time."""
    out = {k: v for k, v in report.items() if k not in ("prices", "observed")}
    prices = report.get("prices")
    if prices is None:
        out["cost_usd"] = None
    else:
        realtime = cost(report["prompt_tokens"], report["completion_tokens"], prices)
        factor = prices.get("batch", BATCH_DISCOUNT)  # the batch price, a share of realtime
        out["cost_usd"] = {"realtime": round(realtime, 6),
                           "batch": round(realtime * factor, 6)}
        out["batch_factor"] = factor
        out["prices"] = prices
    out.update(expected_time(report))
    return out


def cost(prompt_tokens: int, completion_tokens: int, prices: dict[str, float]) -> float:
    """USD of the tokens at ``prices`` (USD per million, ``input`` and ``output``; the
    provider's prompt caching is not assumed: every prompt token at ``input``)."""
    return (prompt_tokens * prices.get("input", 0.0)
            + completion_tokens * prices.get("output", 0.0)) / 1e6


def expected_time(report: dict[str, Any]) -> dict[str, Any]:
    """The requests to send over the rate the cache's latest run reached, else over the
    judge's concurrency at ``ASSUMED_LATENCY_S`` a request; and how it was reckoned."""
    billed, observed = report["billed_requests"], report.get("observed")
    if observed and observed["seconds"] > 0:
        rate = observed["requests"] / observed["seconds"]
        how = (f"{rate:.3g} requests/s, as the verdict cache's latest run of this variant "
               f"stored its replies ({observed['requests']} in {observed['seconds']:g} s)")
        return {"expected_time_s": round(billed / rate, 1), "time_by": how}
    slots = max(1, int(report.get("max_concurrency") or 1))
    how = (f"{slots} requests in flight (judge.max_concurrency), {ASSUMED_LATENCY_S:g} s "
           "a request (assumed)")
    return {"expected_time_s": round(math.ceil(billed / slots) * ASSUMED_LATENCY_S, 1),
            "time_by": how}


def dry_run(parts: Parts, job: Job) -> Estimate:
    """Run the job up to its judge requests, sending none; what it would cost."""
    metric = parts.metric
    judges = metric.judges()
    runs = {name: dry() for name, judge in judges.items() if (dry := judge.go_dry) is not None}
    estimate = Estimate(job.choices.get("metric", metric.name), 0, options=dict(job.choices),
                        dataset=parts.dataset.describe(), output_dir=str(job.out_dir))
    if runs:  # read, checked and retrieved as the real run does, then every request built
        batches, _ = plan(parts)
        for batch in batches:
            estimate.n_samples += len(batch)
            guarded(f"metric {metric.name}", "score_batch()",
                    lambda: metric.score_batch(batch))  # noqa: B023
    else:
        limit, size = parts.settings.limit, parts.batch_size
        estimate.n_samples = sum(len(b) for b in parts.dataset.batches(size, limit))
    for name, run in runs.items():
        estimate.variants[name] = priced(run.report())
    estimate.notes += running_batch_notes(estimate.variants)
    offline = sorted(set(judges) - set(runs))
    if offline:
        estimate.notes.append(f"{', '.join(offline)}: the judge answers offline "
                              "(judge=fixture): no request, nothing to pay")
    if not judges:
        estimate.notes.append(f"metric {estimate.metric} asks no judge: no request, "
                              "nothing to pay")
    return estimate


def running_batch_notes(variants: dict[str, dict[str, Any]]) -> list[str]:
    """What becomes of the requests an earlier run sent in Batch API batches still running:
    waited for (``judge.batch=true``), or paid for again (realtime)."""
    notes = []
    for name, v in variants.items():
        ids = v.get("running_batches") or []
        if not ids:
            continue
        listed = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
        which = f"{name}: " if len(variants) > 1 else ""
        if v.get("in_running_batches"):
            notes.append(
                f"{which}{v['in_running_batches']:,} request(s) are in Batch API batches an "
                f"earlier run created and that are still running ({listed}): the run waits "
                "for them and sends a request again only if its batch fails, expires or is "
                "cancelled; they are not among the requests to send, and the provider bills "
                "them as those batches finish")
        elif v.get("billed_though_in_batches"):
            notes.append(
                f"{which}{v['billed_though_in_batches']:,} request(s) are in Batch API batches "
                f"an earlier run created and that are still running ({listed}): this realtime "
                "run sends and pays for them again; with judge.batch=true it would wait for "
                "them instead")
    return notes


def sweep_estimate(sweep_dir: Path) -> dict[str, Any]:
    """A dry sweep's ``estimate.json``: each job's totals (by its folder) and theirs added
    up. Each job is counted as if it ran alone: a request two jobs would both make is
    counted in each, though the verdict cache pays it once (the total is an upper bound)."""
    import json

    jobs: dict[str, dict[str, Any]] = {}
    for path in sorted(sweep_dir.glob(f"*/**/{ESTIMATE}")):
        try:
            data = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            continue  # a job that failed before its estimate: its error.txt says why
        folder = path.parent.relative_to(sweep_dir).as_posix()
        jobs[folder] = {k: data.get(k) for k in (
            "metric", "n_samples", *ADDED, "cost_usd", "cost_unknown", "expected_time_s")}
    return {"dry_run": True, "jobs": jobs, "total": total_of(list(jobs.values())),
            "notes": ["each job counted as if it ran alone: a request two jobs share is "
                      "paid once (the verdict cache), so the total is an upper bound"]}
