"""report.html's "How sure is this number?" section (issue 33): the three intervals, the
labelled count, the note and the judge's confusion matrix, with the numbers of the summary's
``confidence`` block; no section without a block. The blocks are made by
``harness.confidence.ppi.confidence_block`` from seeded synthetic scores; the expected
texts are the block's own numbers, formatted here."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.confidence.agreement import judge_agreement
from harness.confidence.ppi import NOT_DRAWN, confidence_block
from harness.core.summary import RunSummary
from harness.report.html import run_html

LABELS = {"label_rows": 612, "blank_rows": 3, "matched_rows": 600, "unknown_samples": 2,
          "unknown_chunks": 0, "partially_labelled_samples": 1, "labelled_samples": 150}


def block(seed: int, lenient: float = 0.15) -> dict[str, Any]:
    """A block of 600 judged samples, 150 labelled, the judge ``lenient`` above people."""
    rng = np.random.default_rng(seed)
    human_all = rng.beta(1.2, 1.3, 600)
    judge = {f"q{i}": float(min(1.0, h + lenient * rng.random()))
             for i, h in enumerate(human_all)}
    human = {f"q{i}": float(human_all[i]) for i in range(150)}
    h = rng.integers(0, 2, 400).tolist()
    j = [x if rng.random() < 0.8 else 1 - x for x in h]
    out = confidence_block(judge, human, agreement=judge_agreement(h, j))
    out["labels"] = dict(LABELS)
    return out


class Cells(HTMLParser):
    """The text of every element with a class, by class (``td class="num ci"``: under
    ``ci`` and ``num``), and the section's paragraphs, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[list[str]] = []
        self.text: dict[str, list[str]] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("td", "th", "p", "h3", "tr"):
            self.handle_data(" ")  # cells apart in their row's text
            self.stack.append([c for k, v in attrs if k == "class" and v for c in v.split()]
                              + [f"tag:{tag}"])
            for name in self.stack[-1]:
                self.text.setdefault(name, []).append("")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th", "p", "h3", "tr") and self.stack:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        for classes in self.stack:
            for name in classes:
                self.text[name][-1] += data


def confidence_part(html: str) -> str:
    start = html.index('<h2 id="confidence">')
    return html[start:html.index('<h2 id="plots">')]


def parsed(part: str) -> dict[str, list[str]]:
    cells = Cells()
    cells.feed(part)
    return {k: [" ".join(t.split()) for t in v] for k, v in cells.text.items()}


def f4(x: float) -> str:
    return f"{x:.4f}"


def interval(ci: list[float]) -> str:
    return f"[{ci[0]:.4f}, {ci[1]:.4f}]"


def test_the_section_shows_the_blocks_numbers() -> None:
    b = block(1)
    summary = RunSummary.from_json({"metric": "llm_with_reference", "n_samples": 600,
                                    "confidence": b})
    part = confidence_part(run_html(summary, [], []))
    text = parsed(part)
    assert text["mean"] == [f4(b["mean"]), f4(b["labels_only_mean"]), f4(b["judge_mean"])]
    assert text["ci"] == [interval(b["ci"]), interval(b["labels_only_ci"]),
                          interval(b["judge_only_ci"])]
    assert text["width"] == [f4(b["ci"][1] - b["ci"][0]),
                             f4(b["labels_only_ci"][1] - b["labels_only_ci"][0]),
                             f4(b["judge_only_ci"][1] - b["judge_only_ci"][0])]
    assert text["samples"] == ["150 labelled of 600 judged", "150", "600"]
    assert text["lead"] == [f"{f4(b['mean'])} {interval(b['ci'])} (PPI++, 95%): 150 of 600 "
                            f"scored samples labelled by people; the judge alone says "
                            f"{f4(b['judge_mean'])}."]
    # the block's note (not a random draw), escaped as every text is
    assert text["conf-note"] == ["Note: " + " ".join(NOT_DRAWN.split())]
    a = b["judge_agreement"]
    assert {f"Cohen's kappa {a['kappa']:.3f}", f"accuracy {a['accuracy']:.3f}",
            f'precision of "relevant" {a["precision"]:.3f}',
            f'recall of "relevant" {a["recall"]:.3f}', "labelled chunks 400"
            } <= set(text["tag:tr"])
    # the confusion matrix: rows human, columns judge
    matrix = [r for r in text["tag:tr"] if r.startswith("human:")]
    assert matrix == [f"human: relevant {a['tp']} {a['fn']}",
                      f"human: not relevant {a['fp']} {a['tn']}"]
    assert a["tp"] + a["fn"] + a["fp"] + a["tn"] == 400
    assert text["labels"] == ["Human labels: 612 label rows read; 600 matched to the run's "
                              "chunks; 3 blank; 2 for samples the run does not have; 1 "
                              "partially labelled samples (left out)."]
    # the drawing: one dot per interval at its mean, the means in the axis's order
    dots = [float(x) for x in re.findall(r'<circle cx="([\d.]+)"', part)]
    means = [b["mean"], b["labels_only_mean"], b["judge_mean"]]
    assert len(dots) == 3 and np.argsort(dots).tolist() == np.argsort(means).tolist()


