"""``dataset=mlflow_traces``: traces recorded here by real MLflow tracing (``@mlflow.trace``
with a RETRIEVER span returning MLflow Documents, into a temporary SQLite store) read back
as samples, filtered, and scored by the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from helpers.mlflow_runs import active_store
from helpers.traced_rag import ANSWERS, CORPUS, RELEVANT, Recorded, record

from harness.core.errors import ConfigError, DatasetError
from harness.datasets.mlflow_traces import MlflowTracesDataset


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """One store for the module: creating MLflow's schema costs seconds."""
    uri = f"sqlite:///{tmp_path_factory.mktemp('traces') / 'mlflow.db'}"
    return record(uri, "rag-app")


def _read(traced: Recorded, **settings: Any) -> list[Any]:
    dataset = MlflowTracesDataset("rag-app", traced.uri, **settings)
    dataset.check()
    return list(dataset.samples())


def test_each_retriever_span_is_a_sample_with_its_ranked_documents(traced: Recorded) -> None:
    samples = {s.id: s for s in _read(traced)}
    for question, trace_id in traced.traces.items():
        s = samples.pop(trace_id)
        assert s.user_input == question
        assert s.response == s.reference == ANSWERS[question]
        assert s.retrieved_contexts == tuple(text for _, text, _ in CORPUS[question])
        assert s.retrieved_context_ids == tuple(doc for doc, _, _ in CORPUS[question])
        assert s.reference_context_ids == tuple(RELEVANT[question])
        assert s.reference_contexts == tuple(t for d, t, _ in CORPUS[question]
                                             if d in RELEVANT[question])
    # the multi-hop trace: one sample per RETRIEVER span, TRACE/SPAN ids, in span order;
    # the trace without a retriever gives none
    hops = sorted(samples.values(), key=lambda s: list(samples).index(s.id))
    assert [s.id.split("/")[0] for s in hops] == [traced.multi_hop] * 2
    assert [s.retrieved_context_ids for s in hops] == [("d1", "d2", "d3"), ("d7", "d9")]
    assert [s.user_input for s in hops] == ["capital of France"] * 2
    assert all(s.reference is None and s.reference_context_ids is None for s in hops)


def test_the_span_query_can_be_the_question(traced: Recorded) -> None:
    hops = _read(traced, trace_ids=[traced.multi_hop], question_from="span")
    assert [s.user_input for s in hops] == ["capital of France", "largest planet"]


@pytest.mark.parametrize(("settings", "expected"), [
    ({"run_id": "RUN"}, ["capital of France"]),
    ({"tags": {"env": "prod"}}, ["boiling point of water", "largest planet"]),
    ({"tags": {"env": "staging"}}, ["capital of France"]),
    ({"since": "BETWEEN"}, ["largest planet", "MULTI", "MULTI"]),
    ({"until": "BETWEEN"}, ["capital of France", "boiling point of water"]),
    ({"since": "BETWEEN_ISO", "tags": {"env": "prod"}}, ["largest planet"]),
    ({"trace_ids": ["largest planet", "capital of France"]},
     ["capital of France", "largest planet"]),
    ({"max_traces": 2}, ["capital of France", "boiling point of water"]),
    ({"span_name": "second_hop"}, ["MULTI"]),
    ({"filter_string": "tags.env = 'prod'", "max_traces": 1}, ["boiling point of water"]),
])
def test_filters(traced: Recorded, settings: dict[str, Any], expected: list[str]) -> None:
    from datetime import datetime, timezone

    names = {**{v: k for k, v in traced.traces.items()}, traced.multi_hop: "MULTI"}
    naive_utc = datetime.fromtimestamp(traced.between_ms / 1000, timezone.utc).replace(tzinfo=None)
    values = {"RUN": traced.run_id, "BETWEEN": traced.between_ms,
              "BETWEEN_ISO": naive_utc.isoformat()}
    given = {k: values.get(v, v) if isinstance(v, str) else v for k, v in settings.items()}
    if "trace_ids" in given:
        given["trace_ids"] = [traced.traces[q] for q in given["trace_ids"]]
    assert [names[s.id.split("/")[0]] for s in _read(traced, **given)] == expected


@pytest.mark.parametrize(("settings", "error", "message"), [
    ({"experiment_name": "nope"}, DatasetError, "mlflow experiment 'nope' at sqlite:"),
    ({"trace_ids": ["tr-0000"]}, DatasetError, "dataset.trace_ids: not in the experiment (or "
     "filtered out): tr-0000"),
    ({"span_name": "no_such_span"}, DatasetError, "none of its 5 traces has a RETRIEVER span "
     "named 'no_such_span'"),
    ({"tags": {"env": "it's"}}, ConfigError, "dataset.tags.env: \"it's\" cannot be filtered on"),
    ({"since": "yesterday"}, ConfigError, "dataset.since: expected an ISO 8601 time"),
    ({"question_from": "answer"}, ConfigError, "dataset.question_from: expected 'trace' or "
     "'span'"),
    ({"max_traces": 0}, ConfigError, "dataset.max_traces: expected a whole number >= 1"),
    ({"filter_string": "tags.env == == 'x'"}, DatasetError, "cannot read the traces"),
    ({"tracking_uri": ""}, ConfigError, "dataset.tracking_uri: no MLflow store"),
])
def test_bad_settings_fail_in_one_line_naming_the_setting(
    traced: Recorded, settings: dict[str, Any], error: type[Exception], message: str
) -> None:
    given = {"experiment_name": "rag-app", "tracking_uri": traced.uri, **settings}
    with pytest.raises(error) as caught:
        MlflowTracesDataset(**given).check()
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def _average_precision(verdicts: list[int]) -> float:
    hits, total = 0, 0.0
    for k, v in enumerate(verdicts, 1):
        hits += v
        total += hits / k * v
    return total / sum(verdicts) if sum(verdicts) else 0.0


