"""``report.html``: written by every run and sweep, rebuilt by ``python -m harness.report``,
one self-contained file with every text escaped; the ``browser`` test loads it in headless
Chromium (Debian's ``chromium`` and ``chromium-driver``)."""

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli, sample_labels, sample_rows
from helpers import mlflow_runs
from helpers.judge_server import JudgeServer
from matplotlib.figure import Figure

from harness.cli.report import main as report_main
from harness.core.types import SampleResult
from harness.report.plots import by_rank, histogram, verdict_map
from harness.run.loop import Tally
from harness.run.sampling import Evenly

HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
DATA = re.compile(r'<script type="application/json" id="rows-data">(.*?)</script>', re.S)


def report_rows(html: str) -> list[dict[str, Any]]:
    """The samples a report holds (its page data, drawn a page at a time by its script)."""
    [data] = DATA.findall(html)
    return list(json.loads(data))


def hostile_dataset(tmp_path: Path) -> Path:
    """Five bundled records, one whose chunk and question are markup, one unscored."""
    records = sample_rows()[:5] + [
        {"id": "evil", "user_input": f"Is {HOSTILE} safe?", "reference": "No.",
         "retrieved_contexts": [HOSTILE, "plain"], "retrieved_context_ids": ["x1", "x2"],
         "reference_contexts": ["plain"], "reference_context_ids": ["x2"]},
        {"id": "empty", "user_input": "Nothing retrieved?", "reference": "No.",
         "retrieved_contexts": [], "retrieved_context_ids": [],
         "reference_contexts": ["plain"], "reference_context_ids": ["x2"]},
    ]
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return path


