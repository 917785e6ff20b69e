"""The variants as MLflow GenAI scorers: inside ``mlflow.genai.evaluate`` over traces recorded
here by real MLflow tracing, each gives the same per-sample scores as the harness's own run
on those traces, and reuses its verdicts (no judge request the second time)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from helpers.judge_server import JudgeServer
from helpers.mlflow_runs import active_store
from helpers.traced_rag import CORPUS, LABELS, RELEVANT, Recorded, record

from harness.testing.mlflow_scorers import ContextPrecision
from harness.testing.traces import evaluate_traces

#: MLflow's evaluate on recorded traces: seconds each. Its pandas warning is raised inside
#: MLflow (its dataset digest), not by harness: kept out of the warnings summary
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings(
    "ignore:Starting with pandas version 4.0 all arguments:DeprecationWarning")]
SCORED = ("capital of France", "boiling point of water", "largest planet")


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """One store for the module: creating MLflow's schema costs seconds."""
    return record(f"sqlite:///{tmp_path_factory.mktemp('traces') / 'mlflow.db'}", "app")


@pytest.fixture
def active(traced: Recorded) -> Iterator[str]:
    """``mlflow.genai.evaluate`` logs to the active store and experiment: this one, put back
    afterwards."""
    with active_store(traced.uri, traced.experiment) as experiment_id:
        yield experiment_id


def average_precision(verdicts: list[int], eps: float) -> float:
    """ragas context precision: sum_k P@k * v_k / (sum v_k + eps)."""
    hits, total = 0, 0.0
    for k, v in enumerate(verdicts, 1):
        hits += v
        total += hits / k * v
    return total / (sum(verdicts) + eps)


def _genai_scores(experiment_id: str, scorer: ContextPrecision) -> dict[str, Any]:
    import mlflow

    traces = mlflow.search_traces(locations=[experiment_id], return_type="pandas")
    table = mlflow.genai.evaluate(data=traces, scorers=[scorer]).tables["eval_results"]
    return dict(zip(table["trace_id"], table[f"{scorer.name}/value"], strict=True))


@pytest.mark.parametrize(("metric", "eps", "verdict_of"), [
    ("id_ranked", 0.0, lambda q, doc, text: int(doc in RELEVANT[q])),
    ("llm_with_reference", 1e-10, lambda q, doc, text: LABELS[text]),
])
def test_scores_inside_mlflow_evaluate_equal_the_harness_run(
    traced: Recorded, active: str, judge_server: JudgeServer, metric: str, eps: float,
    verdict_of: Any,
) -> None:
    judge_server.labels.update(LABELS)
    judge = ["judge=local", f"judge.base_url={judge_server.base_url}", "judge.model=test-judge"]
    run, _ = evaluate_traces("app", metric, tracking_uri=traced.uri, feedback=False,
                             overrides=[*judge, "run.max_unscored_frac=1"])
    harness = {r["id"]: r["score"] for r in run.rows}
    requests = judge_server.stats.requests

    genai = _genai_scores(active, ContextPrecision(metric, overrides=judge))
    assert judge_server.stats.requests == requests  # the harness run's verdicts, cached
    for question in SCORED:
        trace_id = traced.traces[question]
        expected = average_precision([verdict_of(question, d, t) for d, t, _ in CORPUS[question]],
                                     eps)
        assert genai[trace_id] == harness[trace_id] == pytest.approx(expected, abs=1e-12)
    # the multi-hop trace has no expectations: unscored on both sides
    assert all(harness[i] is None for i in harness if i.startswith(traced.multi_hop))
    assert genai[traced.multi_hop] != genai[traced.multi_hop]  # NaN: no value
    assert genai[traced.no_retriever] != genai[traced.no_retriever]


def test_a_row_without_a_trace_is_read_from_its_inputs(active: str) -> None:
    """Static data (no retriever span): ``inputs`` is a harness record in ragas or deepeval
    names, ``expectations`` MLflow's ``expected_retrieved_context``."""
    import mlflow

    from harness import evaluate

    rows = [{"inputs": {"user_input": q, "retrieved_contexts": [t for _, t, _ in CORPUS[q]],
                        "retrieved_context_ids": [d for d, _, _ in CORPUS[q]]},
             "expectations": {"expected_retrieved_context": [{"doc_uri": d} for d in RELEVANT[q]]}}
            for q in SCORED]
    scorer = ContextPrecision("id_ranked")
    table = mlflow.genai.evaluate(data=rows, scorers=[scorer]).tables["eval_results"]
    direct = evaluate([{**r["inputs"], "reference_context_ids": [
        e["doc_uri"] for e in r["expectations"]["expected_retrieved_context"]]} for r in rows],
        "id_ranked")
    assert list(table[f"{scorer.name}/value"]) == direct.scores
    assert direct.scores == [average_precision(
        [int(d in RELEVANT[q]) for d, _, _ in CORPUS[q]], 0.0) for q in SCORED]


def test_the_scorer_says_why_a_row_cannot_be_scored() -> None:
    feedback = ContextPrecision("id_ranked")(inputs={"question": "hello"}, outputs="hi")
    assert feedback.error.error_code == "NO_RETRIEVED_CHUNKS"
    assert "no RETRIEVER span and its inputs no retrieved chunks" in feedback.error.error_message
    assert feedback.name == "context_precision/id_ranked"
