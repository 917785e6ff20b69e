"""``task=evaluate`` (the default): score context precision, write the rows, log the run."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from harness import __version__
from harness.core.errors import ConfigError, DatasetError, GateFailed, RunFailed
from harness.core.objectives import job_value
from harness.core.objectives import parse as parse_objective
from harness.core.protocols import Parts
from harness.core.settings import Job, JobValue, RunSettings
from harness.core.types import RagSample
from harness.metrics.retrieval import dropped_names
from harness.report import describe_run, render_summary
from harness.run.gates import fail_under
from harness.run.loop import Tally, evaluate
from harness.run.outputs import finalise, partial_of, streamed, strip_keys
from harness.run.record import base_tags, finish, flatten, judge_tags, tracked
from harness.run.timing import TIMING_METRICS, Timed, retriever_metrics

#: Config subtrees that decide the scores; logged as MLflow params.
PARAM_GROUPS = ("dataset", "retriever", "metric", "run")


class Evaluate:
    """Score every sample with the run's metric (and retrieval metrics beside it)."""

    unused_groups = ("task",)

    def __init__(self, name: str = "evaluate") -> None:
        self.name = name

    def run(self, parts: Parts, job: Job) -> tuple[dict[str, Any], JobValue]:
        """Evaluate, write the outputs into ``job.out_dir``, log the run.

        Returns:
            The summary and the value of ``run.objective`` (NaN when it has none; a tuple
            when it names several).
        """
        metric_name = job.choices.get("metric", parts.metric.name)
        timed = parts.retriever = timed_retriever(parts)
        batches, total = self.plan(parts, job)
        described = parts.metric.describe()
        tags = base_tags(job)
        if "prompt" in described:
            tags["prompt.sha256"] = described["prompt"]["sha256"]
            tags["prompt.version"] = described["prompt"]["version"]

        samples_path = job.out_dir / "samples.jsonl"
        partial = partial_of(samples_path)
        bar, progress = _progress(parts.settings, total)
        try:
            with (
                tracked(parts, job, tags, lambda: partial.unlink(missing_ok=True)),
                streamed(samples_path),
                open(partial, "w", encoding="utf-8") as sink,
            ):
                timed.mark()
                tally = self.score(parts, job, batches, sink, progress)
        finally:
            if bar is not None:
                bar.close()
        if tally.n_samples == 0:
            parts.tracker.abort("DELETE")
            partial.unlink(missing_ok=True)
            raise DatasetError(parts.dataset.source, "contains no records")
        # cut-offs above the retrieval's depth leave the rows too (summary retrieval_cutoffs)
        strip_keys(partial, self.dropped(tally))
        finalise(samples_path)

        sha = parts.dataset.sha256()
        used = {g: job.config[g] for g in (*PARAM_GROUPS, "judge") if g in job.config}
        if "judge" not in described:
            used.pop("judge", None)
        stats = parts.metric.stats()
        summary: dict[str, Any] = {
            **tally.summary(),
            "metric": metric_name,
            "options": job.choices,
            "config": used,
            "dataset": {**parts.dataset.describe(), "sha256": sha},
            "retriever": parts.retriever.describe(),
            **described,
            "tracking": parts.tracker.describe(),
            "harness_version": __version__,
            "output_dir": str(job.out_dir),
        }
        artifacts: list[Path] = []
        summary["timing"] = timed.timing(summary["retriever"], tally.duration_s,
                                         "judge" in described)
        if parts.tracker.keeps_artifacts:
            # drawn while the MLflow helper is still importing: no added wall time
            from harness.report.plots import write_plots

            artifacts += write_plots(tally, metric_name, job.out_dir / "plots")
        if "judge" in described:  # described again: the server said which model answered
            summary["judge"] = {**parts.metric.describe()["judge"], **stats}
            tags.update(judge_tags(summary["judge"]))
        artifacts += parts.metric.write_artifacts(job.out_dir)
        if parts.settings.report:
            from harness.report.write import report_of_run

            artifacts += report_of_run(job.out_dir, summary, tally, artifacts)

        params: dict[str, str] = {}
        for group, tree in used.items():
            params.update(flatten(tree, f"{group}.", elsewhere=("judge", "prompt")))
        if "prompt" in described:
            params["prompt.version"] = described["prompt"]["version"]
            params["prompt.mode"] = described["prompt"]["mode"]
        metrics: dict[str, Any] = {
            "mean": tally.mean,
            "n_samples": tally.n_samples,
            "n_scored": tally.n_scored,
            "n_unscored": tally.n_unscored,
            "duration_s": tally.duration_s,
            "success_rate": summary.get("success_rate"),
        }
        metrics.update({f"judge/{k}": v for k, v in stats.items()})
        metrics.update({k: v for k, v in summary.get("retrieval", {}).items() if k != "n_queries"})
        metrics.update({k: summary["timing"][k] for k in TIMING_METRICS if k in summary["timing"]})
        metrics.update(retriever_metrics(summary["retriever"]))
        tags = {**tags, "dataset.sha256": sha, "mlflow.note.content": describe_run(summary)}
        if "retrieval_cutoffs" in summary:
            cut = summary["retrieval_cutoffs"]
            metrics["retrieval_depth"] = cut["depth"]
            for what in ("dropped", "logged"):
                if cut[what]:  # cut-offs above the depth: not logged, or logged but flagged
                    tags[f"retrieval.above_depth.{what}"] = ",".join(cut[what])
        failure = broken_limit(tally, job, parts, samples_path)
        gate = fail_under(tally.mean, parts.settings.fail_under, job.out_dir)
        if parts.settings.fail_under is not None:
            summary["gate"] = {"fail_under": parts.settings.fail_under, "passed": gate is None}
            tags["gate.fail_under"] = "failed" if gate else "passed"
        tracked_run = finish(parts, job, summary, rows=samples_path, params=params,
                             metrics=metrics, tags=tags, artifacts=artifacts,
                             status="FAILED" if failure else "FINISHED")
        if not parts.settings.quiet and job.multirun:  # the sweep's summary comes at the end
            from harness.report.console import job_line

            print(job_line(job.job_num, job.run_name, summary, job.out_dir, tracked_run))
        elif not parts.settings.quiet:
            print(render_summary(summary, tracked_run))
        if failure:
            raise RunFailed(failure)
        objective = job_value(metrics, parts.settings.objective)
        if gate:
            raise GateFailed(gate, objective)
        return summary, objective

    def plan(self, parts: Parts, job: Job) -> tuple[Iterable[list[RagSample]], int]:
        """The batches to score, and how many samples (``harness.shards`` overrides the
        scoring steps to split the run among worker processes)."""
        return plan(parts)

    def score(self, parts: Parts, job: Job, batches: Iterable[list[RagSample]], sink: Any,
              progress: Callable[[int], None] | None) -> Tally:
        """Score ``batches``, the rows to ``sink``."""
        return score(parts, batches, sink, progress)

    def dropped(self, tally: Tally) -> list[str]:
        """Keys to strip from the rows: the cut-offs above the retrieval's depth, which
        leave the summary too (``retrieval_cutoffs``)."""
        if not tally.n_retrieval:
            return []
        return dropped_names(tally.retrieval_ks, tally.retrieval_depth, tally.beyond_depth)


