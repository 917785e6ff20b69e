"""The printed MLflow link of a run with human labels, opened as a newcomer opens it: at
1,400 × 900 px in headless Chromium against a real ``mlflow ui``, the first screen shows
the run's headline, its PPI++ mean (``ppi_mean``) and its interval's bounds (``ci_low``,
``ci_high``), as columns and values inside the viewport and not covered (by MLflow's
Assistant panel or anything else). Screenshot: tmp_path/headline.png.

The run is a real CLI run (``judge=fixture``, people's labels on 20 of 60 samples) logged by
the CLI's own logging helper into a SQLite store in tmp_path; the expected PPI++ mean comes
from ``ppi_py`` on arrays built here."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from helpers.chroma_server import free_port
from run.test_headline import args, expected, make_world
from tracking.test_mlflow_first_screen import HEIGHT, WIDTH, _visible

from harness.tracking.mlflow.ui import LOCAL_UI


@pytest.mark.browser
@pytest.mark.slow
def test_the_printed_runs_link_shows_the_headline_on_the_first_screen(tmp_path: Path) -> None:
    from report.test_html import chromium
    from selenium.webdriver.support.wait import WebDriverWait

    world = make_world(tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    result = run_cli(*args(world, "run.report=false"), cwd=tmp_path,
                     env={"MLFLOW_TRACKING_URI": uri})
    assert result.returncode == 0, result.stderr
    printed = re.search(r"\n  mlflow runs +(\S+)\n", result.stdout)
    assert printed is not None, result.stdout
    want = expected(world)
    assert result.summary()["headline"]["value"] == pytest.approx(want["mean"], rel=1e-9)

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
        driver.get(printed.group(1).replace(LOCAL_UI, base))  # the link, on this port
        assert driver.execute_script("return [innerWidth, innerHeight]") == [WIDTH, HEIGHT]

        def header(name: str) -> Any:
            found = [e for e in driver.find_elements("css selector", "th, [role=columnheader]")
                     if e.text.strip() == name]
            return found[0] if found else None

        def cell(value: float) -> Any:
            digits = f"{value:.17g}"[:10]  # the table shows the logged value, cut
            return next((e for e in driver.find_elements(
                "xpath", f"//*[starts-with(normalize-space(text()), '{digits}')]")), None)

        first = WebDriverWait(driver, 90).until(lambda d: header("ppi_mean"))
        value = WebDriverWait(driver, 30).until(lambda d: cell(want["mean"]))
        time.sleep(2)  # MLflow's Assistant panel opens on a local server's first load
        driver.save_screenshot(str(tmp_path / "headline.png"))
        names = [e.text.strip() for e in driver.find_elements(
            "css selector", "th, [role=columnheader]") if e.text.strip()]
        metrics = names[names.index("ppi_mean"):]
        assert metrics[:4] == ["ppi_mean", "ci_low", "ci_high", "mean"]
        lo, hi = want["ci"]
        for element in (first, value, header("ci_low"), header("ci_high"), cell(lo), cell(hi)):
            assert element is not None
            seen = _visible(driver, element)
            assert seen["inside"] and seen["drawn"], (element.text, seen)
    finally:
        if driver is not None:
            driver.quit()
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
