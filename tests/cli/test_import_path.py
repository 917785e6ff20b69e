"""Issue 24, class 2: the working folder is never on the harness's import path, whichever
command runs (``python -m harness[.compare|.report|.cache]`` puts it first; the installed
``harness`` never has it), so a stray ``tqdm.py`` there never runs; and the user's own
package named in ``trusted_targets`` is found there by both commands, as the README says.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import TEST_DATA
from helpers.cli import cli_env

import harness.core as core
from harness.core.resolve import allow_from_start_dir

BEIR = ("dataset=beir", f"dataset.path={TEST_DATA / 'beir_tiny'}", "metric=id_ranked",
        "tracking=none", "run.progress=false")
#: Modules the harness imports (at start-up, or when it runs), as stray files would shadow.
STRAY = ("tqdm", "yaml", "hydra", "omegaconf", "mlflow", "numpy", "typing", "signal",
         "jinja2", "rapidfuzz")


def stray_files(cwd: Path) -> Path:
    """A stray ``NAME.py`` per module of ``STRAY``, each writing a marker if it ever runs."""
    marker = cwd / "STRAY_RAN"
    for name in STRAY:
        (cwd / f"{name}.py").write_text(
            f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\n", "utf-8")
    return marker


def command(name: str) -> list[str]:
    """The installed console script ``name`` (next to this interpreter)."""
    path = Path(sys.executable).with_name(name)
    if not path.exists():
        pytest.skip(f"{name} is not installed next to {sys.executable}")
    return [str(path)]


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=cli_env(None), capture_output=True, text=True,
                          timeout=180)


USER_PACKAGE = """
    from harness.core.types import Hit

    class FirstTwo:
        def search(self, queries):
            return [[Hit("d1", "one"), Hit("d2", "two")] for _ in queries]

    def make():
        return FirstTwo()
"""


@pytest.mark.slow
def test_stray_files_never_shadow_what_the_harness_imports(tmp_path: Path) -> None:
    marker = stray_files(tmp_path)
    py = [sys.executable, "-m"]
    for argv in ([*py, "harness", *BEIR, "retriever=bm25", f"hydra.run.dir={tmp_path / 'a'}"],
                 [*command("harness"), *BEIR, "retriever=bm25",
                  f"hydra.run.dir={tmp_path / 'b'}"],
                 [*py, "harness.report", str(tmp_path / "a")],
                 [*py, "harness.compare", "--help"],
                 [*py, "harness.cache", "info", f"--cache-path={tmp_path / 'c.db'}"]):
        result = run(argv, tmp_path)
        assert result.returncode == 0, (argv, result.stderr[-2000:])
        assert not marker.exists(), (argv, marker.read_text())
    assert (tmp_path / "a" / "report.html").is_file()


@pytest.mark.slow
def test_both_commands_find_the_trusted_package_in_the_working_folder(tmp_path: Path) -> None:
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("", "utf-8")
    (tmp_path / "mypkg" / "search.py").write_text(textwrap.dedent(USER_PACKAGE), "utf-8")
    stray_files(tmp_path)
    args = [*BEIR, "retriever=custom", "retriever._target_=mypkg.search.make",
            "trusted_targets=[mypkg.*]"]
    rows = {}
    for name, argv in (("module", [sys.executable, "-m", "harness"]),
                       ("script", command("harness"))):
        result = run([*argv, *args, f"hydra.run.dir={tmp_path / name}"], tmp_path)
        assert result.returncode == 0, (name, result.stderr[-2000:])
        rows[name] = [json.loads(x)["retrieved_context_ids"]
                      for x in (tmp_path / name / "samples.jsonl").read_text().splitlines()]
    assert rows["module"] == rows["script"] == [["d1", "d2"]] * 4
    assert not (tmp_path / "STRAY_RAN").exists()
    # untrusted, it is not imported from there (nor from anywhere)
    result = run([sys.executable, "-m", "harness", *BEIR, "retriever=custom",
                  "retriever._target_=mypkg.search.make", f"hydra.run.dir={tmp_path / 'c'}"],
                 tmp_path)
    assert result.returncode == 2 and "is not trusted" in result.stderr


def test_the_guard_removes_the_working_folder_for_the_harness_only(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cwd = core.START_DIR
    cases = [
        (["python", "-m", "harness", "x=1"], [cwd, "/lib"], ["/lib"]),
        (["python", "-m", "harness.compare"], ["", "/lib"], ["/lib"]),
        (["python", "-m", "harness.report", "d"], [".", "/lib"], ["/lib"]),
        # another program that imports harness keeps its path as it is
        (["python", "-m", "mypkg.tool"], [cwd, "/lib"], [cwd, "/lib"]),
        (["python", "script.py"], [cwd, "/lib"], [cwd, "/lib"]),
        # the installed command: its bin folder is first, not the working folder
        (["/venv/bin/harness"], ["/venv/bin", cwd], ["/venv/bin", cwd]),
    ]
    for argv, path, expected in cases:
        monkeypatch.setattr(sys, "orig_argv", argv)
        monkeypatch.setattr(sys, "path", list(path))
        core.guard_import_path()
        assert sys.path == expected, argv


def test_a_trusted_name_is_looked_up_in_the_start_folder_after_installed_ones() -> None:
    import importlib.machinery

    allow_from_start_dir("json")  # the standard library: never from the working folder
    allow_from_start_dir("os")
    allow_from_start_dir("harness")
    allow_from_start_dir("nosuchpkg_for_the_finder")
    finder = next(f for f in sys.meta_path if type(f).__name__ == "_TrustedStartDir")
    assert {"json", "os", "harness"}.isdisjoint(finder.names)
    assert "nosuchpkg_for_the_finder" in finder.names
    # after the finder of sys.path: an installed package of the same name wins
    assert sys.meta_path.index(finder) > sys.meta_path.index(importlib.machinery.PathFinder)
    with pytest.raises(ModuleNotFoundError):
        __import__("nosuchpkg_for_the_finder")
    assert os.path.isabs(core.START_DIR)
