"""A tiny RAG app instrumented with real MLflow tracing (``@mlflow.trace``), recording the
traces the ``mlflow_traces`` dataset, the feedback writer and the scorers are tested on.

Its retriever returns MLflow ``Document``s (the RETRIEVER span format); which documents each
question gets is fixed here, so tests know the ground truth without reading MLflow.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from helpers.mlflow_runs import active_store

#: question -> the ranked documents the retriever returns: (id, text, metadata)
CORPUS: dict[str, list[tuple[str, str, dict[str, Any]]]] = {
    "capital of France": [
        ("d1", "Paris is the capital of France.", {"doc_uri": "d1", "chunk_id": "c1"}),
        ("d2", "Lyon is a city.", {"doc_uri": "d2", "source": "wiki"}),
        ("d3", "France borders Spain.", {"doc_uri": "d3"}),
    ],
    "boiling point of water": [
        ("d4", "Ice melts at 0 C.", {"doc_uri": "d4"}),
        ("d5", "Water boils at 100 C at sea level.", {"doc_uri": "d5"}),
    ],
    "largest planet": [
        ("d7", "Mars is red.", {}),  # no doc_uri: the document's own id is used
        ("d9", "Jupiter is the largest planet.", {}),
    ],
}
#: The relevant documents of each question (the expectations logged on its trace).
RELEVANT = {"capital of France": ["d1"], "boiling point of water": ["d5"],
            "largest planet": ["d9"]}
ANSWERS = {"capital of France": "Paris", "boiling point of water": "100 C",
           "largest planet": "Jupiter"}
#: What the test judge answers for each chunk.
LABELS = {text: int(doc in RELEVANT[q]) for q, docs in CORPUS.items() for doc, text, _ in docs}


@dataclass
class Recorded:
    """What ``record`` logged: trace ids by question, the run id, a time between traces."""

    uri: str
    experiment: str
    traces: dict[str, str] = field(default_factory=dict)
    run_id: str = ""
    between_ms: int = 0
    multi_hop: str = ""
    no_retriever: str = ""


def record(uri: str, experiment: str) -> Recorded:
    """Run the app on every question into ``experiment`` of ``uri`` (global MLflow state is
    put back afterwards)."""
    import mlflow
    from mlflow.entities import Document, SpanType

    @mlflow.trace(span_type=SpanType.RETRIEVER)
    def retrieve(query: str) -> list[Document]:
        return [Document(page_content=text, metadata=dict(meta), id=doc)
                for doc, text, meta in CORPUS[query]]

    @mlflow.trace(span_type=SpanType.RETRIEVER, name="second_hop")
    def second_hop(query: str) -> list[Document]:
        return retrieve.__wrapped__(query)

    @mlflow.trace
    def rag(question: str) -> str:
        retrieve(question)
        return ANSWERS[question]

    @mlflow.trace
    def chat(question: str) -> str:
        return "no retrieval here"

    @mlflow.trace
    def multi(question: str) -> str:
        retrieve(question)
        second_hop("largest planet")
        return ANSWERS[question]

    out = Recorded(uri, experiment)
    with active_store(uri, experiment):
        with mlflow.start_run() as run:
            rag("capital of France")
            out.traces["capital of France"] = _last(mlflow, {"env": "staging"})
        out.run_id = run.info.run_id
        rag("boiling point of water")
        out.traces["boiling point of water"] = _last(mlflow, {"env": "prod"})
        time.sleep(0.01)
        out.between_ms = int(time.time() * 1000)
        time.sleep(0.01)
        rag("largest planet")
        out.traces["largest planet"] = _last(mlflow, {"env": "prod"})
        chat("hello")
        out.no_retriever = _last(mlflow, {})
        multi("capital of France")
        out.multi_hop = _last(mlflow, {})
        for question, trace_id in out.traces.items():
            mlflow.log_expectation(trace_id=trace_id, name="expected_response",
                                   value=ANSWERS[question])
            mlflow.log_expectation(
                trace_id=trace_id, name="expected_retrieved_context",
                value=[{"doc_uri": d, "content": next(t for i, t, _ in CORPUS[question]
                                                      if i == d)} for d in RELEVANT[question]])
    return out


def _last(mlflow: Any, tags: dict[str, str]) -> str:
    mlflow.flush_trace_async_logging()
    trace_id = mlflow.get_last_active_trace_id()
    assert trace_id
    for key, value in tags.items():
        mlflow.set_trace_tag(trace_id, key, value)
    return str(trace_id)
