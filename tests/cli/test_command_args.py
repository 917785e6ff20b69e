"""Issue 24, class 6 in the small commands: a bad ``out=`` or path argument of
``python -m harness.report`` is one line and exit 2, checked before any work, and never
overwrites a file that is not a report."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import TEST_DATA, run_cli

from harness.cli.report import main as report_main

BEIR = ("dataset=beir", f"dataset.path={TEST_DATA / 'beir_tiny'}", "metric=id_ranked",
        "retriever=bm25", "tracking=none")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cwd = tmp_path_factory.mktemp("report_args")
    result = run_cli(*BEIR, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return result.out_dir


def report(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    code = report_main(list(args))
    return code, capsys.readouterr().err.splitlines()


def test_out_is_a_folder(run_dir: Path, tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    for folder in (tmp_path, run_dir):  # the example, and the run's own folder
        code, err = report(capsys, str(run_dir), f"out={folder}")
        assert code == 2
        assert err == [f"error: out={folder} is a folder; give the report's file "
                       f"name, e.g. out={folder / 'report.html'}"]


def test_out_in_a_missing_folder_or_over_another_file(
        run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = report(capsys, str(run_dir), f"out={tmp_path / 'no' / 'r.html'}")
    assert code == 2 and err == [f"error: out={tmp_path / 'no' / 'r.html'}: the folder "
                                 f"{tmp_path / 'no'} does not exist; create it or write elsewhere"]
    summary = run_dir / "summary.json"
    before = summary.read_bytes()
    code, err = report(capsys, str(run_dir), f"out={summary}")
    assert code == 2 and len(err) == 1 and "exists and is not an HTML report" in err[0]
    assert summary.read_bytes() == before  # the run's result is never overwritten
    code, err = report(capsys, str(run_dir), "out=")
    assert code == 2 and err == ["error: out= is empty: give the report's file name, "
                                 "e.g. out=report.html"]


def test_a_good_out_and_an_earlier_report_are_written(
        run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "mine.html"
    assert report_main([str(run_dir), f"out={out}"]) == 0
    assert "<html" in out.read_text("utf-8").lower()
    first = out.stat().st_mtime_ns
    assert report_main([str(run_dir), f"out={out}"]) == 0  # an HTML report: rewritten
    assert out.stat().st_mtime_ns >= first
    assert capsys.readouterr().err == ""


def test_a_store_that_cannot_be_opened_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = report(capsys, "0123456789abcdef0123456789abcdef",
                       "tracking_uri=postgresql://u:S3CRETpw@127.0.0.1:9/db")
    assert code == 2 and len(err) == 1 and err[0].startswith("error: ")
    assert "S3CRETpw" not in err[0]
