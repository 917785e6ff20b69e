"""The sweep report's plots: the objective of each job against one setting, with each job's
interval as an error bar, on a y axis that does not blow a small gap up to the whole plot.

Each job's interval is the normal one of its mean (``first_screen.normal_interval``) over
the per-sample values of its ``samples.jsonl`` (``score`` for ``mean``, the row's own
``ndcg_at_10``, ... for a retrieval metric); none where the rows hold no such value or their
mean is not the objective's (a timing, a count). Drawn, a bar is clipped to its metric's
range ([0, 1] for scores and the retrieval metrics): the normal interval of a mean near 1
reaches past 1, where no mean can be; the caption says how many bars were clipped.
"""

from __future__ import annotations

import base64
import io
import json
import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core.metric_names import is_retrieval
from harness.report.first_screen import normal_interval

#: The least span of a y axis over values in [0, 1] (scores, rates): a gap of 0.01 fills
#: a tenth of the plot, not all of it.
MIN_SPAN = 0.1


@dataclass
class Point:
    """One job on the plot: its value of the setting, its objective and its interval."""

    x: str
    y: float
    low: float | None = None
    high: float | None = None


def job_interval(folder: Path | None, objective: str, value: float,
                 level: float = 0.95) -> tuple[float, float] | None:
    """The interval of ``value``, the job's ``objective``, from its rows' own values."""
    rows = None if folder is None else folder / "samples.jsonl"
    if rows is None or not rows.is_file():
        return None
    key = "score" if objective == "mean" else objective
    values = array("d")
    try:
        with open(rows, encoding="utf-8") as lines:
            for line in lines:
                v = json.loads(line).get(key) if line.strip() else None
                if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
                    values.append(float(v))
    except (OSError, ValueError, AttributeError):
        return None
    bounds = normal_interval(values, level)
    if bounds is None or not math.isclose(math.fsum(values) / len(values), value,
                                          rel_tol=1e-6, abs_tol=1e-9):
        return None  # the rows' mean is not the objective's: no bar rather than a wrong one
    half = (bounds[1] - bounds[0]) / 2
    return value - half, value + half


def metric_range(objective: str, points: Sequence[Point]) -> tuple[float, float] | None:
    """The range ``objective`` lies in by its definition: [0, 1] for a variant's ``mean``
    and ``success_rate`` and the retrieval metrics (``ndcg_at_10``, ``mrr``, ...); ``None``
    for the others (times, counts) and where a job's value lies outside [0, 1] (a metric
    of your own that is no score)."""
    name = objective.rsplit("/", 1)[-1]
    bounded = name in ("mean", "success_rate") or (
        is_retrieval(name) and name != "retrieval_depth")
    if not bounded or any(not 0.0 <= p.y <= 1.0 for p in points):
        return None
    return 0.0, 1.0


def clipped(points: Sequence[Point], bounds: tuple[float, float] | None
            ) -> tuple[list[Point], int]:
    """``points`` with each bar clipped to ``bounds``, and how many bars were."""
    if bounds is None:
        return list(points), 0
    lo, hi = bounds
    out, count = [], 0
    for p in points:
        if p.low is None or p.high is None or (lo <= p.low and p.high <= hi):
            out.append(p)
            continue
        out.append(Point(p.x, p.y, min(max(p.low, lo), hi), max(min(p.high, hi), lo)))
        count += 1
    return out, count


