"""The first screen of ``report.html`` and the console's ``report`` line (issue 35): the
console names the report a run wrote; the page opens on the mean (emphasised), its interval
and the worst samples with their verdicts, the settings folded below. Expected numbers
come from ``samples.jsonl`` and ``ppi_py.classical_mean_ci``, not from the report's code;
the ``browser`` test measures where Chromium draws them in a 1,400 × 900 window."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import run_cli
from ppi_py import classical_mean_ci

from harness.core.summary import RunSummary
from harness.report.first_screen import interval, report_line

DETAILS = re.compile(r'<details class="settings".*?</details>', re.S)


def lowest(rows: list[dict[str, Any]], k: int = 5) -> list[int]:
    """The 1-based lines of the ``k`` lowest-scoring rows, ties in line order."""
    scored = [(r["score"], i + 1) for i, r in enumerate(rows) if r["score"] is not None]
    return [line for _, line in sorted(scored)[:k]]


def test_the_console_names_the_report_it_wrote(tmp_path: Path) -> None:
    result = run_cli("metric=id_ranked", "tracking=none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    outputs = next(i for i, line in enumerate(lines) if line.split()[:1] == ["outputs"])
    assert lines[outputs + 1].split() == ["report", str(result.out_dir / "report.html")]
    assert lines[outputs].index(str(result.out_dir)) == lines[outputs + 1].index(
        str(result.out_dir))  # in the column of the outputs line

    # no report line when no report was written: run.report=false, or the file is gone
    off = run_cli("metric=id_ranked", "tracking=none", "run.report=false", cwd=tmp_path)
    assert off.returncode == 0, off.stderr
    assert not (off.out_dir / "report.html").exists()
    assert not any(line.split()[:1] == ["report"] for line in off.stdout.splitlines())
    summary = RunSummary.from_json(result.summary())
    (result.out_dir / "report.html").unlink()
    assert report_line(summary) == []


def test_the_first_screen_comes_before_the_settings(tmp_path: Path) -> None:
    result = run_cli("metric=id_ranked", "tracking=none", "run.quiet=true", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    html = (result.out_dir / "report.html").read_text("utf-8")
    rows = result.rows()
    scores = np.array([r["score"] for r in rows if r["score"] is not None])
    lo, hi = classical_mean_ci(scores, alpha=0.05)

    mean = re.search(r'<div class="mean" id="headline-mean">([^<]*)</div>', html)
    assert mean is not None and mean.group(1) == f"{scores.mean():.4f}" == "0.5641"
    shown = re.search(r'id="headline-interval"><strong>([^<]*)</strong>', html)
    assert shown is not None and shown.group(1) == f"[{float(lo):.4f}, {float(hi):.4f}]"
    assert f"{len(scores)} of {len(rows)} samples scored" in html
    worst = re.search(r'<div id="worst-list" class="worst" data-positions="([^"]*)">', html)
    assert worst is not None and [int(p) for p in worst.group(1).split()] == lowest(rows)

    # the headline, then the worst samples, then the summary, then the folded settings
    [details] = DETAILS.findall(html)
    order = [html.index(s) for s in ('id="headline-mean"', 'id="worst-list"',
                                     '<table class="summary">', details, 'id="samples"')]
    assert order == sorted(order)
    for setting in ("<th>dataset sha256</th>", "<th>run settings</th>", "run.seed=0",
                    "metric.name=id_ranked", "<th>options</th>"):
        assert setting in details and html.count(setting) == 1, setting


def test_human_labels_put_the_ppi_interval_on_the_first_screen() -> None:
    block = {"method": "ppi++", "level": 0.9, "mean": 0.61, "ci": [0.55, 0.67],
             "n_labelled": 40, "n": 300}
    summary = RunSummary.from_json({"metric": "llm_with_reference", "mean": 0.7,
                                    "n_samples": 300, "n_scored": 300, "confidence": block})
    shown = interval(summary, [(i, {"score": 0.7}) for i in range(300)])
    assert shown["text"] == "[0.5500, 0.6700]"
    assert shown["what"].startswith("90% PPI++ interval around 0.6100")
    assert "40 samples people labelled" in shown["what"]
    # one scored sample: no interval, said so
    alone = RunSummary.from_json({"metric": "id_ranked", "mean": 1.0, "n_samples": 2,
                                  "n_scored": 1})
    assert interval(alone, [(0, {"score": 1.0}), (1, {"score": None})])["text"] == "n/a"


def _chromium(width: int, height: int) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--window-size={width},{height}"):
        options.add_argument(arg)
    return webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))


def _inside(box: dict[str, float], view: dict[str, float]) -> bool:
    return (box["top"] >= 0 and box["left"] >= 0 and box["bottom"] <= view["height"]
            and box["right"] <= view["width"] and box["width"] > 0 and box["height"] > 0)


@pytest.mark.browser
def test_the_first_screen_at_1400_px_holds_the_mean_and_the_worst_verdicts(
    tmp_path: Path,
) -> None:
    """A judged run (every chunk with the judge's reason, texts cut at 300 characters) in
    a 1,400 × 900 window: the mean and each verdict of the worst sample are drawn inside
    the viewport before any scrolling; screenshot: tmp_path/first_screen.png."""
    from selenium.webdriver.common.by import By

    result = run_cli("metric=llm_with_reference", "judge=fixture", "tracking=none",
                     "run.quiet=true", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = result.rows()
    worst_line = lowest(rows, 1)[0]
    driver = _chromium(1400, 900)
    try:
        driver.get((result.out_dir / "report.html").as_uri())
        view = driver.execute_script(
            "return {width: window.innerWidth, height: window.innerHeight}")
        assert view["width"] == 1400 and view["height"] >= 700  # the window less its frame

        def box(element: Any) -> dict[str, float]:
            return dict(driver.execute_script(
                "return arguments[0].getBoundingClientRect().toJSON()", element))

        mean = driver.find_element(By.ID, "headline-mean")
        scores = [r["score"] for r in rows if r["score"] is not None]
        assert mean.text == f"{sum(scores) / len(scores):.4f}"
        assert float(mean.value_of_css_property("font-size")[:-2]) >= 40  # emphasised
        assert _inside(box(mean), view)
        assert _inside(box(driver.find_element(By.ID, "headline-interval")), view)

        first = driver.find_element(By.CSS_SELECTOR, "#worst-list .sample")
        assert first.get_attribute("data-worst") == rows[worst_line - 1]["id"]
        badges = first.find_elements(By.CSS_SELECTOR, ".chunk .badge")
        verdicts = rows[worst_line - 1]["verdicts"]
        assert [b.text for b in badges] == [
            "✓ relevant" if v else "✗ not relevant" for v in verdicts]
        assert badges and all(_inside(box(b), view) for b in badges)
        assert not driver.find_element(By.CSS_SELECTOR, "details.settings table").is_displayed()
        assert driver.save_screenshot(str(tmp_path / "first_screen.png"))

        first.click()  # a sample of the first screen opens to its whole texts and reasons
        assert "compact" not in (first.get_attribute("class") or "")
        reasons = first.find_elements(By.CSS_SELECTOR, ".chunk .reason")
        assert len(reasons) == len(verdicts) and all(r.is_displayed() for r in reasons)
    finally:
        driver.quit()
    assert (tmp_path / "first_screen.png").stat().st_size > 10_000
    assert json.loads((result.out_dir / "summary.json").read_text("utf-8"))["n_scored"]
