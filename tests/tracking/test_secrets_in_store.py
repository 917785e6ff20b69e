"""Issue 31, class 6, the MLflow side: a secret inside a mapping setting and credentials in
a traced document's ``doc_uri`` reach neither the run's folder nor the MLflow store it logs
to (the SQLite file's bytes and every artifact), and the scores are those of the same
documents without credentials."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from conftest import run_cli
from helpers import mlflow_runs
from helpers.mlflow_runs import active_store

TAG = uuid.uuid4().hex[:8]
PASSWORD = f"uriPW{TAG}"
TOKEN = f"qTok{TAG}"
KEY = f"K9key{TAG}"
SECRETS = (PASSWORD, TOKEN, KEY)


@pytest.fixture(autouse=True)
def _secrets(clean_secrets: None) -> None:
    """No registered secret and no hidden value before the test (``conftest``)."""


def _leaks(folder: Path, skip: Path, *texts: str) -> list[str]:
    found = [f"console: {s}" for s in SECRETS for t in texts if s in t]
    return found + [f"{p}: {s}" for p in folder.rglob("*")
                    if p.is_file() and skip not in p.parents
                    for s in SECRETS if s.encode() in p.read_bytes()]


def _record(uri: str) -> None:
    """Two traced questions whose documents' ``doc_uri`` carry credentials: one in the
    URI's user part, one as a ``?token=`` parameter; the relevant one named the same way
    in the expectations."""
    import mlflow
    from mlflow.entities import Document, SpanType

    docs = {"q1": [f"https://alice:{PASSWORD}@docs.example/a", "https://docs.example/b"],
            "q2": [f"https://docs.example/c?token={TOKEN}", f"https://docs.example/d?token={TOKEN}"]}
    relevant = {"q1": docs["q1"][1], "q2": docs["q2"][0]}

    @mlflow.trace(span_type=SpanType.RETRIEVER)
    def retrieve(query: str) -> list[Document]:
        return [Document(page_content=f"text {u[-1]}", metadata={"doc_uri": u})
                for u in docs[query]]

    @mlflow.trace
    def rag(question: str) -> str:
        retrieve(question)
        return "answer"

    with active_store(uri, "private-docs"):
        for question in docs:
            rag(question)
            mlflow.flush_trace_async_logging()
            trace_id = mlflow.get_last_active_trace_id()
            mlflow.log_expectation(trace_id=trace_id, name="expected_retrieved_context",
                                   value=[{"doc_uri": relevant[question], "content": "x"}])


@pytest.mark.slow
def test_credentials_in_doc_uris_and_settings_reach_no_file_nor_store(
        tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    traces_uri = f"sqlite:///{traces / 'mlflow.db'}"
    _record(traces_uri)
    store = tmp_path / "results"
    store.mkdir()
    results_uri = f"sqlite:///{store / 'mlflow.db'}"
    result = run_cli(
        "dataset=mlflow_traces", "dataset.experiment_name=private-docs",
        f"dataset.tracking_uri={traces_uri}", "metric=id_ranked", "experiment_name=secret-uris",
        f"+judge.extra={{api_key: {KEY}, headers: {{Authorization: 'Bearer {KEY}'}}}}",
        cwd=tmp_path, env={"MLFLOW_TRACKING_URI": results_uri,
                           "MLFLOW_ARTIFACTS_DESTINATION": str(store / "artifacts")})
    assert result.returncode == 0, result.stderr
    scores = sorted(r["score"] for r in result.rows())
    assert scores == [0.5, 1.0]  # q1: relevant second (AP 1/2); q2: relevant first (AP 1)
    chunks = [c for r in result.rows() for c in r["chunks"]]
    assert {c["metadata"]["doc_uri"] for c in chunks} == {
        "https://***@docs.example/a", "https://docs.example/b",
        "https://docs.example/c?token=***", "https://docs.example/d?token=***"}
    assert _leaks(tmp_path, traces, result.stdout, result.stderr) == []
    [run] = mlflow_runs.runs(results_uri, "secret-uris")
    assert run.info.status == "FINISHED"
    assert "***" in run.data.params.get("judge.extra.api_key", "") + run.data.tags.get(
        "hydra.overrides", "")  # the setting was logged, masked
