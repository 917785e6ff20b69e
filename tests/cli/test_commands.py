"""The one ``harness`` command (issue 32, item 5): ``compare``, ``report``, ``cache`` and ``label``
as its first word run those commands, anything else is the Hydra app; a bare first word close to a
command's name is a typo (one line, exit 2); the old forms (``python -m harness.compare``,
``python -m harness.report``, ``harness-compare``, ``harness-cache``) still work, with a
DeprecationWarning naming 0.3.0."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import commands


def harness(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
            *args: str, entry: str = "main") -> tuple[int, str, str]:
    """``harness ARGS`` in this process: exit code, stdout, stderr."""
    monkeypatch.setattr(sys, "argv", ["harness", *args])
    try:
        getattr(commands, entry)()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else int(e.code is not None)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(("word", "usage"), [
    ("compare", "usage: harness compare experiment=NAME [key=value ...]\n"
                "       harness compare baseline=RUN candidate=RUN"),
    ("report", "usage: harness report RUN_DIR|SWEEP_DIR|RUN_ID [tracking_uri=URI] [out=FILE]\n"),
    ("cache", "usage: harness cache [-h] [--cache-path PATH] [--cache-url URL]"),
])
def test_each_command_answers_help_under_its_new_name(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        word: str, usage: str) -> None:
    code, out, err = harness(monkeypatch, capsys, word, "--help")
    assert code == 0 and err == ""
    assert out.startswith(usage), out[:200]


@pytest.mark.parametrize(("args", "code", "line"), [
    (("report", "/nope/run"), 2, "error: /nope/run is neither a folder nor an MLflow run id"),
    (("report",), 2, "error: give a run folder, a sweep folder or an MLflow run id first: "
                     "harness report RUN_DIR|SWEEP_DIR|RUN_ID"),
    (("cache", "stats"), 2, "error: harness cache: argument command: invalid choice: 'stats' "
                            "(choose from 'info', 'prune'); see harness cache --help"),
    (("cache", "prune", "--older-than", "3x"), 2, "error: harness cache prune: argument "
                                                  "--older-than: expected an age like 30d"),
    (("compare", "--bogus"), 2, "error: "),
])
def test_a_command_refuses_wrong_input_in_one_line_naming_itself(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        args: tuple[str, ...], code: int, line: str) -> None:
    monkeypatch.chdir(tmp_path)
    got, out, err = harness(monkeypatch, capsys, *args)
    lines = err.strip().splitlines()
    assert got == code and len(lines) == 1, err
    assert lines[0].startswith(line), lines[0]


def test_cache_info_reads_the_file_it_is_given(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    where = tmp_path / "verdicts.sqlite"
    code, out, _ = harness(monkeypatch, capsys, "cache", "info", "--cache-path", str(where))
    assert code == 0
    assert out == f"{where}: no verdict cache yet (judged runs create it)\n"


@pytest.mark.parametrize(("word", "meant"), [
    ("compar", "compare"), ("comapre", "compare"), ("reprot", "report"), ("reports", "report"),
    ("cahce", "cache"), ("caches", "cache"),
])
def test_a_typo_of_a_command_is_one_line_with_the_did_you_mean(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        word: str, meant: str) -> None:
    code, out, err = harness(monkeypatch, capsys, word, "a", "b")
    assert (code, out) == (2, "")
    assert err == (f"error: '{word}' is not a command (did you mean 'harness {meant}'?); the "
                   "commands: compare, report, cache, label; an override is KEY=VALUE\n")


@pytest.mark.parametrize("args", [("nonsense",), ("metric",), ("sweep", "x")])
def test_a_bare_word_far_from_every_command_is_the_override_refusal(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        args: tuple[str, ...]) -> None:
    code, _, err = harness(monkeypatch, capsys, *args)
    assert code == 1
    assert err == (f"error: '{args[0]}': not an override; write KEY=VALUE "
                   "(e.g. metric=id_ranked)\n")


def test_harness_help_lists_every_command(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = harness(monkeypatch, capsys, "--help")
    assert code == 0
    assert "Compose your configuration from these groups" in out  # Hydra's help, first
    listed = out.split("== Commands ==", 1)[1]
    assert [line.split()[1] for line in listed.splitlines() if line.startswith("  harness ")] \
        == ["compare", "report", "cache", "label"]


@pytest.mark.parametrize(("entry", "usage"), [
    ("compare_shim", "usage: harness-compare experiment=NAME"),
    ("cache_shim", "usage: harness-cache [-h]"),
])
def test_the_old_scripts_still_work_with_a_deprecation_warning(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        entry: str, usage: str) -> None:
    with pytest.warns(DeprecationWarning, match=r"is now 'harness (compare|cache)'; the old "
                                                r"form works until 0\.3\.0"):
        code, out, _ = harness(monkeypatch, capsys, "--help", entry=entry)
    assert code == 0 and out.startswith(usage)


@pytest.mark.slow
@pytest.mark.parametrize(("command", "usage"), [
    (["-m", "harness", "compare", "--help"], "usage: harness compare experiment=NAME"),
    (["-m", "harness.compare", "--help"], "usage: python -m harness.compare experiment=NAME"),
    (["-m", "harness.report", "--help"], "usage: python -m harness.report RUN_DIR"),
    (["-m", "harness", "report", "--help"], "usage: harness report RUN_DIR"),
])
def test_every_form_runs_as_a_process(tmp_path: Path, command: list[str], usage: str) -> None:
    done = subprocess.run([sys.executable, "-W", "always::DeprecationWarning", *command],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(usage)
    old = "harness." in command[1]
    assert ("the old form works until 0.3.0" in done.stderr) is old, done.stderr
