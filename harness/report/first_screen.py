"""The first screen of ``report.html`` (what a reader sees at 1,400 × 900 before scrolling):
the headline, emphasised (with human labels the PPI++ mean, the judge's own mean beside it
as "judge alone"), how many samples it is over and its interval, then the worst samples
with their per-chunk verdicts; the settings the run logged are folded below it
(``settings``), in a ``<details>`` element.

The interval is the PPI++ one of the summary's ``confidence`` block when people labelled
samples (``run.human_labels``), else the normal (central limit) interval of the mean of the
scored samples, mean ± z·sd/√n with the population sd, as ``ppi_py.classical_mean_ci``
computes it (the report's "judge only" interval): sampling noise only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from statistics import NormalDist
from typing import Any

from harness.core.redact import redact_tree
from harness.core.summary import PPI, RunSummary, variants_with_headlines
from harness.report.confidence import blocks

#: The worst samples drawn on the first screen.
WORST = 5


def level_of(summary: RunSummary) -> float:
    """The run's confidence level (``run.confidence_level``, 0.95 by default)."""
    level = (summary.config.get("run") or {}).get("confidence_level")
    return float(level) if isinstance(level, int | float) and 0 < level < 1 else 0.95


def normal_interval(values: Sequence[float], level: float = 0.95,
                    n: int | None = None) -> tuple[float, float] | None:
    """The normal interval of the mean of ``values`` (``None`` under 2 values); ``n``: the
    count the mean is over when ``values`` are an even sample of them (the sd's estimate)."""
    if len(values) < 2:
        return None
    mean = math.fsum(values) / len(values)
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in values) / len(values))
    half = NormalDist().inv_cdf(0.5 + level / 2) * sd / math.sqrt(n or len(values))
    return mean - half, mean + half


def _score(row: Mapping[str, Any]) -> float | None:
    value = row.get("score")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def interval(summary: RunSummary, rows: list[tuple[int, dict[str, Any]]]) -> dict[str, str]:
    """The headline's interval, centred on it: ``text`` (``[lo, hi]``) and ``what`` it is
    (the PPI++ one of the headline's variant when it has human labels)."""
    level = level_of(summary)
    shown = blocks(summary)
    first = next(iter(summary.variants or {}), None)
    if first is not None:  # several variants: only the first's, the headline's
        shown = [(name, block) for name, block in shown if name == first]
    if shown:
        name, block = shown[0]
        ci, mean = block.get("ci"), block.get("mean")
        if isinstance(ci, list | tuple) and len(ci) == 2 and isinstance(mean, int | float):
            pct = f"{block.get('level', level):.0%}"
            return {"text": f"[{ci[0]:.4f}, {ci[1]:.4f}]",
                    "what": f"{pct} PPI++ interval around {mean:.4f}, the mean corrected "
                            f"by {block.get('n_labelled')} samples people labelled "
                            f"({name}; see “How sure is this number?” below)"}
    scores = [s for _, row in rows if (s := _score(row)) is not None]
    n = summary.n_scored
    bounds = normal_interval(scores, level, n) if n >= 2 else None
    if bounds is None or summary.mean is None:
        return {"text": "n/a", "what": "no interval: fewer than 2 scored samples"}
    half = (bounds[1] - bounds[0]) / 2
    spread = "" if len(scores) >= n else f", its sd from the {len(scores):,} samples kept"
    return {"text": f"[{summary.mean - half:.4f}, {summary.mean + half:.4f}]",
            "what": f"{level:.0%} interval of the mean (normal approximation over the {n:,} "
                    f"scored samples{spread}): sampling noise only"
                    + (", the judge's verdicts taken as right" if summary.judge else "")}


def worst(rows: list[tuple[int, dict[str, Any]]], k: int = WORST) -> list[int]:
    """The report positions (1-based, as the page's data numbers its samples) of the ``k``
    lowest-scoring samples of ``rows``, lowest first, ties in run order."""
    scored = [(s, position) for position, row in rows if (s := _score(row)) is not None]
    return [position + 1 for _, position in sorted(scored)[:k]]


def lead(summary: RunSummary) -> dict[str, str | None]:
    """The large figure and what it is: with human labels the PPI++ mean (the interval
    beside it is centred on it), the judge's own mean said beside it as "judge alone";
    else the mean."""
    head, mean = summary.headline(), summary.mean
    value = head["value"]
    if head["method"] == PPI and isinstance(value, int | float):
        return {"figure": f"{value:.4f}", "method": "PPI++: corrected by human labels",
                "judge_alone": "n/a" if mean is None else f"{mean:.4f}"}
    return {"figure": "n/a" if mean is None else f"{mean:.4f}", "method": None,
            "judge_alone": None}


