"""The README's commands run as written (those that need no API key or extra data), its
quick start prints what it shows, and its examples are the docs' own."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.cli import run_cli
from helpers.paths import ROOT

README = (ROOT / "README.md").read_text("utf-8")
DOCS = ROOT / "docs"
#: The README and every page: a command may live on any of them.
CORPUS = "\n".join([README, *(p.read_text("utf-8") for p in sorted(DOCS.rglob("*.md")))])
COMMANDS = [
    "python -m harness metric=id_based",
    "python -m harness --cfg job metric=non_llm",
    "python -m harness metric=non_llm metric.measure=jaro_winkler metric.threshold=0.7",
    "python -m harness metric=id_based tracking=none run.limit=100",
    "python -m harness -m metric=id_based,id_ranked,non_llm",
    "python -m harness cache info",
    "python -m harness -m dataset=scifact_mini retriever=bm25 retriever.k1=0.9,1.2 "
    "retriever.top_k=5,10",
]
#: Commands that read ../shared/data (SciFact): their own lane.
SHARED_COMMANDS = [
    "python -m harness dataset=scifact retriever=bm25 retriever.top_k=5 metric=id_ranked",
]


def run_command(command: str, cwd: Path, store: str) -> None:
    assert command in CORPUS  # the docs still show it
    args = shlex.split(command)[1:]
    proc = subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300,
        env={**os.environ, "MLFLOW_TRACKING_URI": store},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_docs_command_runs(tmp_path: Path, command: str, mlflow_store: str) -> None:
    run_command(command, tmp_path, mlflow_store)


@pytest.mark.slow
@pytest.mark.shared_data
@pytest.mark.parametrize("command", SHARED_COMMANDS)
def test_docs_command_on_shared_data_runs(tmp_path: Path, command: str, mlflow_store: str) -> None:
    run_command(command, tmp_path, mlflow_store)


def test_readme_commands_are_checked_here() -> None:
    """Every ``python -m harness…`` line of the README's quick start runs in a test."""
    first = README.split("```bash\n", 2)[2].split("```", 1)[0]  # after the install line
    assert first.strip() == "python -m harness metric=id_based"
    assert "python -m harness metric=id_based" in COMMANDS


def printed(block: str) -> list[tuple[str, str]]:
    """``(label, value)`` of each summary line (two spaces, a label, two or more spaces)."""
    out = []
    for line in block.splitlines():
        match = re.match(r"^  (\S+(?: \S+)?)\s{2,}(.*)$", line)
        assert match, f"not a summary line: {line!r}"
        out.append((match.group(1), match.group(2)))
    return out


def shape(value: str) -> str:
    """``value`` with what changes from run to run made generic: run ids, numbers."""
    value = re.sub(r"[0-9a-f]{32}", "RUN", value)
    return re.sub(r"\d[\d,]*", "0", value)  # 939 and 1,408 alike


def matches(shown: str, real: str) -> bool:
    """``shown`` (the README's, ``…`` for any text) fits ``real`` after ``shape``."""
    pattern = ".*".join(re.escape(part) for part in shape(shown).split("…"))
    return re.fullmatch(pattern, shape(real)) is not None


#: Lines whose value is the same on every run of the bundled dataset, to the character.
EXACT = ("metric", "mean", "scored", "retrieval", "cut-offs")


@pytest.mark.slow
def test_quick_start_prints_what_the_readme_shows(tmp_path: Path, mlflow_store: str) -> None:
    """The quick start's main job, run in-process in an empty folder: the same lines in the
    same order, the numbers of the bundled dataset to the character, and the timing, folder
    and run id lines in the README's shape. The session's MLflow store stands in for the
    default one (creating a store costs seconds); the README shows MLflow's default."""
    shown = printed(README.split("The main job prints a summary like\n\n```\n", 1)[1]
                    .split("```", 1)[0])
    # Hydra's default folder, outputs/DATE/TIME-MICROSECONDS, at another date and time
    result = run_cli("metric=id_based", "hydra.run.dir=outputs/2031-01-01/09-08-07-000001",
                     cwd=tmp_path, env={"MLFLOW_TRACKING_URI": mlflow_store})
    assert result.returncode == 0, result.stderr[-2000:]
    real = printed(result.stdout.strip("\n"))
    assert [label for label, _ in shown] == [label for label, _ in real]
    for (label, value), (_, actual) in zip(shown, real, strict=True):
        if label == "mlflow store":
            assert (value, actual) == ("sqlite:///mlflow.db", mlflow_store)
        elif label in EXACT:
            assert value == actual, label
        else:
            assert matches(value, actual), (label, value, actual)
    assert "recall_at_5" in dict(real)["retrieval"]  # run.retrieval_ks [5, 10], depth 6


def test_shape_check_can_fail() -> None:
    assert matches("0.013 s (2,276 samples/s)", "0.002 s (12,960 samples/s)")
    assert matches("0.032 s (939 samples/s)", "0.021 s (1,408 samples/s)")
    assert matches("sample (…/harness/data/sample_rag.jsonl)",
                   "sample (/tmp/x/harness/data/sample_rag.jsonl)")
    assert not matches("0.013 s (2,276 samples/s)", "0.013 s")
    assert not matches("outputs/2026-12-02/00-42-36-424836", "multirun/2026-12-02/00-42-36")


def test_readme_retriever_is_the_guides() -> None:
    """The tutorial's retriever and its sweep are the retrievers guide's, word for word."""
    guide = (DOCS / "guide" / "retrievers.md").read_text("utf-8")
    section = README.split("### Your own retriever", 1)[1]
    code = section.split("```python", 1)[1].split("```", 1)[0]
    command = section.split("```bash", 1)[1].split("```", 1)[0]
    assert code in guide.split("## Your own retriever", 1)[1]
    assert command in guide.split("## Your own retriever", 1)[1]


def test_python_api_example_runs() -> None:
    page = (DOCS / "guide" / "python-api.md").read_text("utf-8")
    block = page.split("```python", 1)[1].split("```", 1)[0]
    lines = block.splitlines()
    end = next(i for i, line in enumerate(lines) if "llm_with_reference" in line)
    runnable = "\n".join(lines[:end])
    namespace: dict[str, Any] = {}
    exec(runnable, namespace)  # noqa: S102 - the page's own example
    result = namespace["result"]
    assert result.scores == [0.9999999999]  # the Paris chunk is relevant, Berlin is not