def broken_limit(tally: Tally, job: Job, parts: Parts, rows: Path) -> str | None:
    """Why the finished run fails (exit 3, outputs kept), or ``None``: nothing scored, or
    more unscored than ``run.max_unscored_frac``."""
    frac = parts.settings.max_unscored_frac
    if frac is None and tally.n_scored == 0:
        return nothing_scored(tally, job, parts.metric.name, rows)
    if frac is not None and tally.n_unscored > frac * tally.n_samples:
        return (
            f"{tally.n_unscored} of {tally.n_samples} samples are unscored, more than "
            f"run.max_unscored_frac={frac}; see {rows}"
        )
    return None


def nothing_scored(tally: Tally, job: Job, metric: str, rows: Path) -> str:
    """Why a run that scored no sample failed: the commonest reason, the mapping behind it."""
    reason, count = tally.reasons.most_common(1)[0]
    line = (
        f"none of the {tally.n_samples} samples was scored by {metric}: {reason} "
        f"({count} of {tally.n_samples})"
    )
    missing = reason.partition("missing field")[2].lstrip("s ").split(", ") if (
        reason.startswith("missing field")
    ) else []
    fields = job.config.get("dataset", {}).get("fields") or {}
    mapped = [f"dataset.fields.{k}={v}" for k, v in fields.items() if v and k in missing]
    if mapped:
        line += f"; you mapped {', '.join(mapped)}: no record has that column"
    elif missing:
        line += f"; map the column that holds it with dataset.fields.{missing[0]}=COLUMN"
    return (
        f"{line}; rows with each reason are in {rows} (set run.max_unscored_frac=1 to "
        "accept a run with nothing scored)"
    )