def other(entry: dict[str, Any]) -> str:
    """Another variant's figure on the first screen: its headline (``1.0000 (PPI++)`` with
    human labels), else its mean."""
    head = entry.get("headline") or {}
    value = head.get("value") if head.get("method") == PPI else entry.get("mean")
    if not isinstance(value, int | float):
        return "n/a"
    return f"{value:.4f}" + (" (PPI++)" if head.get("method") == PPI else "")


def headline(summary: RunSummary, rows: list[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
    """What the first screen shows: the headline figure (``lead``), the counts, the
    interval, the worst samples."""
    variants = list((summary.variants or {}).items())
    picked = worst(rows)
    n, kept = summary.n_samples, len(rows)
    of = "" if kept >= n else f" of the {kept:,} samples kept in this report"
    figure = lead(summary)
    return {
        "metric": variants[0][0] if variants else str(summary.metric),
        "mean": figure["figure"], "method": figure["method"],
        "judge_alone": figure["judge_alone"],
        "scored": f"{summary.n_scored:,} of {n:,} samples scored",
        "unscored": summary.n_unscored,
        "interval": interval(summary, rows),
        "others": [(str(name), other(v)) for name, v in
                   list(variants_with_headlines(dict(variants)).items())[1:]],
        "success": None if summary.success is None else f"{summary.success:.1%}",
        "worst": " ".join(str(p) for p in picked),
        "worst_title": (f"The {len(picked)} lowest-scoring samples{of}" if picked
                        else "No sample was scored"),
    }


def report_line(summary: RunSummary) -> list[tuple[str, str]]:
    """The console's ``report`` row: the path of the run's ``report.html`` when
    ``run.report`` is on and the file was written (``[]`` otherwise)."""
    folder = summary.output_dir
    page = Path(folder) / "report.html" if folder else None
    wanted = (summary.config.get("run") or {}).get("report") is True
    return [("report", str(page))] if wanted and page is not None and page.is_file() else []


def settings(summary: RunSummary) -> list[tuple[str, str]]:
    """The settings the run logged (defaults included, secrets masked), by group: the
    fold below the first screen."""
    out = [("options", " ".join(f"{k}={v}" for k, v in summary.options.items()))]
    by_group: dict[str, list[str]] = {}
    for key, value in redact_tree(summary.params()).items():
        by_group.setdefault(key.split(".", 1)[0], []).append(f"{key}={value}")
    out.extend((f"{group} settings", "  ".join(lines)) for group, lines in by_group.items())
    out.append(("dataset sha256", str(summary.dataset.get("sha256"))))
    return out


#: The first screen (rendered with autoescaping by ``html.render``): the samples in
#: ``#worst-list`` are drawn by the page's script, as the samples below are.
TEMPLATE = """<section class="headline" id="headline" aria-label="headline numbers">
<div class="big"><div class="label">mean {{ h.metric }}{% if h.method %}
<span class="method">({{ h.method }})</span>{% endif %}</div>
<div class="mean" id="headline-mean">{{ h.mean }}</div></div>
<div class="facts"><div class="interval" id="headline-interval"><strong>{{ h.interval.text
}}</strong> <span class="muted">{{ h.interval.what }}</span></div>
<div id="headline-scored"><strong>{{ h.scored }}</strong>{% if h.unscored %}
<span class="muted">({{ h.unscored }} unscored: see the summary below)</span>{% endif %}
{% if h.success %} · success rate <strong>{{ h.success }}</strong>{% endif %}</div>
{% if h.judge_alone %}<div id="headline-judge-alone">judge alone
<strong>{{ h.judge_alone }}</strong> <span class="muted">(the judge's own mean, its verdicts
taken as right)</span></div>{% endif %}
{% if h.others %}<div class="muted">other variants: {% for name, m in h.others %}{{ name }}
<strong>{{ m }}</strong>{% if not loop.last %} · {% endif %}{% endfor %}</div>{% endif %}
</div></section>
<h2 id="worst-samples">{{ h.worst_title }}</h2>
{% if h.worst %}<p class="muted hint">Each chunk's verdict by rank (texts cut to a line: click
a sample to read it whole); all samples are further down.</p>{% endif %}
<div id="worst-list" class="worst" data-positions="{{ h.worst }}"></div>
"""
