"""Plots of one run, logged to MLflow: score histogram, precision by rank, verdict map."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_plots(tally: Any, metric: str, folder: Path) -> list[Path]:
    """Write the run's PNGs into ``folder``; return their paths (none when nothing scored)."""
    if not tally.scores:
        return []
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
    ax = fig.subplots()
    ax.hist(list(tally.scores), bins=20, range=(0.0, 1.0), color="#4c72b0")
    ax.set(xlabel=f"{metric} score", ylabel="samples", title=f"{metric}: per-sample scores")
    save(fig, "score_histogram.png")

    ranks = [i for i, n in enumerate(tally.rank_totals) if n]
    if ranks:
        fig = Figure(figsize=(6, 3.6), layout="constrained")
        ax = fig.subplots()
        share = [tally.rank_relevant[i] / tally.rank_totals[i] for i in ranks]
        cumulative, hits, seen = [], 0.0, 0
        for i in ranks:
            hits += tally.rank_relevant[i]
            seen += tally.rank_totals[i]
            cumulative.append(hits / seen)
        xs = [i + 1 for i in ranks]
        ax.plot(xs, share, marker="o", label="relevant at rank k")
        ax.plot(xs, cumulative, marker=".", linestyle="--", label="precision@k (pooled)")
        ax.set(xlabel="rank k", ylabel="share of chunks", ylim=(0, 1.02), title="Relevance by rank")
        ax.legend()
        save(fig, "precision_by_rank.png")

    if tally.verdict_map:
        width = max(len(v) for _, v in tally.verdict_map) or 1
        grid = [v + [float("nan")] * (width - len(v)) for _, v in tally.verdict_map]
        fig = Figure(figsize=(6, 1.5 + 0.12 * len(grid)), layout="constrained")
        ax = fig.subplots()
        image = ax.imshow(
            grid, aspect="auto", cmap="RdYlGn", vmin=0, vmax=1, interpolation="nearest"
        )
        ax.set(xlabel="rank", ylabel="sample", title="Verdicts (green: relevant)")
        ax.set_xticks(range(width), [str(k + 1) for k in range(width)])
        ax.set_yticks(range(len(grid)), [sid for sid, _ in tally.verdict_map], fontsize=6)
        fig.colorbar(image, ax=ax, shrink=0.8)
        save(fig, "verdict_map.png")
    return paths
