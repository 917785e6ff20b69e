"""A sweep's console summary: its jobs ranked by the objective, and the best one, printed
once after all jobs (read from the jobs' folders, so it needs no tracker)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core.objectives import Objective, pareto_front, parse, sort_key
from harness.core.redact import redact
from harness.core.secrets import reveal
from harness.core.types import TrackedRun
from harness.tracking.sweep import parent_run_id, rank_key


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


def objective_value(summary: dict[str, Any], objective: str) -> float | None:
    """The logged metric ``objective`` from a ``summary.json`` (``mean``, ``ndcg_at_10``,
    ``retrieval_p95_ms``, ``judge/requests``, ``retriever/ann_recall``, …), or ``None``."""
    places = [summary, summary.get("retrieval") or {}, summary.get("timing") or {}]
    name = objective
    if objective.startswith("judge/"):
        places, name = [summary.get("judge") or {}], objective.removeprefix("judge/")
    elif objective.startswith("retriever/"):
        places = [(summary.get("retriever") or {}).get("metrics") or {}]
        name = objective.removeprefix("retriever/")
    for place in places:
        value = place.get(name) if isinstance(place, dict) else None
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

    objectives = parse(objective)

    jobs = []
    for overrides_file in sorted(sweep_dir.glob("**/.hydra/overrides.yaml")):
        folder = overrides_file.parent.parent
        overrides = _load_yaml(overrides_file)
        hydra = _load_yaml(folder / ".hydra" / "hydra.yaml") or {}
        num = (hydra.get("hydra") or {}).get("job", {}).get("num")
        job = JobResult(int(num) if isinstance(num, int) else None,
                        [str(o) for o in overrides or []], folder)
        try:
            summary = json.loads((folder / "summary.json").read_text("utf-8"))
        except (OSError, ValueError):
            error = folder / FAILED
            job.error = error.read_text("utf-8").strip() if error.is_file() else "no summary.json"
        else:
            job.values = tuple(objective_value(summary, o.name) for o in objectives)
            job.value = job.values[0]
            unscored = summary.get("n_unscored")
            job.n_unscored = float(unscored) if isinstance(unscored, int | float) else None
        jobs.append(job)
    if len(objectives) > 1:
        for i in pareto_front([j.values for j in jobs], objectives):
            jobs[i].pareto = True
    rest = objectives[1:]
    jobs.sort(key=lambda j: rank_key(j.value, j.n_unscored, j.num, objectives[0].maximize,
                                     sort_key(j.values[1:] or (None,) * len(rest), rest)))
    return jobs


def _shown(job: JobResult, swept: list[str] | None) -> str:
    keep = [o for o in job.overrides
            if not swept or o.partition("=")[0].lstrip("+~") in swept]
    return reveal(redact(" ".join(keep))) or "(no overrides)"


def _fmt(value: float | None) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.4f}"


def render(jobs: list[JobResult], objective: str, sweep_dir: Path,
           swept: list[str] | None = None) -> str:
    """The ranked table and the best job, as printed at the end of ``python -m harness -m``;
    with several objectives, a column each and the Pareto front marked ``*``."""
    objectives = parse(objective)
    first = objectives[0]
    multi = len(objectives) > 1
    scored = [j for j in jobs if j.value is not None and not math.isnan(j.value)]
    order = "highest" if first.maximize else "lowest"
    ties = "".join(f"{o.name}, " for o in objectives[1:])
    lines = [f"sweep         {len(jobs)} job(s) in {sweep_dir}, ranked by {first.name} "
             f"({order} first; ties: {ties}fewer unscored, then the earlier job)"]
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
    parent = parent_run_id(str(sweep_dir))
    if parent:
        lines.append(f"mlflow parent {parent}")
    return "\n".join(lines)


def _words(objectives: list[Objective]) -> str:
    return ", ".join(f"{o.name} ({'max' if o.maximize else 'min'})" for o in objectives)


def job_line(num: int | None, name: str, summary: dict[str, Any], out_dir: Path,
             tracked: TrackedRun | None = None) -> str:
    """A sweep job's one-line summary (parallel jobs' full summaries would interleave)."""
    mean = summary.get("mean")
    shown = "n/a" if mean is None else f"{mean:.4f}"
    run = f", mlflow run {tracked.run_id}" if tracked is not None else ""
    return (f"job {num} {name}: mean {shown}, {summary.get('n_scored')} / "
            f"{summary.get('n_samples')} scored, outputs in {out_dir}{run}")
