"""The README read top to bottom, as a new user runs it: every command of its ``bash`` blocks
in order, in one empty folder, with the README's own example data (its JSON line as
``runs/bm25.jsonl``, its retriever as ``mypkg/search.py``) and MLflow's default store. A
later command may use what an earlier one made (the compare example names the sweep's jobs),
so they run as one sequence, not one by one."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.paths import ROOT

from harness.cli.deps import INSTALL

README = (ROOT / "README.md").read_text("utf-8")


def blocks(language: str) -> list[str]:
    """The README's fenced blocks of ``language``, in order."""
    return re.findall(rf"```{language}\n(.*?)```", README, re.S)


def commands() -> list[str]:
    """Every command of the README's ``bash`` blocks, in order: continued lines joined,
    comments dropped, ``a && b`` split."""
    out = []
    for block in blocks("bash"):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            out.extend(" ".join(part.split()) for part in line.split(" && ") if part.strip())
    return out


#: What the sequence does with a command that is not ``python -m harness``: the set-up and
#: the test command run in this environment (the session that runs this test).
SET_UP = {"python3 -m venv .venv", ". .venv/bin/activate", "pip install -e .",
          "pip install -e '.[test]'", "python -m pytest -n 2"}


def test_the_readme_commands_are_the_expected_sequence() -> None:
    """What the sequence below runs: a command added to the README joins it, or fails here."""
    found = commands()
    assert [c for c in found if c in SET_UP] == [
        "python3 -m venv .venv", ". .venv/bin/activate", "pip install -e .",
        "pip install -e '.[test]'", "python -m pytest -n 2"]
    assert " && ".join(found[:3]) == INSTALL  # the line a Python without the libraries shows
    harness = [c for c in found if c not in SET_UP]
    assert all(c.startswith("python -m harness ") for c in harness), harness
    assert harness[0] == "python -m harness metric=id_based"  # the quick start
    assert harness[-1].startswith("python -m harness compare baseline=")
    assert len(harness) == 6


@pytest.mark.slow
def test_the_readme_runs_top_to_bottom(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "bm25.jsonl").write_text(blocks("json")[0], "utf-8")
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "search.py").write_text(blocks("python")[0], "utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    outputs = {}
    for command in commands():
        if command in SET_UP:
            continue
        proc = subprocess.run([sys.executable, *shlex.split(command)[1:]], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, (command, proc.stderr[-3000:])
        assert "Traceback" not in proc.stderr, command
        assert not re.search(r"^error:", proc.stderr, re.M), (command, proc.stderr)
        outputs[command] = proc.stdout
    assert (tmp_path / "mlflow.db").is_file()  # MLflow's default store, as the README says
    compare = outputs[commands()[-1]]
    # the two jobs of the bm25 sweep the example names, each found by its overrides
    assert re.search(r"\| baseline +\| k1=1\.2·top_k=10 +\|", compare), compare
    assert re.search(r"\| candidate +\| k1=0\.9·top_k=5 +\|", compare), compare
    assert "n pairs          50" in compare  # scifact_mini's 50 queries, scored by both
