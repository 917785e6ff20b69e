"""Plots of one run, logged to MLflow and shown in ``report.html``: score histogram,
precision by rank, verdict map. Colours are Okabe–Ito's (safe for colour-blind readers)
and every colour also has a label."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

#: Okabe–Ito: blue, orange, bluish green, vermillion, grey (no verdict).
BLUE, ORANGE, GREEN, VERMILLION, GREY = "#0072B2", "#E69F00", "#009E73", "#D55E00", "#DDDDDD"


def plotted(summary: Any) -> tuple[str, bool]:
    """Whose scores the plots show, and whether the run scored several variants: the run's
    metric, or the first variant of ``metric=[a,b]`` (the tally's headline)."""
    variants = getattr(summary, "variants", None)
    if variants:
        return str(next(iter(variants))), True
    return str(summary.metric), False


def write_plots(tally: Any, metric: str, folder: Path, several: bool = False) -> list[Path]:
    """Write the run's PNGs into ``folder``; return their paths (none when nothing scored).

    ``tally`` is a ``harness.run.loop.Tally`` (its scores, per-rank counts and the
    evenly spaced verdict map); ``several``: the run scored several variants, ``metric``
    the first, whose name then leads every plot's title."""
    if not tally.scores:
        return []
    import logging

    # its font cache is built on first use, announced at INFO: not the user's concern
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    folder.mkdir(parents=True, exist_ok=True)
    paths = []

    def save(fig: Figure, name: str) -> None:
        FigureCanvasAgg(fig)
        path = folder / name
        fig.savefig(path, dpi=110)
        paths.append(path)

    fig = Figure(figsize=(6, 3.6), layout="constrained")
    histogram(fig.subplots(), list(tally.scores), metric)
    save(fig, "score_histogram.png")

    ranks = [i for i, n in enumerate(tally.rank_totals) if n]
    if ranks:
        fig = Figure(figsize=(6, 3.6), layout="constrained")
        by_rank(fig.subplots(), ranks, tally.rank_totals, tally.rank_relevant)
        if several:
            _lead(fig, metric)
        save(fig, "precision_by_rank.png")

    picked = [item for _, item in tally.verdict_map.pick()]
    if picked and any(v for _, v in picked):
        fig = Figure(figsize=(6, 1.6 + 0.12 * len(picked)), layout="constrained")
        verdict_map(fig.subplots(), picked, tally.n_scored)
        if several:
            _lead(fig, metric)
        save(fig, "verdict_map.png")
    return paths


def _lead(fig: Any, metric: str) -> None:
    """Name ``metric`` on a line above the title of ``fig``'s plot."""
    ax = fig.axes[0]
    ax.set_title(f"{metric}\n{ax.get_title()}")


def histogram(ax: Any, scores: list[float], metric: str) -> None:
    """The scores in 20 bins over [0, 1], with their mean and count."""
    mean = math.fsum(scores) / len(scores)
    ax.hist(scores, bins=20, range=(0.0, 1.0), color=BLUE, edgecolor="white")
    ax.axvline(mean, color=VERMILLION, linestyle="--", linewidth=1.5, label=f"mean {mean:.4f}")
    ax.set(xlabel=f"{metric} score", ylabel="samples", xlim=(0, 1),
           title=f"{metric}: per-sample scores (n = {len(scores):,}, mean {mean:.4f})")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.legend(loc="best", frameon=True, framealpha=0.9)


def by_rank(ax: Any, ranks: list[int], totals: list[int], relevant: list[float]) -> None:
    """The share of relevant chunks at each rank k (0-based ``ranks``) and the pooled
    precision@k, on integer rank ticks."""
    share = [relevant[i] / totals[i] for i in ranks]
    cumulative, hits, seen = [], 0.0, 0
    for i in ranks:
        hits += relevant[i]
        seen += totals[i]
        cumulative.append(hits / seen)
    xs = [i + 1 for i in ranks]
    ax.plot(xs, share, marker="o", color=BLUE, label="relevant at rank k")
    ax.plot(xs, cumulative, marker="s", linestyle="--", color=ORANGE,
            label="precision@k (pooled)")
    ax.set(xlabel="rank k", ylabel="share of chunks", ylim=(0, 1.02),
           title=f"Relevance by rank over {totals[ranks[0]]:,} scored samples"
                 + ("" if totals[ranks[-1]] == totals[ranks[0]]
                    else f" ({totals[ranks[-1]]:,} reach rank {xs[-1]})"))
    ax.set_xticks(xs if len(xs) <= 20 else xs[:: math.ceil(len(xs) / 20)])
    ax.legend(frameon=False)


def verdict_map(ax: Any, picked: list[tuple[str, list[float]]], n_scored: int) -> None:
    """The verdicts of ``picked`` samples (of ``n_scored``) by rank: a discrete legend for
    0/1 verdicts, a colour bar only for soft ones."""
    from matplotlib.colors import Colormap, ListedColormap
    from matplotlib.patches import Patch

    width = max(len(v) for _, v in picked)
    grid = [[float(x) for x in v] + [math.nan] * (width - len(v)) for _, v in picked]
    binary = all(x in (0.0, 1.0) for row in grid for x in row if not math.isnan(x))
    if binary:
        cmap: Colormap = ListedColormap([ORANGE, BLUE])
        handles = [Patch(color=BLUE, label="relevant (1)"),
                   Patch(color=ORANGE, label="not relevant (0)")]
    else:
        from matplotlib import colormaps

        cmap = colormaps["cividis"]
        handles = []
    cmap = cmap.with_extremes(bad=GREY)
    image = ax.imshow(grid, aspect="auto", cmap=cmap, vmin=0, vmax=1, interpolation="nearest")
    if any(math.isnan(x) for row in grid for x in row):
        handles.append(Patch(color=GREY, label="no chunk"))
    spread = "evenly spaced" if len(picked) < n_scored else "all"
    ax.set(xlabel="rank", ylabel="sample",
           title=f"Verdicts of {len(picked)} of {n_scored:,} scored queries ({spread})")
    ax.set_xticks(range(width), [str(k + 1) for k in range(width)])
    ax.set_yticks(range(len(grid)), [sid for sid, _ in picked], fontsize=6)
    if handles:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False,
                  fontsize=8)
    if not binary:
        ax.figure.colorbar(image, ax=ax, shrink=0.8, label="relevance (soft verdict)")
