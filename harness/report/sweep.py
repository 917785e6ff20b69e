"""``report.html`` of a sweep: its jobs ranked by the objective, and the objective plotted
against each setting the sweep varied."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.core.errors import ConfigError
from harness.core.objectives import parse, with_headline
from harness.core.summary import RunSummary
from harness.report.first_screen import level_of
from harness.report.html import render
from harness.report.sweep_plot import Point, job_interval, plot
from harness.report.templates import HEAD
from harness.report.write import REPORT, write_html

#: Overrides that never change a score: not shown as settings.
QUIET_KEYS = ("run.progress", "run.quiet", "tracking", "experiment", "experiment_name")


@dataclass
class SweepJob:
    """One job folder of a sweep."""

    name: str
    summary: RunSummary
    params: dict[str, str] = field(default_factory=dict)
    report: str | None = None
    folder: Path | None = None

    def value(self, objective: str) -> float | None:
        """The job's value of ``objective`` (``mean``, a retrieval or timing metric, ...)."""
        from harness.report.console import objective_value

        return objective_value(self.summary, objective)

    def rank_fields(self, objective: str) -> tuple[float | None, float | None, int | None]:
        """What ranks it (``harness.core.objectives.rank_key``)."""
        num = int(self.name) if self.name.isdigit() else None
        return self.value(objective), float(self.summary.n_unscored), num


def _overrides(job_dir: Path) -> dict[str, str]:
    path = job_dir / ".hydra" / "overrides.yaml"
    if not path.is_file():
        return {}
    import yaml

    items = yaml.safe_load(path.read_text("utf-8")) or []
    pairs = (str(item).partition("=") for item in items)
    return {k.lstrip("+~"): v for k, _, v in pairs if k.lstrip("+~") not in QUIET_KEYS}


def job_summaries(sweep_dir: Path) -> list[Path]:
    """The ``summary.json`` of every finished job of ``sweep_dir``, at any depth: a job's
    folder is ``hydra.sweep.subdir``, which need not be the job's number
    (``${hydra.job.override_dirname}`` holds ``=`` and ``,``, and a ``/`` of a value nests
    it)."""
    found = [p for p in sweep_dir.rglob("summary.json")
             if (p.parent / ".hydra").is_dir() or p.parent.parent == sweep_dir]
    return sorted(found, key=lambda p: _order(p.parent.relative_to(sweep_dir).as_posix()))


def load_jobs(sweep_dir: Path) -> list[SweepJob]:
    """Every finished job of ``sweep_dir`` (folders holding a ``summary.json``)."""
    from urllib.parse import quote

    jobs = []
    for path in job_summaries(sweep_dir):
        try:
            summary = RunSummary.from_json(json.loads(path.read_text("utf-8")))
        except (ValueError, TypeError) as e:
            raise ConfigError(f"{path} is not valid JSON ({e})") from None
        name = path.parent.relative_to(sweep_dir).as_posix()
        report = path.parent / REPORT
        jobs.append(SweepJob(name, summary, _overrides(path.parent),
                             quote(f"{name}/{REPORT}") if report.is_file() else None,
                             path.parent))
    return jobs


def _order(name: str) -> tuple[int, str]:
    return (int(name), "") if name.isdigit() else (1 << 62, name)


def varied(jobs: list[SweepJob]) -> list[str]:
    """The settings whose value differs between jobs, in override order."""
    keys: dict[str, set[str]] = {}
    for job in jobs:
        for k, v in job.params.items():
            keys.setdefault(k, set()).add(v)
    return [k for k, values in keys.items() if len(values) > 1 or len(jobs) == 1]