@pytest.mark.slow
def test_a_tracked_run_writes_report_html_and_logs_it(tmp_path: Path, mlflow_store: str) -> None:
    result = run_cli("metric=id_ranked", "experiment_name=report_html",
                     env={"MLFLOW_TRACKING_URI": mlflow_store}, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    html = (result.out_dir / "report.html").read_text("utf-8")
    assert len(report_rows(html)) == 30  # the bundled dataset's 30 samples, all shown
    assert html.count('src="data:image/png;base64,') == 3  # the three plots, inline
    assert not re.search(r'(src|href)="(https?:)?//', html)  # nothing fetched from outside
    [run] = mlflow_runs.runs(mlflow_store, "report_html")
    names = {a.path for a in mlflow_runs.client(mlflow_store).list_artifacts(run.info.run_id)}
    assert "report.html" in names

    # rebuilt from the MLflow store by run id, and from the folder
    out = tmp_path / "again.html"
    assert report_main([run.info.run_id, f"tracking_uri={mlflow_store}", f"out={out}"]) == 0
    assert len(report_rows(out.read_text("utf-8"))) == 30
    (result.out_dir / "report.html").unlink()
    assert report_main([str(result.out_dir)]) == 0
    assert len(report_rows((result.out_dir / "report.html").read_text("utf-8"))) == 30


def test_every_text_is_escaped(tmp_path: Path) -> None:
    data = hostile_dataset(tmp_path)
    result = run_cli("metric=id_ranked", "dataset=jsonl", f"dataset.path={data}",
                     "tracking=none", "run.quiet=true", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    html = (result.out_dir / "report.html").read_text("utf-8")
    assert "window.pwned" in html  # the text is there ...
    assert "<script>window.pwned" not in html and "<img src=x" not in html  # ... as data
    assert "\\u003cscript\\u003ewindow.pwned = 1\\u003c/script\\u003e" in html
    assert html.count("<script>") == 1  # the report's own script only
    assert html.count("</script>") == 2  # ... and its data, which no text could close
    evil = next(r for r in report_rows(html) if r["id"] == "evil")
    assert evil["chunks"][0]["text"] == HOSTILE and evil["question"] == f"Is {HOSTILE} safe?"
    # tracking=none draws no plots: the report says so and how to get them
    assert "No plots" in html and "python -m harness.report" in html


def test_bad_targets_fail_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert report_main([str(tmp_path / "nowhere")]) == 2
    assert report_main(["0" * 32, f"tracking_uri=sqlite:///{tmp_path}/none.db"]) == 2
    assert report_main([str(tmp_path)]) == 2  # an empty folder: neither a run nor a sweep
    assert report_main([str(tmp_path), "colour=red"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 4 and all(line.startswith("error: ") for line in err)
    assert "neither a folder nor an MLflow run id" in err[0]
    assert "no MLflow store" in err[1]
    assert "no job folder with a summary.json" in err[2]
    assert "unknown option colour=" in err[3]


@pytest.mark.slow
def test_a_sweep_writes_a_ranked_report(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    result = run_cli("-m", "metric=id_based,id_ranked", "tracking=none", "run.quiet=true",
                     f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    html = (sweep / "report.html").read_text("utf-8")
    # README: id_ranked's mean on the bundled data is 0.5641, id_based's 0.3761
    cells = re.findall(r'<td class="num">(0\.\d{4})</td>', html)
    assert cells == ["0.5641", "0.3761"]  # the objective (mean) of each, best first
    assert html.index('href="1/report.html"') < html.index('href="0/report.html"')
    assert html.count('src="data:image/png;base64,') == 1  # mean by metric


def test_evenly_keeps_a_sample_spread_over_the_whole_stream() -> None:
    keep: Evenly[int] = Evenly(60)
    for i in range(1000):
        keep.add(i)
    positions = [p for p, _ in keep.pick()]
    # 1000 items, at most 120 kept: the stride doubles to 16 (63 kept: 0, 16, ..., 992)
    assert keep.stride == 16 and len(keep.items) == 63
    assert len(positions) == 60 and positions[0] == 0 and positions[-1] >= 960
    assert all(b - a in (16, 32) for a, b in zip(positions, positions[1:], strict=False))


def test_plots_say_what_they_show() -> None:
    tally = Tally("id_ranked")
    for i in range(300):  # verdicts [1, 0] for even i, [0, 1] for odd i: scores 1.0 and 0.5
        verdicts = [1, 0] if i % 2 == 0 else [0, 1]
        tally.record(SampleResult(f"q{i}", 1.0 if i % 2 == 0 else 0.5, verdicts), {})
    fig = Figure()
    ax = fig.subplots()
    picked = [item for _, item in tally.verdict_map.pick()]
    verdict_map(ax, picked, tally.n_scored)
    assert ax.get_title() == "Verdicts of 60 of 300 scored queries (evenly spaced)"
    assert int(picked[-1][0][1:]) >= 240  # not the first 60: spread to the end
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "relevant (1)", "not relevant (0)"]
    assert len(fig.axes) == 1  # a discrete legend, no colour bar

    ax = Figure().subplots()
    histogram(ax, list(tally.scores), "id_ranked")
    assert ax.get_title() == "id_ranked: per-sample scores (n = 300, mean 0.7500)"

    ax = Figure().subplots()
    by_rank(ax, [0, 1], tally.rank_totals, tally.rank_relevant)
    assert list(ax.get_xticks()) == [1, 2]
    assert [y for y in ax.lines[0].get_ydata()] == [0.5, 0.5]  # half relevant at each rank
    assert math.isclose(ax.lines[1].get_ydata()[1], 0.5)
    assert ax.get_title() == "Relevance by rank over 300 scored samples"
    ax = Figure().subplots()  # shorter lists: fewer samples reach the deeper ranks
    by_rank(ax, [0, 1, 2], [300, 300, 120], [150.0, 150.0, 30.0])
    assert ax.get_title() == "Relevance by rank over 300 scored samples (120 reach rank 3)"


def chromium() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1200,1600"):
        options.add_argument(arg)
    return webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))


@pytest.mark.browser
def test_the_report_in_headless_chromium(tmp_path: Path, judge_server: JudgeServer) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.select import Select

    judge_server.labels.update(sample_labels())
    data = hostile_dataset(tmp_path)
    result = run_cli("metric=llm_with_reference", "judge=local",
                     f"judge.base_url={judge_server.base_url}", "judge.model=test-judge",
                     "dataset=jsonl", f"dataset.path={data}", "tracking=none",
                     "run.quiet=true", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert report_main([str(result.out_dir)]) == 0  # rebuilt: with its plots
    error = result.rows()[-1]["error"]
    driver = chromium()
    try:
        driver.get((result.out_dir / "report.html").as_uri())
        assert driver.execute_script("return window.pwned") is None

        def shown() -> list[Any]:  # the page's samples as drawn now (redrawn by each control)
            return driver.find_elements(By.CSS_SELECTOR, "#samples-list .sample")

        assert len(shown()) == 7
        # q01 retrieves d001 (its reference), d002, d003
        q01 = driver.find_element(By.CSS_SELECTOR, '.sample[data-id="q01"]')
        badges = q01.find_elements(By.CSS_SELECTOR, ".chunk .badge")
        assert [b.text for b in badges] == ["✓ relevant", "✗ not relevant", "✗ not relevant"]
        colours = [b.value_of_css_property("background-color") for b in badges]
        assert colours == ["rgba(0, 114, 178, 1)"] + ["rgba(213, 94, 0, 1)"] * 2  # Okabe–Ito
        assert all(r.text.startswith("Reason: ") for r in q01.find_elements(
            By.CSS_SELECTOR, ".chunk .reason"))
        # the reference answer the judge compared against is shown with the sample
        reference = sample_rows()[0]["reference"]
        assert q01.find_element(By.CSS_SELECTOR, ".reference").text == (
            f"Reference answer: {reference}")
        evil = driver.find_element(By.CSS_SELECTOR, '.sample[data-id="evil"] .chunk .text')
        assert evil.text == HOSTILE  # shown as text, not run
        assert len(driver.find_elements(By.CSS_SELECTOR, ".plots img")) == 3

        Select(driver.find_element(By.ID, "status")).select_by_value("unscored")
        assert [s.get_attribute("data-id") for s in shown()] == ["empty"]
        assert error and error in shown()[0].find_element(By.CSS_SELECTOR, ".error").text
        assert driver.find_element(By.ID, "shown").text == "1"

        Select(driver.find_element(By.ID, "status")).select_by_value("all")
        Select(driver.find_element(By.ID, "verdicts")).select_by_value("none")
        no_relevant = {s.get_attribute("data-id") for s in shown()}
        expected = {r["id"] for r in result.rows() if r["score"] is not None
                    and not any(r["verdicts"])}
        assert no_relevant == expected

        Select(driver.find_element(By.ID, "verdicts")).select_by_value("any")
        driver.find_element(By.ID, "worst").click()
        scores = [r["score"] for r in result.rows() if r["score"] is not None]
        drawn = [s.find_element(By.CSS_SELECTOR, ".score").text for s in shown()]
        assert drawn[:len(scores)] == [f"score {v:.4f}" for v in sorted(scores)]
        assert drawn[-1] == "unscored"  # unscored samples last

        search = driver.find_element(By.ID, "search")
        search.send_keys("pwned")
        assert [s.get_attribute("data-id") for s in shown()] == ["evil"]
        search.clear()
        search.send_keys("no such words here")
        assert driver.find_element(By.ID, "none-shown").is_displayed()
        search.clear()
        search.send_keys(" ")
        driver.execute_script("document.getElementById('samples').scrollIntoView()")
        assert driver.save_screenshot(str(tmp_path / "report.png"))
        driver.set_window_size(1200, 4000)
        driver.execute_script("window.scrollTo(0, 0)")
        assert driver.save_screenshot(str(tmp_path / "report_full.png"))
    finally:
        driver.quit()
    assert (tmp_path / "report.png").stat().st_size > 10_000


@pytest.mark.browser
def test_a_10000_query_report_opens_and_filters_fast_and_shows_what_was_missed(
    tmp_path: Path,
) -> None:
    """The report of a 10,000-query run holds every sample, draws one page of them, filters
    and sorts in the browser, and shows a zero-scoring sample's missed relevant documents."""
    from selenium.webdriver.common.by import By

    records = []
    for i in range(10_000):
        hit = i % 4 != 0  # every fourth query retrieves none of its two relevant documents
        records.append({
            "id": f"q{i:05d}", "user_input": f"question number {i}",
            "retrieved_contexts": [f"chunk {i} a", f"chunk {i} b", f"chunk {i} c"],
            "retrieved_context_ids": [f"d{i}a", f"d{i}b" if hit else f"x{i}b", f"d{i}c"],
            "reference_context_ids": [f"d{i}b", f"r{i}"] if hit else [f"r{i}", f"s{i}"],
            "reference_contexts": ["relevant text", f"relevant text of r{i}"] if hit
            else [f"relevant text of r{i}", f"relevant text of s{i}"],
        })
    data = tmp_path / "big.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    result = run_cli("metric=id_ranked", "dataset=jsonl", f"dataset.path={data}",
                     "tracking=none", "run.quiet=true", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    html_path = result.out_dir / "report.html"
    assert len(report_rows(html_path.read_text("utf-8"))) == 10_000
    driver = chromium()
    try:
        driver.get(html_path.as_uri())  # returns after the load event: the script has run
        timing = driver.execute_script(
            "var t = performance.getEntriesByType('navigation')[0];"
            "return [t.domContentLoadedEventEnd, t.loadEventEnd];")
        assert max(timing) < 2000, timing  # ms from navigation to a drawn first page
        assert len(driver.find_elements(By.CSS_SELECTOR, "#samples-list .sample")) == 50
        assert driver.find_element(By.ID, "pages").text == "200"

        took = driver.execute_script("""
            var t0 = performance.now(), q = document.getElementById('search');
            q.value = 'number 9999'; q.dispatchEvent(new Event('input'));
            var filtered = performance.now() - t0;
            q.value = ''; q.dispatchEvent(new Event('input'));
            var t1 = performance.now();
            document.getElementById('worst').click();
            return [filtered, performance.now() - t1];""")
        assert max(took) < 2000, took
        first = driver.find_element(By.CSS_SELECTOR, "#samples-list .sample")
        assert first.find_element(By.CSS_SELECTOR, ".score").text == "score 0.0000"
        worst_id = first.get_attribute("data-id")
        assert int(worst_id[1:]) % 4 == 0
        missed = first.find_elements(By.CSS_SELECTOR, ".missed li")
        i = int(worst_id[1:])
        assert [m.find_element(By.CSS_SELECTOR, ".meta").text for m in missed] == [
            f"id r{i} · grade 1.000", f"id s{i} · grade 1.000"]
        assert missed[0].find_element(By.CSS_SELECTOR, ".text").text == f"relevant text of r{i}"
        driver.find_element(By.ID, "next").click()
        assert driver.find_element(By.ID, "page").text == "2"
        assert driver.save_screenshot(str(tmp_path / "report_10k.png"))
    finally:
        driver.quit()


@pytest.mark.browser
def test_a_report_of_several_variants_in_headless_chromium(tmp_path: Path) -> None:
    """A section per variant with its own mean, and each sample shows every variant's score,
    the numbers of summary.json and samples.jsonl as drawn by the browser."""
    from selenium.webdriver.common.by import By

    listed = ["id_ranked", "non_llm", "llm_with_reference"]
    result = run_cli(f"metric=[{','.join(listed)}]", "judge=fixture", "tracking=none",
                     "run.quiet=true", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert report_main([str(result.out_dir)]) == 0  # rebuilt: with its plots
    variants, rows = result.summary()["variants"], result.rows()
    driver = chromium()
    try:
        driver.get((result.out_dir / "report.html").as_uri())
        summary = dict(r.text.split(" ", 1) for r in driver.find_elements(
            By.CSS_SELECTOR, "table.summary tr"))
        first = f"{variants['id_ranked']['mean']:.4f} (id_ranked, the first variant)"
        assert summary["mean"] == first
        headings = driver.find_elements(By.CSS_SELECTOR, "h3[id^='variant-']")
        assert [h.text for h in headings] == listed
        for name in listed:
            table = driver.find_element(By.CSS_SELECTOR, f"#variant-{name} + table.variant")
            facts = dict(r.text.split(" ", 1) for r in table.find_elements(By.TAG_NAME, "tr"))
            assert facts["mean"] == f"{variants[name]['mean']:.4f}"
        q01 = driver.find_element(By.CSS_SELECTOR, '.sample[data-id="q01"]')
        shown = [v.text for v in q01.find_elements(By.CSS_SELECTOR, ".variant")]
        first = next(r for r in rows if r["id"] == "q01")["variants"]
        assert shown == [f"{name} {first[name]['score']:.4f}" for name in listed]
        assert len(driver.find_elements(By.CSS_SELECTOR, ".plots img")) == 3
        assert driver.save_screenshot(str(tmp_path / "variants.png"))
    finally:
        driver.quit()
