"""The first screen's figure and interval follow the headline: the interval beside the
large figure is always centred on it. Golden values are written by hand."""

from __future__ import annotations

from harness.core.summary import RunSummary
from harness.report.first_screen import interval, lead

BLOCK = {"method": "ppi++", "level": 0.95, "mean": 0.61, "ci": [0.55, 0.67], "n_labelled": 40,
         "n": 300}
ROWS = [(i, {"score": float(i % 2)}) for i in range(4)]  # scores 0, 1, 0, 1: mean 0.5


def test_a_later_variant_s_ppi_interval_never_stands_beside_the_first_s_mean() -> None:
    summary = RunSummary(metric="[id_ranked,llm]", mean=0.5, n_samples=4, n_scored=4,
                         variants={"id_ranked": {"mean": 0.5},
                                   "llm": {"mean": 0.7, "confidence": BLOCK}})
    assert lead(summary)["figure"] == "0.5000" and lead(summary)["method"] is None
    shown = interval(summary, ROWS)
    # the normal interval of 0, 1, 0, 1 (sd 0.5): 0.5 ± 1.959964 × 0.5 / 2
    assert shown["text"] == "[0.0100, 0.9900]" and "PPI++" not in shown["what"]


def test_the_first_variant_s_ppi_mean_leads_with_its_interval() -> None:
    summary = RunSummary(metric="[llm,id_ranked]", mean=0.7, n_samples=4, n_scored=4,
                         variants={"llm": {"mean": 0.7, "confidence": BLOCK},
                                   "id_ranked": {"mean": 0.5}})
    figure = lead(summary)
    assert (figure["figure"], figure["judge_alone"]) == ("0.6100", "0.7000")
    assert interval(summary, ROWS)["text"] == "[0.5500, 0.6700]"  # centred on 0.61