def write_sweep_report(sweep_dir: Path, out: Path | None = None) -> Path:
    """Write ``sweep_dir/report.html`` (or ``out``) from the sweep's job folders."""
    from harness.core.objectives import ranked
    from harness.run.outputs import failed_jobs

    jobs = load_jobs(sweep_dir)
    if not jobs:
        raise ConfigError(f"{sweep_dir} holds no job folder with a summary.json (no job of "
                          "the sweep finished, or it is not a sweep's folder)")
    spec = jobs[0].summary.config.get("run", {}).get("objective", "mean")
    first = parse(with_headline(spec, [str(j.summary.headline()["name"]) for j in jobs]))[0]
    objective = first.name
    params = varied(jobs)
    order = ranked(jobs, lambda j: j.rank_fields(objective), maximize=first.maximize)
    failed = failed_jobs(sweep_dir)

    def fmt(x: Any) -> str:
        return "n/a" if not isinstance(x, int | float) or not math.isfinite(x) else f"{x:.4f}"

    rows = [{
        "name": j.name, "params": j.params, "objective": fmt(j.value(objective)),
        "mean": fmt(j.summary.mean), "n_scored": f"{j.summary.n_scored:,}",
        "n_unscored": f"{j.summary.n_unscored:,}", "report": j.report,
    } for j in order]
    html = render(
        SWEEP,
        title=f"Sweep: {len(jobs)} jobs ranked by {objective}",
        subtitle=(f"{sweep_dir} · ties: fewer unscored samples, then the earlier job · report "
                  f"written {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC"),
        params=params, objective=objective, jobs=rows,
        mean_header="mean (judge alone)" if objective.endswith("ppi_mean") else "mean",
        failed=(f"{len(failed)} job(s) failed and are not ranked: "
                + ", ".join(p.name for p in failed)) if failed else "",
        plots=[p for p in (_plot(jobs, k, objective, first.maximize) for k in params)
               if p is not None],
        no_plots="No setting varied with a numeric objective to plot.",
    )
    return write_html(out or sweep_dir / REPORT, html)


def _plot(jobs: list[SweepJob], key: str, objective: str,
          maximize: bool) -> tuple[str, str, str, str] | None:
    """``(name, alt text, data URI, caption)`` of the objective against setting ``key``,
    each job with its interval (``sweep_plot``)."""
    points = []
    for job in jobs:
        y = job.value(objective)
        if y is None or not math.isfinite(y):
            continue
        level = level_of(job.summary)
        bounds = ppi_bounds(job.summary, objective, y) or job_interval(
            job.folder, objective, y, level)
        points.append(Point(job.params.get(key, ""), y, *(bounds or (None, None))))
    if not points:
        return None
    return plot(points, key, objective, maximize, level_of(jobs[0].summary))


def ppi_bounds(summary: RunSummary, objective: str, value: float
               ) -> tuple[float, float] | None:
    """The PPI++ interval of ``value`` when ``objective`` is the job's headline and that
    is a PPI++ mean (the interval is centred on it); ``None`` otherwise."""
    head = summary.headline()
    ci = head["interval"]
    if head["name"] != objective or not ci or head["value"] != value:
        return None
    return float(ci[0]), float(ci[1])


def sweep_report(sweep_dir: str) -> Path | None:
    """``write_sweep_report`` at the end of a sweep: a sweep whose jobs all failed has none,
    and a report that cannot be written is a warning, not a failed sweep."""
    import sys

    from harness.core.errors import HarnessError

    try:
        return write_sweep_report(Path(sweep_dir))
    except (HarnessError, OSError) as e:
        print(f"warning: the sweep's report.html was not written: {e}", file=sys.stderr)
        return None


#: The sweep's report (rendered with autoescaping by ``html.render``).
SWEEP = HEAD + """<h2 id="ranked">Jobs, best first</h2>
<table class="ranked">
<thead><tr><th class="num">rank</th><th>job</th>{% for p in params %}<th>{{ p }}</th>{% endfor %}
<th class="num">{{ objective }}</th>
{% if objective != 'mean' %}<th class="num">{{ mean_header }}</th>{% endif %}
<th class="num">scored</th>
<th class="num">unscored</th><th>report</th></tr></thead>
<tbody>{% for job in jobs %}<tr>
<td class="num">{{ loop.index }}</td><td>{{ job.name }}</td>
{% for p in params %}<td>{{ job.params.get(p, '') }}</td>{% endfor %}
<td class="num">{{ job.objective }}</td>
{% if objective != 'mean' %}<td class="num">{{ job.mean }}</td>{% endif %}
<td class="num">{{ job.n_scored }}</td><td class="num">{{ job.n_unscored }}</td>
<td>{% if job.report %}<a href="{{ job.report }}">report</a>{% endif %}</td></tr>
{% endfor %}</tbody></table>
{% if failed %}<p class="error">{{ failed }}</p>{% endif %}
<h2 id="plots">{{ objective }} by setting</h2>
{% if plots %}<div class="plots">
{% for name, alt, uri, caption in plots %}<figure><img src="{{ uri }}" alt="{{ alt }}"
 title="{{ name }}"><figcaption class="muted">{{ caption }}</figcaption></figure>
{% endfor %}</div>
{% else %}<p class="muted">{{ no_plots }}</p>{% endif %}
</body></html>
"""