def y_range(points: Sequence[Point]) -> tuple[tuple[float, float] | None, str]:
    """The y axis's limits (``None``: matplotlib's own) and what the caption says of them:
    values in [0, 1] get a span of at least ``MIN_SPAN`` inside [0, 1]; other values that
    are never negative start at 0."""
    lows = [p.y if p.low is None else p.low for p in points]
    highs = [p.y if p.high is None else p.high for p in points]
    lo, hi = min(lows), max(highs)
    if lo >= 0 and hi <= 1:
        pad = (hi - lo) * 0.15
        lo, hi = lo - pad, hi + pad
        if hi - lo < MIN_SPAN:
            mid = (lo + hi) / 2
            lo, hi = mid - MIN_SPAN / 2, mid + MIN_SPAN / 2
        shift = max(0.0, -lo) - max(0.0, hi - 1)
        lo, hi = max(0.0, lo + shift), min(1.0, hi + shift)
        return (lo, hi), (f"y axis {lo:.3f} to {hi:.3f}: at least {MIN_SPAN} wide for values "
                          f"in [0, 1], so a small gap between jobs looks small")
    if lo >= 0:
        return (0.0, hi * 1.08 or 1.0), "y axis from 0"
    return None, ""


def plot(points: list[Point], key: str, objective: str, maximize: bool,
         level: float = 0.95) -> tuple[str, str, str, str]:
    """``(name, alt text, data URI, caption)`` of ``objective`` against setting ``key``."""
    import logging

    # its font cache is built on first use, announced at INFO: not the user's concern
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 3.4), layout="constrained")
    FigureCanvasAgg(fig)
    caption = draw(fig.subplots(), points, key, objective, maximize, level)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    uri = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
    return f"{key}.png", f"{objective} of each job against {key}", uri, caption


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def draw(ax: Any, points: list[Point], key: str, objective: str, maximize: bool,
         level: float = 0.95) -> str:
    """Draw ``points`` on ``ax``; returns the plot's caption (the bars, the y axis)."""
    from harness.report.plots import BLUE, ORANGE

    bounds = metric_range(objective, points)
    points, cut = clipped(points, bounds)
    numeric = all(_number(p.x) is not None for p in points)
    labels = sorted({p.x for p in points}, key=lambda x: _number(x) or 0.0) if numeric else (
        list(dict.fromkeys(p.x for p in points)))
    at = {x: float(_number(x) or 0.0) if numeric else float(i) for i, x in enumerate(labels)}
    pick = max if maximize else min
    best = {x: pick(p.y for p in points if p.x == x) for x in labels}
    xs, ys = [at[p.x] for p in points], [p.y for p in points]
    bars = [p for p in points if p.low is not None and p.high is not None]
    if bars:
        ax.errorbar([at[p.x] for p in bars], [p.y for p in bars],
                    yerr=[[p.y - (p.low or 0.0) for p in bars],
                          [(p.high or 0.0) - p.y for p in bars]],
                    fmt="none", ecolor=BLUE, elinewidth=1.2, capsize=4, zorder=2)
    ax.scatter(xs, ys, color=BLUE, label=f"a job ({len(points)})"
               + (f", {level:.0%} interval" if bars else "")
               + (f" (clipped to [{bounds[0]:g}, {bounds[1]:g}])" if cut and bounds else ""),
               zorder=3, clip_on=False)
    ax.plot([at[x] for x in labels], [best[x] for x in labels], color=ORANGE,
            linestyle="--" if numeric else "none", marker="s", markerfacecolor="none",
            markersize=11, label="best at each value")
    if not numeric:
        ax.margins(x=0.12)  # the first and last settings' bars clear of the frame
    if not numeric or len(labels) <= 12:
        ax.set_xticks([at[x] for x in labels], labels, rotation=0 if numeric else 30)
    limits, said = y_range(points)
    if limits is not None:
        ax.set_ylim(*limits)
    ax.set(xlabel=key, ylabel=objective, title=f"{objective} by {key}")
    ax.legend(frameon=False)
    where = (f"Bars: each job's {level:.0%} interval of its {objective} (normal "
             "approximation over its samples; sampling noise only"
             + (f"; clipped to [{bounds[0]:g}, {bounds[1]:g}], the range of {objective}"
                if bounds else "")
             + (f": {cut} of {len(bars)} bars reached past it" if cut else "") + ")" if bars
             else f"No bars: the jobs' rows hold no per-sample {objective}")
    return ". ".join(s for s in (where, said) if s) + "."
