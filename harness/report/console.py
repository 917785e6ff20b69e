"""A sweep's console summary: its jobs ranked by the objective, and the best one, printed
once after all jobs (read from the jobs' folders, so it needs no tracker)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core.metric_names import HEADLINE
from harness.core.objectives import (
    Objective,
    pareto_front,
    parse,
    rank_key,
    sort_key,
    with_headline,
)
from harness.core.redact import redact
from harness.core.secrets import reveal
from harness.core.settings import Job
from harness.core.summary import PPI, RunSummary, variants_with_headlines
from harness.core.types import TrackedRun
from harness.report.bill import bill_rows
from harness.report.confidence_lines import confidence_rows
from harness.report.first_screen import report_line
from harness.run.gates import gate_line
from harness.run.timing import latency_line


@dataclass
class JobResult:
    """One job of a sweep, as its folder tells it."""

    num: int | None
    overrides: list[str]
    folder: Path
    value: float | None = None
    n_unscored: float | None = None
    error: str | None = None
    values: tuple[float | None, ...] = ()
    pareto: bool = False
    #: The logged metric that is the job's headline (``ppi_mean`` with human labels).
    headline: str | None = None


def objective_value(summary: RunSummary, objective: str) -> float | None:
    """The logged metric ``objective`` of a run (``mean``, ``ndcg_at_10``,
    ``retrieval_p95_ms``, ``judge/requests``, ``retriever/ann_recall``, …), or ``None``."""
    value = summary.metrics().get(objective)
    if value is None and objective in summary.timing:
        value = summary.timing[objective]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def _load_yaml(path: Path) -> Any:
    import yaml

    try:
        return yaml.safe_load(path.read_text("utf-8"))
    except (OSError, yaml.YAMLError):
        return None


def read_jobs(sweep_dir: Path, objective: str) -> list[JobResult]:
    """Every job folder under ``sweep_dir`` (those with Hydra's ``.hydra/overrides.yaml``),
    ranked by the first of the objectives (``ndcg_at_10,-retrieval_p95_ms``) in its
    direction; with several, the jobs on their Pareto front are marked."""
    from harness.run.outputs import FAILED

    jobs, summaries = [], []
    for overrides_file in sorted(sweep_dir.glob("**/.hydra/overrides.yaml")):
        folder = overrides_file.parent.parent
        overrides = _load_yaml(overrides_file)
        hydra = _load_yaml(folder / ".hydra" / "hydra.yaml") or {}
        num = (hydra.get("hydra") or {}).get("job", {}).get("num")
        job = JobResult(int(num) if isinstance(num, int) else None,
                        [str(o) for o in overrides or []], folder)
        try:
            data = json.loads((folder / "summary.json").read_text("utf-8"))
        except (OSError, ValueError):
            error = folder / FAILED
            job.error = error.read_text("utf-8").strip() if error.is_file() else "no summary.json"
        else:
            summary = RunSummary.from_json(data)
            job.headline = str(summary.headline()["name"])
            summaries.append((job, summary))
            job.n_unscored = float(summary.n_unscored)
        jobs.append(job)
    objectives = parse(ranked_by(jobs, objective))
    for job, summary in summaries:
        job.values = tuple(objective_value(summary, o.name) for o in objectives)
        job.value = job.values[0]
    if len(objectives) > 1:
        for i in pareto_front([j.values for j in jobs], objectives):
            jobs[i].pareto = True
    rest = objectives[1:]
    jobs.sort(key=lambda j: rank_key(j.value, j.n_unscored, j.num, objectives[0].maximize,
                                     sort_key(j.values[1:] or (None,) * len(rest), rest)))
    return jobs


def ranked_by(jobs: Sequence[JobResult], objective: str) -> str:
    """``objective`` with ``headline`` (``run.objective``'s default) replaced by the metric
    that is every finished job's headline (``ppi_mean`` when all have human labels; ``mean``
    when some have none)."""
    return with_headline(objective, [j.headline for j in jobs if j.headline is not None])


def headline_note(jobs: Sequence[JobResult], objective: str) -> list[str]:
    """The line under a sweep's first when ``objective`` names ``headline`` and the jobs'
    headlines differ: some have human labels, some not."""
    heads = sorted({j.headline for j in jobs if j.headline is not None})
    if len(heads) < 2 or HEADLINE not in {o.name for o in parse(objective)}:
        return []
    return [f"              the jobs' headlines differ ({', '.join(heads)}: not every job has "
            "human labels), so the judge's mean ranks them all"]


def _shown(job: JobResult, swept: list[str] | None) -> str:
    keep = [o for o in job.overrides
            if not swept or o.partition("=")[0].lstrip("+~") in swept]
    return reveal(redact(" ".join(keep))) or "(no overrides)"


def _fmt(value: float | None) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.4f}"


def render(jobs: list[JobResult], objective: str, sweep_dir: Path,
           swept: list[str] | None = None, tracker_lines: Sequence[str] = ()) -> str:
    """The ranked table and the best job, as printed at the end of ``python -m harness -m``;
    with several objectives, a column each and the Pareto front marked ``*``; then
    ``tracker_lines``, the sweep tracker's own (``SweepTracker.console_lines``)."""
    objectives = parse(ranked_by(jobs, objective))
    first = objectives[0]
    multi = len(objectives) > 1
    scored = [j for j in jobs if j.value is not None and not math.isnan(j.value)]
    order = "highest" if first.maximize else "lowest"
    ties = "".join(f"{o.name}, " for o in objectives[1:])
    lines = [f"sweep         {len(jobs)} job(s) in {sweep_dir}, ranked by {first.name} "
             f"({order} first; ties: {ties}fewer unscored, then the earlier job)"]
    lines += headline_note(jobs, objective)
    if multi:
        lines.append(f"              * on the Pareto front of {_words(objectives)}")
    widths = [max(10, len(o.name)) for o in objectives]
    names = "  ".join(f"{o.name:>{w}}" for o, w in zip(objectives, widths, strict=True))
    lines.append(f"  {'rank':>4}  {names}  {'unscored':>8}  {'job':>4}  "
                 f"{'front  ' if multi else ''}overrides")
    for rank, job in enumerate(jobs, 1):
        values = job.values or (job.value,) + (None,) * (len(objectives) - 1)
        cells = [_fmt(v) for v in values]
        place = str(rank)
        if job.value is None or math.isnan(job.value):
            cells[0], place = ("failed" if job.error else "n/a"), "-"
        shown = "  ".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True))
        unscored = "" if job.n_unscored is None else f"{job.n_unscored:g}"
        num = "" if job.num is None else str(job.num)
        mark = f"{'*' if job.pareto else '':<5}  " if multi else ""
        lines.append(f"  {place:>4}  {shown}  {unscored:>8}  {num:>4}  {mark}"
                     f"{_shown(job, swept)}")
    if scored:
        best = scored[0]
        lines.append(f"best          job {best.num}: {_shown(best, swept)} "
                     f"({first.name} {best.value:.4f}), outputs in {best.folder}")
    else:
        lines.append(f"best          none: no job has a value of {first.name}")
    if multi:
        front = [j for j in jobs if j.pareto]
        lines.append(f"pareto front  {len(front)} job(s): " + (", ".join(
            f"job {j.num}" for j in front) or "none: no job has a value of each objective"))
    lines += tracker_lines
    return "\n".join(lines)


