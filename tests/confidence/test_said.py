"""What the console and report.html say of the interval: that it is the bootstrap's with few
labels, and how many more labels would halve its width (with the command that draws them),
from the block's own numbers."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.ppi_sim import ap, population

from harness.confidence.ppi import confidence_block
from harness.report.confidence import TEMPLATE, section
from harness.report.confidence_lines import confidence_rows, halving_line
from harness.report.html import render

pytest.importorskip("ppi_py")


def block(labelled: int, total: int = 1000, seed: int = 0) -> dict:
    human, judged = population(np.random.default_rng(seed), total, "lenient")
    h, j = ap(human), ap(judged)
    ids = [f"q{i:04d}" for i in range(total)]
    return confidence_block(dict(zip(ids, j.tolist(), strict=True)),
                            {ids[i]: float(h[i]) for i in range(labelled)}, seed=4)


class Summary:
    """What ``confidence_rows`` reads of a summary: a run of one variant."""

    def __init__(self, b: dict) -> None:
        self.variants, self.metric, self.confidence = None, "llm_with_reference", b


def test_a_bootstrap_interval_and_the_halving_count_are_on_the_console():
    b = block(30)
    assert b["interval_method"] == "bootstrap" and isinstance(b["labels_to_halve_width"], int)
    rows = confidence_rows(Summary(b))
    low, high = b["ci"]
    assert rows[0] == ("confidence", f"mean {b['mean']:.3f} [{low:.2f}, {high:.2f}] (PPI++, "
                                     f"bootstrap, 30 of 1000 labelled; judge alone "
                                     f"{b['judge_mean']:.3f}; kappa n/a)")
    quarter = (high - low) / 4
    assert rows[1] == ("labels", f"{b['labels_to_halve_width']:,} more labelled samples would "
                                 f"halve the width (to ±{quarter:.3f}): harness label RUN_DIR "
                                 f"--width {quarter:.3g}")


def test_a_central_limit_interval_is_not_called_bootstrap():
    b = block(200)
    assert b["interval_method"] == "clt"
    assert "(PPI++, 200 of 1000 labelled" in confidence_rows(Summary(b))[0][1]


def test_a_halving_the_run_cannot_give_is_said():
    b = block(400, total=450)
    assert b["labels_to_halve_width"] is None
    quarter = (b["ci"][1] - b["ci"][0]) / 4
    assert halving_line(b) == (f"halving the width (to ±{quarter:.3f}) needs more labelled "
                               "samples than the run's 450")
    assert halving_line(block(5)) is None  # too few labels to tell


def test_the_report_section_says_both():
    b = block(30)
    s = section("llm_with_reference", b)
    assert s["method"] == (f"With 30 labelled samples the PPI++ and labels-only intervals are "
                           f"bootstrap intervals: {b['interval']}.")
    assert s["halve"].startswith(f"{b['labels_to_halve_width']:,} more labelled samples would "
                                 "halve the width")
    html = render(TEMPLATE, sections=[s])
    assert '<p class="conf-method">With 30 labelled samples' in html
    assert f'<p class="conf-halve">{b["labels_to_halve_width"]:,} more labelled' in html
    s = section("x", block(200))
    assert s["method"] is None and "conf-method" not in render(TEMPLATE, sections=[s])
