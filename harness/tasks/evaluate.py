"""``task=evaluate`` (the default): score context precision, write the rows, log the run."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from harness import __version__
from harness.core.bill import bill
from harness.core.boundary import guarded
from harness.core.errors import ComponentFailed, DatasetError, GateFailed, RunFailed
from harness.core.objectives import job_value
from harness.core.protocols import Parts
from harness.core.redact import register_tree
from harness.core.settings import Job, JobValue
from harness.core.summary import RunSummary
from harness.core.types import RagSample
from harness.metrics.retrieval import dropped_names
from harness.report.bill import print_estimate
from harness.report.console import print_summary
from harness.report.writers import EVALUATE
from harness.run.estimate import ESTIMATE, Estimate, dry_run
from harness.run.gates import broken_limit, fail_under, gate_record
from harness.run.loop import Tally
from harness.run.outputs import finalise, partial_of, streamed, strip_keys, write_json
from harness.run.plan import plan, progress_bar, score, timed_retriever
from harness.run.record import base_tags, finish, tracked
from harness.run.timing import Timed

#: Config subtrees that decide the scores; logged as MLflow params.
PARAM_GROUPS = ("dataset", "retriever", "metric", "run")


Run = Callable[[Any, Parts, Job], tuple[RunSummary, JobValue]]


def _or_dry_run(run: Run) -> Callable[[Any, Parts, Job], tuple[RunSummary | Estimate, JobValue]]:
    """A task's ``run``, or with ``run.dry_run=true`` the bill before the run instead:
    ``estimate.json`` and its lines, nothing sent, nothing tracked; the job's value is NaN
    (``harness.run.estimate``)."""

    @functools.wraps(run)
    def run_or_estimate(task: Any, parts: Parts, job: Job
                        ) -> tuple[RunSummary | Estimate, JobValue]:
        if not parts.settings.dry_run:
            return run(task, parts, job)
        register_tree(job.config)  # secret-named settings masked, as in a run
        estimate = dry_run(parts, job)
        write_json(job.out_dir / ESTIMATE, estimate.as_json())
        print_estimate(estimate.as_json(), job, parts.settings.quiet)
        return estimate, job_value({}, parts.settings.objective)

    return run_or_estimate


class Evaluate:
    """Score every sample with the run's metric (and retrieval metrics beside it)."""

    unused_groups: tuple[str, ...] = ("task",)
    #: Its samples may be scored by parallel workers (``run.shards``, ``harness.shards``).
    shardable = True

    def __init__(self, name: str = "evaluate") -> None:
        self.name = name

    @_or_dry_run
    def run(self, parts: Parts, job: Job) -> tuple[RunSummary, JobValue]:
        """Plan, score into ``samples.jsonl``, summarise; the record path writes the other
        outputs and logs the run. Returns the summary and ``run.objective``'s value (NaN
        when it has none; a tuple when it names several)."""
        register_tree(job.config)  # secret-named settings (retriever.api_key) masked from now
        parts = replace(parts, retriever=(timed := timed_retriever(parts)))  # a timed copy
        batches, total = self.plan(parts, job)
        rows = job.out_dir / "samples.jsonl"
        tags = {**base_tags(job), **_prompt_tags(_described(parts))}
        bar, progress = progress_bar(parts.settings, total)
        try:
            with (tracked(parts, job, tags, lambda: partial_of(rows).unlink(missing_ok=True)),
                  streamed(rows), open(partial_of(rows), "w", encoding="utf-8") as sink):
                timed.mark()
                tally = self.score(parts, job, batches, sink, progress, timed)
        finally:
            if bar is not None:
                bar.close()
        if tally.n_samples == 0:
            parts.tracker.abort("DELETE")
            partial_of(rows).unlink(missing_ok=True)
            raise DatasetError(parts.dataset.source, "contains no records")
        strip_keys(partial_of(rows), self.dropped(tally))  # cut-offs above the depth
        finalise(rows)
        summary = summarise(parts, job, tally, timed)
        failure = broken_limit(tally, job, parts, rows)
        gate = fail_under(summary.metrics(), parts.settings.fail_under, job.out_dir)
        summary.gate = gate_record(parts.settings.fail_under, gate, failure)
        tracked_run = finish(parts, job, summary, EVALUATE, rows=rows, tally=tally,
                             status="FAILED" if failure else "FINISHED")
        print_summary(summary, job, parts.settings.quiet, tracked_run)
        if failure:
            raise RunFailed(failure)
        objective = job_value(summary.metrics(), parts.settings.objective)
        if gate:
            raise GateFailed(gate, objective)
        return summary, objective

    def plan(self, parts: Parts, job: Job) -> tuple[Iterable[list[RagSample]], int]:
        """The batches to score, and how many samples (``harness.shards`` overrides the
        scoring steps to split the run among worker processes)."""
        return plan(parts)

    def score(self, parts: Parts, job: Job, batches: Iterable[list[RagSample]], sink: Any,
              progress: Callable[[int], None] | None, timed: Timed) -> Tally:
        """Score ``batches``, the rows to ``sink`` (``timed``: the run's retriever as timed,
        ``parts.retriever``)."""
        return score(parts, batches, sink, progress)

    def dropped(self, tally: Tally) -> list[str]:
        """Keys to strip from the rows: the cut-offs above the retrieval's depth, which
        leave the summary too (``retrieval_cutoffs``)."""
        if not tally.n_retrieval:
            return []
        return dropped_names(tally.retrieval_ks, tally.retrieval_depth, tally.beyond_depth)


