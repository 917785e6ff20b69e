"""Issue 31, class 8: every command the package installs answers a wrong input with one
``error:`` line naming what is wrong and what to write, with the exit code of
docs/reference/errors.md (1 Hydra cannot compose, 2 bad input), never a usage block, Hydra's
search path listing or a traceback; what a line suggests works."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import CliResult, run_cli

from harness.cli.cache import main as cache_main
from harness.cli.compare import main as compare_main
from harness.cli.report import main as report_main


def one_error(code: int, err: str, *fragments: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err and "usage:" not in err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def cli_error(result: CliResult, code: int, *fragments: str) -> str:
    assert result.returncode == code, (result.returncode, result.stderr)
    assert not (result.out_dir / "samples.jsonl").exists()
    return one_error(code, result.stderr, *fragments)


@pytest.mark.parametrize(("args", "code", "fragments"), [
    (("--bogus",), 2, ("unrecognized arguments: --bogus", "harness --help")),
    (("--cfg", "bogus"), 2, ("invalid choice: 'bogus'", "job")),
    (("--config-name", "nope"), 1, ("'nope'",)),
    (("--config-path", "/nope/conf"), 1, ("/nope/conf",)),
    (("hydra/launcher=nope",), 1, ("hydra/launcher/nope", "the options: basic")),
    (("experiment=nope",), 1, ("not an experiment option", "scifact_bm25")),
    (("~metric",), 1, ("a run needs a metric", "metric=NAME")),
    (("~dataset",), 1, ("a run needs a dataset",)),
    (("=x",), 1, ("no setting before '='",)),
    (("nonsense",), 1, ("not an override", "KEY=VALUE")),
    (("~dataset.path",), 1, ("dataset.path",)),
])
def test_the_main_command_answers_wrong_input_in_one_line(
        tmp_path: Path, args: tuple[str, ...], code: int, fragments: tuple[str, ...]) -> None:
    line = cli_error(run_cli(*args, "tracking=none", cwd=tmp_path), code, *fragments)
    assert "Config search path" not in line and "hydra.cc" not in line


@pytest.mark.parametrize("group", ["metric=id_ranked", "dataset=sample", "judge=local"])
def test_a_plus_on_a_chosen_group_says_to_drop_it_and_that_works(tmp_path: Path,
                                                                 group: str) -> None:
    line = cli_error(run_cli(f"+{group}", "tracking=none", cwd=tmp_path), 1,
                     "in the config's defaults already")
    assert line.endswith(f"write {group}")
    result = run_cli(group, "tracking=none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.summary()["n_scored"] == 30  # the bundled dataset's 30 questions


@pytest.mark.parametrize(("args", "fragments"), [
    ([], ("give a run folder",)),
    (["--bogus"], ("got '--bogus'", "give a run folder")),
    (["out=r.html"], ("got 'out=r.html'",)),
    (["/nope/run"], ("/nope/run is neither a folder nor an MLflow run id",)),
])
def test_report_answers_wrong_input_in_one_error_line(
        capsys: pytest.CaptureFixture[str], args: list[str], fragments: tuple[str, ...]
) -> None:
    assert report_main(args) == 2
    one_error(2, capsys.readouterr().err, *fragments)


@pytest.mark.parametrize(("args", "fragments"), [
    ([], ("give a command: info or prune",)),
    (["stats"], ("invalid choice: 'stats'",)),
    (["prune", "--older-than", "3x"], ("harness-cache prune", "30d")),
    (["info", "extra"], ("unrecognized arguments: extra",)),
    (["prune"], ("prune needs",)),
])
def test_cache_answers_wrong_input_in_one_error_line(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        args: list[str], fragments: tuple[str, ...]) -> None:
    monkeypatch.chdir(tmp_path)
    try:
        code = cache_main(args)
    except SystemExit as e:
        code = int(e.code or 0)
    assert code == 2
    one_error(2, capsys.readouterr().err, *fragments)


@pytest.mark.parametrize(("args", "fragments"), [
    (["--bogus"], ("expected key=value", "--bogus")),
    ([], ("experiment=NAME is required",)),
    (["experiment=x", "fail_if_worse=maybe"], ("fail_if_worse", "maybe")),
])
def test_compare_answers_wrong_input_in_one_error_line(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        args: list[str], fragments: tuple[str, ...]) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        compare_main(args)
    assert stopped.value.code == 2
    one_error(2, capsys.readouterr().err, *fragments)


@pytest.mark.slow
@pytest.mark.parametrize("command", [
    ["-m", "harness", "--bogus"], ["-m", "harness.report"], ["-m", "harness.report", "/nope"],
    ["-m", "harness.cache", "stats"], ["-m", "harness.cli.cache"],
    ["-m", "harness.compare", "--bogus"],
])
def test_each_installed_command_as_a_process(tmp_path: Path, command: list[str]) -> None:
    done = subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", *command],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    one_error(2, done.stderr)


@pytest.mark.slow
def test_a_read_only_trace_store_is_our_line_alone(tmp_path: Path) -> None:
    from helpers.traced_rag import record

    traced = record(f"sqlite:///{tmp_path / 'mlflow.db'}", "app")
    read_only = f"sqlite:///file:{tmp_path / 'mlflow.db'}?mode=ro&uri=true"
    result = run_cli("dataset=mlflow_traces", "dataset.experiment_name=app",
                     f"dataset.tracking_uri='{read_only}'", "dataset.feedback=true",
                     "metric=id_ranked", "tracking=none", "run.progress=false", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    line = one_error(2, result.stderr, "cannot write feedback on trace", "readonly")
    assert any(t in line for t in traced.traces.values())
    assert "SQLAlchemy" not in result.stderr and "INSERT INTO" not in result.stderr
