"""Whose scores a run's plots show: the metric's, or in a run of several variants the first
variant's, named in every plot's title (not the list, which is no score)."""

from __future__ import annotations

from pathlib import Path

from harness.core.summary import RunSummary
from harness.core.types import SampleResult
from harness.report.plots import plotted, write_plots
from harness.run.loop import Tally


def test_a_run_of_several_variants_plots_the_first_by_name() -> None:
    several = RunSummary(metric="[id_ranked,non_llm]",
                         variants={"id_ranked": {"mean": 0.5}, "non_llm": {"mean": 0.7}})
    assert plotted(several) == ("id_ranked", True)
    assert plotted(RunSummary(metric="non_llm")) == ("non_llm", False)


def test_the_plots_of_several_variants_are_drawn(tmp_path: Path) -> None:
    tally = Tally("id_ranked")
    for i, verdicts in enumerate(([1, 0, 1], [0, 1], [1])):
        result = SampleResult(f"q{i}", sum(verdicts) / len(verdicts), verdicts)
        tally.record(result, result.to_row())
    paths = write_plots(tally, "id_ranked", tmp_path, several=True)
    assert [p.name for p in paths] == ["score_histogram.png", "precision_by_rank.png",
                                       "verdict_map.png"]
    assert all(p.stat().st_size > 1000 for p in paths)