def _words(objectives: list[Objective]) -> str:
    return ", ".join(f"{o.name} ({'max' if o.maximize else 'min'})" for o in objectives)


def ppi_text(summary: RunSummary) -> str | None:
    """The console's ``mean`` of a run whose headline is a PPI++ mean (human labels): the
    PPI++ mean, its interval (centred on it) and the judge's own mean beside it, named
    "judge alone" (``0.6425 [0.4480, 0.8370] (PPI++ at 95%, 20 of 60 labelled; judge
    alone 0.5207)``); ``None`` for any other run, whose ``mean`` is its mean."""
    head, mean = summary.headline(), summary.mean
    value, ci = head["value"], head["interval"]
    if head["method"] != PPI or not isinstance(value, int | float) or not ci:
        return None
    block = summary.confidence or ((next(iter((summary.variants or {}).values()), None)
                                    or {}).get("confidence") or {})
    level = head["level"]
    at = f" at {level:.0%}" if isinstance(level, int | float) else ""
    labelled = (f", {block['n_labelled']} of {block['n']} labelled"
                if "n_labelled" in block and "n" in block else "")
    alone = "n/a" if mean is None else f"{mean:.4f}"
    return (f"{value:.4f} [{ci[0]:.4f}, {ci[1]:.4f}] (PPI++{at}{labelled}; judge alone "
            f"{alone})")


