"""The sweep report's plots (issue 35): each job with its interval as an error bar, on a y
axis at least 0.1 wide for scores in [0, 1] (a 0.014 gap no longer fills the plot), from 0
for other non-negative objectives. Intervals are checked against
``ppi_py.classical_mean_ci`` on each job's ``samples.jsonl``."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli
from matplotlib.figure import Figure
from ppi_py import classical_mean_ci

from harness.report.sweep_plot import MIN_SPAN, Point, draw, job_interval

#: The issue's sweep: four jobs between 0.798 and 0.810.
CLOSE = [Point("3", 0.798, 0.781, 0.815), Point("5", 0.803, 0.786, 0.820),
         Point("10", 0.810, 0.794, 0.826), Point("20", 0.806, 0.789, 0.823)]


def test_a_small_gap_is_drawn_small_with_each_jobs_interval() -> None:
    ax = Figure().subplots()
    caption = draw(ax, CLOSE, "retriever.top_k", "mean", maximize=True)
    lo, hi = ax.get_ylim()
    assert hi - lo >= MIN_SPAN == 0.1
    assert lo <= min(p.low or 1 for p in CLOSE) and hi >= max(p.high or 0 for p in CLOSE)
    assert lo >= 0 and hi <= 1
    [bars] = [c for c in ax.containers if type(c).__name__ == "ErrorbarContainer"]
    segments = bars.lines[2][0].get_segments()  # one vertical line per job, low to high
    assert sorted((round(s[0][1], 6), round(s[1][1], 6)) for s in segments) == sorted(
        (p.low, p.high) for p in CLOSE)
    assert "Bars: each job's 95% interval" in caption and "at least 0.1 wide" in caption
    # the gap between the best and the worst job: under a fifth of the axis
    assert (0.810 - 0.798) / (hi - lo) < 0.2


def test_values_at_the_edge_stay_inside_0_1_and_other_objectives_start_at_0() -> None:
    ax = Figure().subplots()
    draw(ax, [Point("a", 1.0), Point("b", 0.99)], "metric", "mean", maximize=True)
    assert ax.get_ylim() == pytest.approx((0.9, 1.0))
    ax = Figure().subplots()
    caption = draw(ax, [Point("1", 412.0), Point("2", 431.0)], "run.batch_size",
                   "retrieval_p95_ms", maximize=False)
    assert ax.get_ylim()[0] == 0 and ax.get_ylim()[1] > 431
    assert caption.startswith("No bars") and "from 0" in caption
    # the best at each value follows the objective's direction (lowest latency here)
    [best] = [line for line in ax.lines if line.get_label() == "best at each value"]
    assert list(best.get_ydata()) == [412.0, 431.0]


@pytest.mark.slow
def test_a_sweeps_report_draws_each_jobs_interval(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    result = run_cli("-m", "metric=id_based,id_ranked", "tracking=none", "run.quiet=true",
                     f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for job in ("0", "1"):
        rows = [json.loads(line) for line in (sweep / job / "samples.jsonl").open()]
        scores = np.array([r["score"] for r in rows if r["score"] is not None])
        expected = classical_mean_ci(scores, alpha=0.05)
        got = job_interval(sweep / job, "mean", float(scores.mean()))
        assert got is not None and all(
            math.isclose(a, float(b), abs_tol=1e-12) for a, b in zip(got, expected, strict=True))
        # a per-row retrieval metric has its own interval; a value the rows do not average
        # to (a timing, a count) has none
        ndcg = np.array([r["ndcg_at_5"] for r in rows])
        assert job_interval(sweep / job, "ndcg_at_5", float(ndcg.mean())) is not None
        assert job_interval(sweep / job, "ndcg_at_5", float(ndcg.mean()) + 0.01) is None
    html = (sweep / "report.html").read_text("utf-8")
    [caption] = re.findall(r'<figcaption class="muted">([^<]*)</figcaption>', html)
    assert caption.startswith("Bars: each job&#39;s 95% interval of its mean")
    assert "at least 0.1 wide" in caption
