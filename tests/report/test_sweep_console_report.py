"""A sweep's console summary names its report (``report.html`` in the sweep folder) as a
single run's names its own, so a user can open it without looking for it."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli

SWEEP = ("-m", "metric=id_based,id_ranked", "run.progress=false", "tracking=none",
         "hydra.sweep.dir=sweep")


@pytest.mark.slow
def test_the_sweep_prints_the_path_of_its_report(tmp_path: Path) -> None:
    result = run_cli(*SWEEP, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = tmp_path / "sweep" / "report.html"
    assert report.is_file()
    lines = [x for x in result.stdout.splitlines() if x.startswith("report ")]
    assert lines == [f"report        {report}"]
    assert "id_ranked" in report.read_text("utf-8") and "0.5641" in report.read_text("utf-8")


@pytest.mark.slow
def test_no_report_no_line(tmp_path: Path) -> None:
    result = run_cli(*SWEEP, "run.report=false", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "sweep" / "report.html").exists()
    assert not [x for x in result.stdout.splitlines() if x.startswith("report ")]