def job_line(num: int | None, name: str, summary: RunSummary, out_dir: Path,
             tracked: TrackedRun | None = None) -> str:
    """A sweep job's one-line summary (parallel jobs' full summaries would interleave)."""
    mean = summary.mean
    shown = ppi_text(summary) or ("n/a" if mean is None else f"{mean:.4f}")
    run = f", mlflow run {tracked.run_id}" if tracked is not None else ""
    each = "".join(f", {n} {_fmt(v.get('mean'))}" for n, v in (summary.variants or {}).items())
    return (f"job {num} {name}: mean {shown}, {summary.n_scored} / "
            f"{summary.n_samples} scored{each}, outputs in {out_dir}{run}")


def per_second(rate: float) -> str:
    """A rate with 3 significant figures (all the digits of a whole number above 100)."""
    return f"{rate:,.0f}" if abs(rate) >= 100 else f"{rate:.3g}"


def print_summary(summary: RunSummary, job: Job, quiet: bool,
                  tracked: TrackedRun | None) -> None:
    """The end of a run on the console: its table, or a sweep's job's one line."""
    if quiet:
        return
    if job.multirun:
        print(job_line(job.job_num, job.run_name, summary, job.out_dir, tracked))
    else:
        print(render_summary(summary, tracked))


def render_summary(summary: RunSummary, tracked: TrackedRun | None) -> str:
    """The table printed at the end of a run."""
    rows = [
        ("metric", summary.metric),
        ("dataset", f"{summary.options.get('dataset', '?')} ({summary.dataset.get('path')})"),
        ("mean", ppi_text(summary) or ("n/a (nothing scored)" if summary.mean is None
                                        else f"{summary.mean:.4f}")),
        ("scored", f"{summary.n_scored} / {summary.n_samples}"),
    ]
    for reason, count in summary.unscored_reasons.items():
        rows.append(("unscored", f"{count} × {reason}"))
    if summary.success is not None:
        rows.append(("success rate", f"{summary.success:.1%}"))
    rows += [("warning", line) for line in data_warnings(summary.dataset)]
    rows += variant_rows(summary.variants)
    rows += confidence_rows(summary)
    retrieval = summary.retrieval
    if retrieval:
        rows.append((
            "retrieval",
            "  ".join(f"{k} {v:.4f}" for k, v in retrieval.items() if k != "n_queries")
            + f"  ({retrieval['n_queries']} queries)",
        ))
    cut = summary.retrieval_cutoffs or {}
    if cut.get("dropped"):
        rows.append(("cut-offs", f"{', '.join(cut['dropped'])} not logged: above the "
                                 f"retrieval depth {cut['depth']} "
                                 "(run.retrieval_beyond_depth=true logs them)"))
    if cut.get("logged"):
        rows.append(("cut-offs", f"{', '.join(cut['logged'])} above the retrieval depth "
                                 f"{cut['depth']}: scored as if padded with non-relevant chunks"))
    gate = summary.gate
    if gate:
        rows.append(("gate", gate_line(gate)))
    judge = None if summary.judge is None else {**summary.judge, **summary.judge_stats}
    if judge:
        cost = f", ~${judge['cost_usd']:.4f}" if judge.get("cost_usd") else ""
        if "cost_usd" in judge and judge["cost_usd"] is None:
            why = judge.get("cost_unknown")
            cost = ", cost unknown" + (f" ({why})" if why else "")
        served = judge.get("served_model")
        shown = judge["model"] if not served or served == judge["model"] else (
            f"{judge['model']} (served: {served})")
        rows.append(("judge", f"{shown}: {judge_line(judge)}{cost}"))
    rows += bill_rows(judge, summary.variants)  # requests by mode, cost paid, cache savings
    rate = summary.samples_per_s
    per_s = f" ({per_second(rate)} samples/s)" if rate else ""
    rows.append(("time", f"{summary.duration_s:.3f} s" + per_s))
    latency = latency_line(summary.timing)
    if latency:
        rows.append(("latency", latency))
    rows.append(("outputs", summary.output_dir))
    rows += report_line(summary)  # report.html, when run.report wrote it
    if tracked is not None:
        rows += tracked.lines  # the tracker's rows that lead to the run
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"  {k:<{width}}  {v}" for k, v in rows)