def _described(parts: Parts) -> dict[str, Any]:
    """The metric's ``describe()``, behind the boundary of users' code."""
    got = guarded(f"metric {parts.metric.name}", "describe()", parts.metric.describe)
    if not isinstance(got, dict):
        raise ComponentFailed(f"metric {parts.metric.name}: describe() returned "
                              f"{type(got).__name__}; expected a dict")
    return dict(got)


def _prompt_tags(described: dict[str, Any]) -> dict[str, str]:
    prompt = described.get("prompt")
    if prompt is None:
        return {}
    return {"prompt.sha256": str(prompt["sha256"]), "prompt.version": str(prompt["version"])}


def summarise(parts: Parts, job: Job, tally: Tally, timed: Timed) -> RunSummary:
    """The run's ``RunSummary``: the tally's numbers and every part's provenance (the metric
    described after scoring: the server said which model answered)."""
    described = _described(parts)
    judge, prompt = described.pop("judge", None), described.pop("prompt", None)
    members = described.pop("variants", None) if tally.variants else None
    used = {g: job.config[g] for g in (*PARAM_GROUPS, "judge") if g in job.config}
    if judge is None:
        used.pop("judge", None)
    core = tally.summary()
    success = core.pop("success_rate", _NONE)
    summary = RunSummary(**core, options=job.choices, config=used,
                         dataset={**parts.dataset.describe(), **tally.id_counts(),
                                  "sha256": parts.dataset.sha256()},
                         retriever=parts.retriever.describe(), judge=judge, prompt=prompt,
                         described=described, tracking=parts.tracker.describe(),
                         harness_version=__version__, output_dir=str(job.out_dir),
                         judge_stats=guarded(f"metric {parts.metric.name}", "stats()",
                                             parts.metric.stats))
    summary.metric = job.choices.get("metric", parts.metric.name)
    if success is not _NONE:
        summary.success_rate = {"value": success}
    summary.timing = timed.timing(summary.retriever, tally.duration_s, judge is not None)
    if tally.variants:
        summary.variants = variant_section(tally, members, parts)
    return summary


def variant_section(tally: Tally, described: Any, parts: Parts) -> dict[str, Any]:
    """``summary.json``'s ``variants``: each listed variant's numbers, its judge and prompt
    (judged ones) and its own judge counters."""
    stats = {name: dict(guarded(f"metric {name}", "stats()", m.stats))
             for name, m in parts.members}
    section: dict[str, Any] = {}
    for name, scores in tally.variants.items():
        entry = scores.variant_summary()
        own = (described or {}).get(name)
        if isinstance(own, dict):
            entry.update({k: own[k] for k in ("judge", "prompt") if own.get(k) is not None})
        if stats.get(name):
            entry["judge_stats"] = stats[name]
            entry["bill"] = bill({**(own or {}).get("judge", {}), **stats[name]})
        section[name] = entry
    return section


_NONE: Any = object()
