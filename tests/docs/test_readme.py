"""The README's commands run as written (those that need no API key or extra data)."""

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

README = (ROOT / "README.md").read_text("utf-8")
COMMANDS = [
    "python -m harness metric=id_based",
    "python -m harness --cfg job metric=non_llm",
    "python -m harness metric=non_llm metric.measure=jaro_winkler metric.threshold=0.7",
    "python -m harness metric=id_based tracking=none run.limit=100",
    "python -m harness -m metric=id_based,id_ranked,non_llm",
    "python -m harness dataset=scifact retriever=bm25 retriever.top_k=5 metric=id_ranked",
    "python -m harness.cli.cache info",
]


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_runs(tmp_path: Path, command: str, mlflow_store: str) -> None:
    assert command in README  # the README still shows it
    args = shlex.split(command)[1:]
    proc = subprocess.run(
        [sys.executable, *args], cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "MLFLOW_TRACKING_URI": mlflow_store},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr


def test_readme_python_api_example_runs() -> None:
    block = README.split("## Python API", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    lines = block.splitlines()
    end = next(i for i, line in enumerate(lines) if "llm_with_reference" in line)
    runnable = "\n".join(lines[:end])
    namespace: dict[str, Any] = {}
    exec(runnable, namespace)  # noqa: S102 - the README's own example
    result = namespace["result"]
    assert result.scores == [0.9999999999]  # the Paris chunk is relevant, Berlin is not
