"""The sweep plot's bars stay inside the metric's range: a job's normal interval of a mean
near 1 (or an ndcg near 0) reaches past the bound, where no mean can be; drawn, the bar is
clipped there and the caption and legend say so. Metrics with no such range (times, a
metric of your own whose values leave [0, 1]) keep their bars as computed."""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import NormalDist

import pytest
from matplotlib.figure import Figure

from harness.report.sweep_plot import Point, draw, job_interval


def _bars(ax: object) -> list[tuple[float, float]]:
    """Each drawn bar's (low, high), from the plot itself, in the order of the jobs."""
    [bars] = [c for c in ax.containers  # type: ignore[attr-defined]
              if type(c).__name__ == "ErrorbarContainer"]
    return [(float(s[0][1]), float(s[1][1])) for s in bars.lines[2][0].get_segments()]


def _flat(pairs: list[tuple[float, float]]) -> list[float]:
    return [v for pair in pairs for v in pair]


def _approx(pairs: list[tuple[float, float]]) -> object:
    return pytest.approx(_flat(pairs))


def _label(ax: object) -> str:
    """The legend's entry for the jobs (the dots and their bars)."""
    texts = [t.get_text() for t in ax.get_legend().get_texts()]  # type: ignore[attr-defined]
    [jobs] = [t for t in texts if t.startswith("a job")]
    return str(jobs)


NEAR_ONE = [Point("3", 0.98, 0.9412, 1.0188), Point("5", 0.995, 0.985, 1.005),
            Point("10", 0.9, 0.85, 0.95)]


@pytest.mark.parametrize("objective", ["mean", "ndcg_at_10", "mrr", "hit_rate_at_5",
                                       "id_ranked/mean", "success_rate"])
def test_bars_of_a_score_near_1_end_at_1(objective: str) -> None:
    ax = Figure().subplots()
    caption = draw(ax, NEAR_ONE, "retriever.top_k", objective, maximize=True)
    assert _flat(_bars(ax)) == _approx([(0.9412, 1.0), (0.985, 1.0), (0.85, 0.95)])
    assert all(0.0 <= lo <= hi <= 1.0 for lo, hi in _bars(ax))
    assert f"clipped to [0, 1], the range of {objective}: 2 of 3 bars reached past it" \
        in caption
    assert _label(ax) == "a job (3), 95% interval (clipped to [0, 1])"
    assert ax.get_ylim()[1] <= 1.0


def test_bars_near_0_end_at_0_and_bars_inside_are_untouched() -> None:
    ax = Figure().subplots()
    caption = draw(ax, [Point("a", 0.01, -0.02, 0.04), Point("b", 0.3, 0.25, 0.35)],
                   "retriever", "ndcg_at_10", maximize=True)
    assert _flat(_bars(ax)) == _approx([(0.0, 0.04), (0.25, 0.35)])
    assert "1 of 2 bars reached past it" in caption
    ax = Figure().subplots()
    caption = draw(ax, [Point("a", 0.5, 0.4, 0.6)], "retriever", "mean", maximize=True)
    assert _flat(_bars(ax)) == _approx([(0.4, 0.6)])
    assert "clipped to [0, 1], the range of mean)" in caption  # said, though none was
    assert "reached past" not in caption and _label(ax) == "a job (1), 95% interval"


@pytest.mark.parametrize(("objective", "points"), [
    ("retrieval_p95_ms", [Point("1", 0.9, 0.5, 1.3), Point("2", 0.4, -0.1, 0.9)]),
    ("prepare_s", [Point("1", 0.99, 0.97, 1.01)]),
    ("mean", [Point("1", 1.5, 1.2, 1.8), Point("2", 0.9, 0.7, 1.1)]),  # no score
])
def test_metrics_without_that_range_keep_their_bars(objective: str,
                                                    points: list[Point]) -> None:
    ax = Figure().subplots()
    caption = draw(ax, points, "x", objective, maximize=True)
    assert _flat(_bars(ax)) == _approx([(p.low or 0.0, p.high or 0.0) for p in points])
    assert "clipped" not in caption and "clipped" not in _label(ax)


def test_a_jobs_rows_near_1_give_a_bar_that_stops_at_1(tmp_path: Path) -> None:
    """49 samples scored 1 and one 0: mean 0.98; its normal interval, by hand, reaches
    0.98 + 1.96 * sqrt(0.98 * 0.02 / 50) = 1.0188 (the population sd, as ragas's and
    ppi_py's classical interval take it)."""
    scores = [1.0] * 49 + [0.0]
    (tmp_path / "samples.jsonl").write_text(
        "".join(json.dumps({"id": f"q{i}", "score": v}) + "\n" for i, v in enumerate(scores)),
        "utf-8")
    half = NormalDist().inv_cdf(0.975) * math.sqrt(0.98 * 0.02 / 50)
    low, high = job_interval(tmp_path, "mean", 0.98) or (None, None)
    assert (low, high) == pytest.approx((0.98 - half, 0.98 + half))
    assert high is not None and high > 1.0  # what the issue saw
    ax = Figure().subplots()
    draw(ax, [Point("5", 0.98, low, high), Point("10", 0.6, 0.5, 0.7)], "retriever.top_k",
         "mean", maximize=True)
    assert _flat(_bars(ax)) == _approx([(0.98 - half, 1.0), (0.5, 0.7)])