def test_the_cli_scores_the_traces(traced: Recorded, tmp_path: Path) -> None:
    """``dataset=mlflow_traces dataset.experiment_name=NAME``, the store from
    ``$MLFLOW_TRACKING_URI``; scores are average precision over the logged documents."""
    result = run_cli("dataset=mlflow_traces", "dataset.experiment_name=rag-app",
                     "metric=id_ranked", "tracking=none", "dataset.tags={env: prod}",
                     cwd=tmp_path, env={"MLFLOW_TRACKING_URI": traced.uri})
    assert result.returncode == 0, result.stderr
    expected = {traced.traces[q]: _average_precision(
        [int(d in RELEVANT[q]) for d, _, _ in CORPUS[q]])
        for q in ("boiling point of water", "largest planet")}
    assert {r["id"]: r["score"] for r in result.rows()} == expected
    described = result.summary()["dataset"]
    assert described["format"] == "mlflow_traces" and described["traces"] == 2
    assert described["filter"] == "tags.`env` = 'prod'"


def _record_bad(uri: str, experiment: str, outputs: Any, fail: bool = False) -> str:
    import mlflow
    from mlflow.entities import SpanType

    @mlflow.trace(span_type=SpanType.RETRIEVER)
    def retrieve(query: str) -> Any:
        if fail:
            raise RuntimeError("index offline")
        return outputs

    @mlflow.trace
    def rag(question: str) -> str:
        try:
            retrieve(question)
        except RuntimeError:
            return "sorry"
        return "ok"

    with active_store(uri, experiment):
        rag("what is up")
        mlflow.flush_trace_async_logging()
        return str(mlflow.get_last_active_trace_id())


@pytest.mark.parametrize(("outputs", "message"), [
    (["plain string, not a document"], "document 1 has no page_content text"),
    ({"documents": []}, "the RETRIEVER span's outputs are not a list of documents (got dict)"),
])
def test_a_retriever_span_without_documents_is_named(
    traced: Recorded, outputs: Any, message: str
) -> None:
    experiment = f"bad-{len(message)}"
    trace_id = _record_bad(traced.uri, experiment, outputs)
    with pytest.raises(DatasetError) as caught:
        MlflowTracesDataset(experiment, traced.uri).check()
    assert str(caught.value).startswith(f"trace {trace_id} span 'retrieve': {message}")


def test_a_failed_retrieval_is_a_sample_without_chunks(traced: Recorded, tmp_path: Path) -> None:
    """The retriever raised: the trace is kept, its sample unscored with the reason."""
    trace_id = _record_bad(traced.uri, "failing-retriever", None, fail=True)
    [sample] = _read_from(traced.uri, "failing-retriever")
    assert (sample.id, sample.user_input, sample.response) == (trace_id, "what is up", "sorry")
    assert sample.retrieved_contexts is None
    result = run_cli("dataset=mlflow_traces", "dataset.experiment_name=failing-retriever",
                     f"dataset.tracking_uri={traced.uri}", "metric=non_llm", "tracking=none",
                     "run.max_unscored_frac=1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    [row] = result.rows()
    assert row["score"] is None and "retrieved_contexts" in row["error"]


def _read_from(uri: str, experiment: str) -> list[Any]:
    dataset = MlflowTracesDataset(experiment, uri)
    dataset.check()
    return list(dataset.samples())


def test_traces_are_read_a_page_at_a_time_with_the_same_samples(
        traced: Recorded, monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.datasets.mlflow_traces as module

    whole = [(s.id, s.retrieved_context_ids) for s in _read(traced)]
    monkeypatch.setattr(module, "PAGE", 2)  # five traces: pages of 2, 2 and 1
    paged = MlflowTracesDataset("rag-app", traced.uri)
    paged.check()
    assert [(s.id, s.retrieved_context_ids) for s in paged.samples()] == whole
    assert paged.describe()["traces"] == 5
    first_three = MlflowTracesDataset("rag-app", traced.uri, max_traces=3)
    first_three.check()
    assert first_three.describe()["traces"] == 3


def test_each_documents_metadata_comes_with_it_to_the_rows_and_the_report(
        traced: Recorded, tmp_path: Path) -> None:
    from conftest import run_cli

    from harness.report.html import sample_view

    samples = {s.id: s for s in _read(traced)}
    capital = samples[traced.traces["capital of France"]]
    assert capital.retrieved_context_metadata == tuple(meta for _, _, meta
                                                       in CORPUS["capital of France"])
    # documents without any metadata: none recorded
    assert samples[traced.traces["largest planet"]].retrieved_context_metadata is None

    args = ("metric=id_ranked", "dataset=mlflow_traces", "dataset.experiment_name=rag-app",
            f"dataset.tracking_uri={traced.uri}", "dataset.tags={env: staging}", "tracking=none")
    result = run_cli(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    [row] = result.rows()
    assert [c.get("metadata") for c in row["chunks"]] == [
        {"doc_uri": "d1", "chunk_id": "c1"}, {"doc_uri": "d2", "source": "wiki"}, {"doc_uri": "d3"}]
    # the report's chunk line: rank, id, then each metadata key and value
    view = sample_view(0, row)
    assert view["chunks"][1]["extra"] == [("doc_uri", "d2"), ("source", "wiki")]
    ids_only = run_cli(*args, "run.row_text_chars=0", cwd=tmp_path)
    assert all("metadata" not in c for c in ids_only.rows()[0]["chunks"])
