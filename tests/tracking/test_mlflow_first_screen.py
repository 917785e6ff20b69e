"""The MLflow runs view a user opens from the printed link, at 1,400 × 900 px in headless
Chromium against a real ``mlflow ui`` (issue 35, item 4): the ``mean`` column and a run's
mean are on the first screen (inside the viewport and not covered, by MLflow's Assistant
panel or anything else), next to how many samples it covers; no shared-view banner; the
low-coverage run says so first in its name.

The runs are logged by the harness's own store code (what a CLI run's logging process
calls) into a SQLite store in tmp_path."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from helpers.chroma_server import free_port

from harness.core.types import RunRecord
from harness.tracking.mlflow import ui
from harness.tracking.mlflow.store import close_run, open_run

WIDTH, HEIGHT = 1400, 900
BANNER = "You're viewing a shared view"
#: Every metric a bm25 run of ``id_ranked`` logs, in the order the harness computes them.
NAMES = ["mean", "n_samples", "n_scored", "n_unscored", "duration_s", "recall_at_5",
         "ndcg_at_5", "precision_at_5", "hit_rate_at_5", "map_at_5", "recall_at_10",
         "ndcg_at_10", "precision_at_10", "hit_rate_at_10", "map_at_10", "mrr",
         "retrieval_p50_ms", "retrieval_p95_ms", "retrieval_max_ms", "retrieval_mean_ms",
         "retrieval_first_ms", "prepare_s", "index_build_s", "index_bytes", "scoring_s",
         "retrieval_depth"]
BASE = "id_ranked·jsonl·path=questions.jsonl·corpus=corpus.jsonl·bm25"
#: (name, mean, scored): three full runs and one that scored 7 of its 32 samples.
RUNS = [(f"{BASE}·top_k=3", 0.6197916666666666, 32), (f"{BASE}·top_k=10", 0.615625, 32),
        (f"{BASE}·top_k=10·k1=0.9", 0.6033854166666667, 32),
        (f"{BASE}·top_k=10".replace("questions", "sparse"), 0.6654761904761904, 7)]

#: Whether an element is inside the viewport and the one drawn at its centre (or inside it).
ON_SCREEN = """
const e = arguments[0], b = e.getBoundingClientRect();
const x = (b.left + b.right) / 2, y = (b.top + b.bottom) / 2;
const top = document.elementFromPoint(x, y);
return {box: [b.left, b.top, b.right, b.bottom],
        inside: b.left >= 0 && b.top >= 0 && b.right <= innerWidth && b.bottom <= innerHeight,
        drawn: top !== null && (e === top || e.contains(top) || top.contains(e))};
"""


def _store(tmp_path: Path) -> tuple[str, str]:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    exp = ""
    for i, (name, mean, scored) in enumerate(RUNS):
        metrics = {m: 0.5 + i / 100 for m in NAMES}
        metrics.update(mean=mean, n_samples=32.0, n_scored=float(scored),
                       n_unscored=float(32 - scored))
        run, exp = open_run(uri, "harness", name, {})
        close_run(uri, run, RunRecord(params={"run.objective": "mean"}, metrics=metrics,
                                      tags={"mlflow.note.content": f"Mean {mean:.4f}."}))
    return uri, exp


def _visible(driver: Any, element: Any) -> dict[str, Any]:
    seen: dict[str, Any] = driver.execute_script(ON_SCREEN, element)
    return seen


@pytest.mark.browser
@pytest.mark.slow
def test_the_runs_link_shows_the_mean_on_the_first_screen(tmp_path: Path) -> None:
    from report.test_html import chromium
    from selenium.webdriver.support.wait import WebDriverWait

    uri, exp = _store(tmp_path)
    port = free_port()
    mlflow = Path(sys.executable).with_name("mlflow")
    server = subprocess.Popen([str(mlflow), "ui", "--backend-store-uri", uri, "--host",
                               "127.0.0.1", "--port", str(port), "--workers", "1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)  # its uvicorn workers end with it
    driver = None
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(240):
            try:
                urllib.request.urlopen(base, timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        driver = chromium()
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False})
        driver.get(ui.runs_link(base, exp))
        assert driver.execute_script("return [innerWidth, innerHeight]") == [WIDTH, HEIGHT]

        def header(name: str) -> Any:
            found = [e for e in driver.find_elements("css selector", "th, [role=columnheader]")
                     if e.text.strip() == name]
            return found[0] if found else None

        mean = WebDriverWait(driver, 90).until(lambda d: header("mean"))
        low = WebDriverWait(driver, 30).until(lambda d: next(
            (e for e in d.find_elements("xpath", "//*[starts-with(normalize-space(text()),"
                                                 " '0.66547619')]")), None))
        time.sleep(2)  # MLflow's Assistant panel opens on a local server's first load
        driver.save_screenshot(str(tmp_path / "runs.png"))
        for element in (mean, header("n_scored"), header("n_unscored"), low):
            seen = _visible(driver, element)
            assert seen["inside"] and seen["drawn"], (element.text, seen)
        body = driver.find_element("tag name", "body").text
        assert BANNER not in body
        assert "⚠ 7/32" in body  # the low-coverage run's name starts with its mark
        assert "viewStateShareKey" not in driver.current_url
    finally:
        if driver is not None:
            driver.quit()
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