#: The fewest queries whose retrievals all miss their reference ids that are said aloud.
MIN_QUERIES = 5


def data_warnings(dataset: dict[str, Any]) -> list[str]:
    """What the data's counts say is probably wrong (``summary.json``'s ``dataset``):
    reference ids (judged documents) the corpus lacks, which no retriever can return."""
    lines = []
    for lacking, total, examples, what in (
        ("reference_ids_missing_from_corpus", "reference_ids", "reference_ids_missing_examples",
         "reference ids"),
        ("qrels_docs_missing_from_corpus", None, "qrels_docs_missing_examples",
         "documents judged in the qrels"),
    ):
        missing = dataset.get(lacking)
        if not isinstance(missing, int) or not missing:
            continue
        of = f" of {dataset[total]}" if total and isinstance(dataset.get(total), int) else ""
        shown = dataset.get(examples) or []
        eg = f" (e.g. {shown[0]!r})" if shown else ""
        corpus = dataset.get("corpus") or "the corpus"
        lines.append(f"{missing:,}{of} {what} are not in {corpus}{eg}: no retriever can "
                     "return them, so they count as misses; are the ids written as the "
                     "corpus writes them?")
    queries = dataset.get("queries_with_ids")
    matched = dataset.get("queries_retrieving_a_reference_id")
    if isinstance(queries, int) and queries >= MIN_QUERIES and matched == 0:
        pair = dataset.get("ids_example")
        shown = (f" (e.g. retrieved {pair.get('retrieved')!r}, reference "
                 f"{pair.get('reference')!r})" if isinstance(pair, dict) else "")
        lines.append(f"none of the {queries:,} queries retrieved any of its reference "
                     f"(judged) ids{shown}: are the retrieved ids written as the reference "
                     "ids (the qrels) write them?")
    return lines


def variant_rows(variants: dict[str, Any] | None) -> list[tuple[str, str]]:
    """One row per variant of a run of several: its name, mean (its headline: with human
    labels the PPI++ mean and interval, the judge alone beside it) and scored/unscored."""
    rows = []
    for name, v in variants_with_headlines(variants or {}).items():
        head = v.get("headline") or {}
        mean, ci = _fmt(v.get("mean")), head.get("interval")
        if head.get("method") == PPI and isinstance(head.get("value"), int | float) and ci:
            mean = (f"{head['value']:.4f} [{ci[0]:.4f}, {ci[1]:.4f}] (PPI++; judge alone "
                    f"{mean})")
        rows.append(("variant", f"{name}: mean {mean}, {v.get('n_scored')} scored, "
                                f"{v.get('n_unscored')} unscored"))
    return rows


def judge_line(judge: dict[str, Any]) -> str:
    """What the judge did: requests sent and answers taken from the verdict cache (a fully
    cached run says "15 answers from the cache", never "0 requests")."""
    hits = judge.get("cache_hits") or 0
    cached = f"{hits:,} answers from the cache"
    if not judge["requests"] and hits:
        saved = judge.get("saved_prompt_tokens", 0) + judge.get("saved_completion_tokens", 0)
        return f"{cached}, no requests sent ({saved:,} tokens saved)"
    return (
        f"{judge['requests']:,} requests ({judge['retries']} retried, "
        f"{judge['parse_failures']} unusable, {judge['failures']} failed)"
        + (f", {cached}" if hits else "")
        + f", {judge['prompt_tokens']:,} prompt tokens ({judge['cached_prompt_tokens']:,} "
        f"cached), {judge['completion_tokens']:,} completion tokens"
    )