def test_one_part_per_variant_and_none_without_a_block() -> None:
    first, second = block(2), block(3, lenient=0.0)
    first["random_draw"], first["note"] = True, None
    variants = {"llm_with_reference": {"mean": first["judge_mean"], "confidence": first},
                "non_llm": {"mean": 0.5},  # no judge, no labels: no part
                "llm_without_reference": {"mean": second["judge_mean"], "confidence": second}}
    summary = RunSummary.from_json({"metric": "llm_with_reference", "n_samples": 600,
                                    "variants": variants})
    html = run_html(summary, [], [])
    part = confidence_part(html)
    text = parsed(part)
    assert text["tag:h3"] == ["llm_with_reference", "llm_without_reference"]
    assert text["mean"][::3] == [f4(first["mean"]), f4(second["mean"])]
    assert text["conf-note"] == [
        "Note: The labelled samples are the seeded random draw of `harness label`.",
        "Note: " + " ".join(NOT_DRAWN.split())]
    assert html.index('<h2 id="variants">') < html.index('<h2 id="confidence">')

    for plain in ({"metric": "id_ranked", "n_samples": 3},
                  {"metric": "x", "variants": {"a": {"mean": 0.5}, "b": {"mean": 0.4}}}):
        html = run_html(RunSummary.from_json(plain), [], [])
        assert "How sure is this number?" not in html and 'id="confidence"' not in html


def test_the_labels_source_and_the_seeded_draw_are_named() -> None:
    b = block(6)
    b["labels"] = {"label_rows": 0, "unknown_chunks": 4}
    b.update(labels_source="qrels", random_draw=True, note=None,
             draw={"seed": 3, "n": 150, "population": 600, "drawn": ["q1", "q2"]})
    summary = RunSummary.from_json({"metric": "m", "confidence": b})
    text = parsed(confidence_part(run_html(summary, [], [])))
    assert text["labels"] == ["Human labels from qrels (a seeded random draw of 150 of 600 "
                              "samples, seed 3): 4 for chunks the run did "
                              "not retrieve."]


def test_undefined_agreement_and_missing_numbers_say_so() -> None:
    b = block(4)
    b["judge_agreement"] = judge_agreement([1, 1, 1], [1.0, 1.0, 1.0])  # one class: no kappa
    b["n_labelled_unscored"] = 2
    del b["labels"]
    summary = RunSummary.from_json({"metric": "m", "confidence": b})
    text = parsed(confidence_part(run_html(summary, [], [])))
    assert {"Cohen's kappa n/a (undefined)", "accuracy 1.000"} <= set(text["tag:tr"])
    assert text["conf-note"][1] == ("Note: 2 labelled sample(s) the judge did not score are "
                                    "left out.")
    assert "labels" not in text