def _progress(settings: RunSettings, total: int) -> tuple[Any, Callable[[int], None] | None]:
    if settings.quiet or not settings.progress:
        return None, None
    from tqdm import tqdm

    if settings.limit is not None:
        total = min(total, settings.limit)
    bar = tqdm(
        total=total, unit=" samples", delay=1.0, file=sys.stderr, desc="scoring",
        dynamic_ncols=True, smoothing=0.1,
    )
    return bar, bar.update


def timed_retriever(parts: Parts) -> Timed:
    """The run's retriever, timed (``harness.run.timing``) when it searches."""
    inner = parts.retriever
    if isinstance(inner, Timed):
        return inner
    return Timed(inner, parts.settings.retrieval_batch_size if inner.searches else None)


def prepare_retriever(parts: Parts) -> None:
    """Give the retriever the dataset's corpus to index (corpus retrievers need one)."""
    corpus = parts.dataset.corpus()
    if parts.retriever.needs_corpus and corpus is None:
        inner = parts.retriever.inner if isinstance(parts.retriever, Timed) else parts.retriever
        raise ConfigError(
            f"retriever {type(inner).__name__} searches a corpus, but the dataset "
            f"({parts.dataset.describe().get('format')}) has none; use a BEIR dataset "
            "(dataset=beir dataset.path=DIR, or dataset=scifact) or retriever=precomputed"
        )
    parts.retriever.prepare(corpus)


def _load_for_judging(parts: Parts) -> list[RagSample]:
    """Read and validate every record, and check the endpoint, before the first judge call."""
    samples = parts.retriever.retrieve_batch(list(parts.dataset.samples(parts.settings.limit)))
    if not samples:
        raise DatasetError(parts.dataset.source, "contains no records")
    for field in sorted(parts.metric.requires):
        if all(getattr(s, field) is None for s in samples):
            raise ConfigError(
                f"metric {parts.metric.name} needs the field '{field}', which no record of "
                f"{parts.dataset.source} has; map your column with "
                f"dataset.fields.{field}=COLUMN or choose another metric"
            )
    parts.metric.preflight()
    return samples


def plan(parts: Parts) -> tuple[Iterable[list[RagSample]], int]:
    """Prepare the retriever and the batches to score, with a count for progress.

    Metrics that ``prevalidate`` (the judged ones) get the whole dataset read, validated
    and retrieved first, and the endpoint checked, before any call; the others stream.
    """
    prepare_retriever(parts)
    size = parts.settings.batch_size
    if parts.metric.prevalidate:
        samples = _load_for_judging(parts)
        return (samples[i : i + size] for i in range(0, len(samples), size)), len(samples)
    batches = map(parts.retriever.retrieve_batch, parts.dataset.batches(size, parts.settings.limit))
    return batches, parts.dataset.estimate_count()


def score(
    parts: Parts,
    batches: Iterable[list[RagSample]],
    sink: Any,
    progress: Callable[[int], None] | None = None,
) -> Tally:
    """Score ``batches`` with the run's metric and retrieval metrics; rows go to ``sink``."""
    min_grade = parts.settings.retrieval_min_grade
    if min_grade is None:
        min_grade = parts.dataset.min_grade
    return evaluate(batches, parts.metric, sink, progress, parts.settings.retrieval_ks, min_grade,
                    row_text_chars=parts.settings.row_text_chars,
                    beyond_depth=parts.settings.retrieval_beyond_depth or
                    [o.name for o in parse_objective(parts.settings.objective)])
