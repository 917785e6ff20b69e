"""A Python without the harness's libraries (the system's ``python3`` in a new shell, the
virtual environment not activated) gets one ``error:`` line naming what is missing and how
to set the harness up, exit 2: from ``python -m harness`` and from the installed ``harness``
command's entry point, for the Hydra app and for every command word alike."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from helpers.paths import ROOT

from harness.cli.deps import INSTALL, REQUIRED, missing

#: What the installed ``harness`` script runs (pip writes it from ``[project.scripts]``).
SCRIPT = "import sys; from harness.cli import main; sys.exit(main())"
SITE = Path(sysconfig.get_paths()["purelib"])


def _run(args: list[str], path: list[Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    """This interpreter without its site-packages (``-S``): only ``path`` to import from."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = os.pathsep.join(map(str, path))
    return subprocess.run([sys.executable, "-S", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)


def _one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert proc.stdout == ""
    return lines[0]


@pytest.mark.slow
@pytest.mark.parametrize("form", ["-m harness", "harness script"])
@pytest.mark.parametrize("args", [["metric=id_based"], ["compare", "experiment=harness"],
                                  ["--help"], ["report", "outputs"]])
def test_a_python_without_the_libraries_gets_one_line(tmp_path: Path, form: str,
                                                      args: list[str]) -> None:
    command = ["-m", "harness"] if form == "-m harness" else ["-c", SCRIPT]
    line = _one_error_line(_run([*command, *args], [ROOT], tmp_path))
    assert f"this Python ({sys.executable}) cannot import hydra-core, omegaconf," in line
    assert line.endswith(f"(. .venv/bin/activate), or set one up from the clone's root: "
                         f"{INSTALL}")
    assert INSTALL == "python3 -m venv .venv && . .venv/bin/activate && pip install -e ."
    assert not list(tmp_path.iterdir())  # nothing written


@pytest.mark.slow
@pytest.mark.parametrize("absent", ["hydra", "mlflow", "msgspec"])
def test_only_what_is_missing_is_named(tmp_path: Path, absent: str) -> None:
    """A folder holding every library but one (links into this environment's)."""
    libs = tmp_path / "libs"
    libs.mkdir()
    for module in REQUIRED:
        if module != absent:
            (libs / module).symlink_to(SITE / module)
    line = _one_error_line(_run(["-m", "harness", "metric=id_based"], [ROOT, libs], tmp_path))
    named = re.search(r"cannot import (.*), which", line)
    assert named and named.group(1) == REQUIRED[absent]


def test_this_environment_has_every_library() -> None:
    assert missing() == []


def test_the_list_is_pyprojects_dependencies() -> None:
    """Every dependency of ``pyproject.toml`` (and the extra it names) is checked, no other."""
    text = (ROOT / "pyproject.toml").read_text("utf-8")  # no tomllib on Python 3.10
    listed = re.sub(r"#[^\n]*", "", text.split("\ndependencies = [", 1)[1].split("\n]", 1)[0])
    requirements = re.findall(r'"([^"]+)"', listed)
    assert "mlflow>=3.0" in requirements  # the right list
    names = set()
    for requirement in requirements:
        match = re.match(r"([A-Za-z0-9_.-]+)(?:\[([^\]]*)\])?", requirement)
        assert match
        names.add(match.group(1))
        names.update(e.strip() for e in (match.group(2) or "").split(",") if e.strip())
    assert set(REQUIRED.values()) == names