def chromium() -> Any:
    """Headless Chromium at 1,200 x 1,000, through Selenium and Debian's chromedriver."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1200,1000"):
        options.add_argument(arg)
    return webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))


def open_report(driver: Any, folder: Path, block: dict[str, Any], n: int) -> None:
    """Write the report.html of a run of ``n`` samples with ``block`` and open it."""
    summary = RunSummary.from_json({"metric": "llm_with_reference", "n_samples": n,
                                    "confidence": block})
    page = folder / "report.html"
    page.write_text(run_html(summary, [], []), "utf-8")
    driver.get(page.as_uri())


@pytest.mark.browser
def test_the_section_in_headless_chromium(tmp_path: Path) -> None:
    """Drawn by a browser: the three intervals in the table and the drawing, the confusion
    matrix; a screenshot to look at (tmp_path/confidence.png)."""
    from selenium.webdriver.common.by import By

    b = block(5)
    driver = chromium()
    try:
        open_report(driver, tmp_path, b, 600)
        section = driver.find_element(By.ID, "confidence-llm_with_reference")
        cis = [c.text for c in section.find_elements(By.CSS_SELECTOR, "table.intervals td.ci")]
        assert cis == [interval(b["ci"]), interval(b["labels_only_ci"]),
                       interval(b["judge_only_ci"])]
        circles = section.find_elements(By.CSS_SELECTOR, "svg.conf-plot circle")
        assert len(circles) == 3 and all(c.is_displayed() for c in circles)
        plot = section.find_element(By.CSS_SELECTOR, "svg.conf-plot")
        assert plot.size["width"] > 300 and plot.size["height"] > 80
        kappa = section.find_element(By.XPATH, ".//th[.=\"Cohen's kappa\"]/../td")
        assert kappa.text == f"{b['judge_agreement']['kappa']:.3f}"
        driver.execute_script("document.getElementById('confidence').scrollIntoView()")
        assert driver.save_screenshot(str(tmp_path / "confidence.png"))
    finally:
        driver.quit()
    assert (tmp_path / "confidence.png").stat().st_size > 10_000


@pytest.mark.browser
def test_the_strata_table_in_headless_chromium(tmp_path: Path) -> None:
    """A block stratified by a column (``run.strata``): the lead is the stratified mean, the
    method line says so, and the table "By qtype" holds each value's mean, interval and
    labelled count; one value without labels says "none"; a screenshot to look at."""
    from selenium.webdriver.common.by import By

    from harness.confidence.strata import stratify_block

    rng = np.random.default_rng(9)
    judge = {f"q{i}": float(rng.beta(2, 2)) for i in range(400)}
    human = {k: min(1.0, v + 0.05) for k, v in list(judge.items())[:90]}
    strata = {k: ("fact" if i % 3 else "list") for i, k in enumerate(judge)}
    b = stratify_block(confidence_block(judge, human), judge, human, strata, "qtype", 0.95)
    assert b["interval_method"] == "stratified"
    driver = chromium()
    try:
        open_report(driver, tmp_path, b, 400)
        section = driver.find_element(By.ID, "confidence-llm_with_reference")
        assert section.find_element(By.CSS_SELECTOR, "p.lead").text.startswith(
            f"{b['mean']:.4f} [{b['ci'][0]:.4f}, {b['ci'][1]:.4f}]")
        assert "stratified by qtype" in section.find_element(By.CSS_SELECTOR,
                                                             "p.conf-method").text
        rows = section.find_elements(By.CSS_SELECTOR, "table.strata tbody tr")
        got = [[c.text for c in r.find_elements(By.CSS_SELECTOR, "th, td")] for r in rows]
        want = []
        for e in b["strata"]["values"]:
            want.append([e["value"], f"{e['mean']:.4f}",
                         f"[{e['ci'][0]:.4f}, {e['ci'][1]:.4f}]",
                         f"{e['n_labelled']} of {e['n']}", f"{e['judge_mean']:.4f}",
                         {"clt": "central limit",
                          "bootstrap": "bootstrap (under 50 labelled)"}[e["interval_method"]]])
        assert got == want and all(r.is_displayed() for r in rows)
        driver.execute_script("document.querySelector('table.strata').scrollIntoView()")
        assert driver.save_screenshot(str(tmp_path / "strata.png"))
    finally:
        driver.quit()
    assert (tmp_path / "strata.png").stat().st_size > 10_000
