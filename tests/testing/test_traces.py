"""Evaluating production traces: traces recorded here by real MLflow tracing are scored, and
the verdicts appear as feedback assessments on those traces (read back through MLflow's API);
a rerun replaces them and asks the judge nothing."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.judge_server import JudgeServer
from helpers.traced_rag import CORPUS, LABELS, RELEVANT, Recorded, record

from harness.datasets.mlflow_feedback import names
from harness.testing.traces import evaluate_traces

METRIC = "llm_with_reference"
SCORE, CHUNK = names(METRIC)


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """One store for the module: creating MLflow's schema costs seconds."""
    return record(f"sqlite:///{tmp_path_factory.mktemp('traces') / 'mlflow.db'}", "app")


def average_precision(verdicts: list[int], eps: float = 1e-10) -> float:
    """ragas context precision: sum_k P@k * v_k / (sum v_k + eps)."""
    hits, total = 0, 0.0
    for k, v in enumerate(verdicts, 1):
        hits += v
        total += hits / k * v
    return total / (sum(verdicts) + eps)


def _ours(traced: Recorded, trace_id: str) -> tuple[list[Any], list[Any], Any]:
    from mlflow import MlflowClient
    from mlflow.entities import SpanType

    trace = MlflowClient(traced.uri).get_trace(trace_id)
    mine = [a for a in trace.info.assessments if a.name in (SCORE, CHUNK)]
    others = [a for a in trace.info.assessments if a.name not in (SCORE, CHUNK)]
    return mine, others, trace.search_spans(span_type=SpanType.RETRIEVER)


@pytest.mark.slow
def test_verdicts_land_on_the_traces_and_a_rerun_replaces_them(
    traced: Recorded, judge_server: JudgeServer
) -> None:
    judge_server.labels.update(LABELS)
    judge = ["judge=local", f"judge.base_url={judge_server.base_url}", "judge.model=test-judge"]
    # the multi-hop trace has no expectations: reference-free samples are unscored there
    result, written = evaluate_traces("app", METRIC, tracking_uri=traced.uri,
                                      overrides=[*judge, "dataset.tags={env: prod}"])
    assert written is not None and written.traces == 2 and written.replaced == 0
    questions = ["boiling point of water", "largest planet"]
    assert [r["id"] for r in result.rows] == [traced.traces[q] for q in questions]
    for question in questions:
        mine, others, [span] = _ours(traced, traced.traces[question])
        verdicts = [LABELS[text] for _, text, _ in CORPUS[question]]
        [score] = [a for a in mine if a.name == SCORE]
        assert score.feedback.value == pytest.approx(average_precision(verdicts))
        assert score.span_id == span.span_id
        assert score.source.source_type == "LLM_JUDGE"
        chunks = sorted((a for a in mine if a.name == CHUNK),
                        key=lambda a: int(a.metadata["chunk_index"]))
        assert [c.feedback.value for c in chunks] == verdicts
        assert [c.metadata["doc_id"] for c in chunks] == [d for d, _, _ in CORPUS[question]]
        assert all(c.span_id == span.span_id and c.rationale for c in chunks)
        assert sorted(a.name for a in others) == ["expected_response",
                                                  "expected_retrieved_context"]
        assert [d for d, _, _ in CORPUS[question] if d in RELEVANT[question]] == [
            c.metadata["doc_id"] for c in chunks if c.feedback.value == 1]

    requests = judge_server.stats.requests
    again, rewritten = evaluate_traces("app", METRIC, tracking_uri=traced.uri,
                                       overrides=[*judge, "dataset.tags={env: prod}"])
    assert judge_server.stats.requests == requests  # every verdict from the cache
    assert again.rows == result.rows
    assert rewritten is not None and rewritten.replaced == written.assessments
    for question in questions:
        mine, others, _ = _ours(traced, traced.traces[question])
        assert len(mine) == 1 + len(CORPUS[question])  # one set, not two
        assert len(others) == 2


@pytest.mark.slow
def test_an_unscored_sample_is_written_as_an_error(traced: Recorded) -> None:
    """id_ranked over the multi-hop trace: no reference ids there, so each span's sample is
    unscored; the feedback says why, on each span."""
    result, written = evaluate_traces("app", "id_ranked", tracking_uri=traced.uri,
                                      overrides=[f"dataset.trace_ids=[{traced.multi_hop}]",
                                                 "run.max_unscored_frac=1"])
    assert [r["score"] for r in result.rows] == [None, None]
    assert written is not None and written.assessments == 2
    from mlflow import MlflowClient

    trace = MlflowClient(traced.uri).get_trace(traced.multi_hop)
    errors = [a for a in trace.info.assessments if a.name == "context_precision/id_ranked"]
    assert sorted(a.span_id for a in errors) == sorted(r["id"].split("/")[1] for r in result.rows)
    assert all(a.feedback.error.error_code == "UNSCORED" for a in errors)
    assert all("reference_context_ids" in a.feedback.error.error_message for a in errors)


@pytest.mark.parametrize("value", ["app", "my app", "it's", "2024", "a\\b", "end\\",
                                   "x\\'y", "sqlite:////tmp/a b/mlflow.db",
                                   "postgresql://u@h:5/db?x=1"])
def test_any_experiment_name_or_store_reaches_the_dataset_unchanged(value: str) -> None:
    from harness.config.compose import composed
    from harness.testing.traces import quoted

    cfg = composed(("dataset=mlflow_traces", f"dataset.experiment_name={quoted(value)}",
                    f"dataset.tracking_uri={quoted(value)}"))
    assert cfg.dataset.experiment_name == value
    assert cfg.dataset.tracking_uri == value


@pytest.mark.slow
def test_the_cli_writes_the_verdicts_back_when_asked(traced: Recorded, tmp_path: Any) -> None:
    """``dataset.feedback=true``: the run's own writer puts them on the traces; a rerun
    replaces them (one set per metric); without the setting nothing is written."""
    from conftest import run_cli
    from mlflow import MlflowClient

    score_name, chunk_name = names("id_ranked")
    args = ["metric=id_ranked", "dataset=mlflow_traces", "dataset.experiment_name=app",
            f"dataset.tracking_uri={traced.uri}", "dataset.tags={env: prod}", "tracking=none",
            "run.progress=false"]

    def ours(question: str) -> list[Any]:
        trace = MlflowClient(traced.uri).get_trace(traced.traces[question])
        return [a for a in trace.info.assessments if a.name in (score_name, chunk_name)]

    off = run_cli(*args, f"hydra.run.dir={tmp_path / 'off'}", cwd=tmp_path)
    assert off.returncode == 0, off.stderr
    assert ours("largest planet") == [] and "assessments" not in off.stderr
    for attempt in ("first", "again"):
        result = run_cli(*args, "dataset.feedback=true", f"hydra.run.dir={tmp_path / attempt}",
                         cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert "note: wrote" in result.stderr and "onto 2 traces" in result.stderr
        for question in ("boiling point of water", "largest planet"):
            [score] = [a for a in ours(question) if a.name == score_name]
            [row] = [r for r in result.rows() if r["id"] == traced.traces[question]]
            assert score.feedback.value == pytest.approx(row["score"])
            chunks = [a for a in ours(question) if a.name == chunk_name]
            assert sorted(c.feedback.value for c in chunks) == sorted(row["verdicts"])
    assert "replacing" in result.stderr
