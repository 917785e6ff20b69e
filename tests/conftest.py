"""Shared fixtures: composing the config, and running the CLI in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
SHARED = ROOT.parent / "shared"
# dataset=scifact/trec_dl19/dbpedia_entity read $HARNESS_SHARED_DATA: pin it to the copy
# beside the checkout, whatever the working directory of the tests.
os.environ.setdefault("HARNESS_SHARED_DATA", str(SHARED / "data"))


@dataclass
class CliResult:
    """A finished CLI run."""

    returncode: int
    stdout: str
    stderr: str
    out_dir: Path

    def summary(self) -> dict:
        return json.loads((self.out_dir / "summary.json").read_text("utf-8"))

    def rows(self) -> list[dict]:
        text = (self.out_dir / "samples.jsonl").read_text("utf-8")
        return [json.loads(line) for line in text.splitlines()]


def run_cli(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120) -> CliResult:
    """Run ``python -m harness ARGS`` with outputs in ``cwd/out``."""
    out_dir = cwd / "out"
    full_env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-m", "harness", *args, f"hydra.run.dir={out_dir}", "run.progress=false"],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr, out_dir)


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own verdict cache (never the user's ~/.cache)."""
    root = tmp_path_factory.mktemp("xdg_cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(root))
    return root


@pytest.fixture(scope="session")
def mlflow_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One SQLite MLflow store for the session (creating the schema costs seconds)."""
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


@pytest.fixture
def judge_server():
    """The project's test judge (a real OpenAI-compatible HTTP server on 127.0.0.1)."""
    from judge_server import JudgeServer

    with JudgeServer(retry_after="0.01") as server:
        yield server


def sample_labels() -> dict:
    """Labels for the bundled dataset: a chunk is relevant iff its id is a reference id."""
    labels = {}
    rows = [json.loads(line) for line in (ROOT / "harness/data/sample_rag.jsonl").read_text("utf-8").splitlines()]
    for row in rows:
        for chunk, cid in zip(row["retrieved_contexts"], row["retrieved_context_ids"], strict=True):
            labels[(row["user_input"], chunk)] = int(cid in row["reference_context_ids"])
    return labels
