"""``dataset.feedback=true`` writes each sample's verdicts onto the RETRIEVER span it was read
from, for every listed variant as a run of that variant alone writes them: a run of
``metric=[a,b]`` and single runs of ``a`` and ``b`` replace each other's sets, never add a
second one. Traces recorded here by real MLflow tracing, read back through MLflow's API."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from helpers.mlflow_runs import active_store
from helpers.traced_rag import Recorded, record

from harness.core.errors import DatasetError
from harness.datasets.mlflow_feedback import variant_rows, write_feedback

CAPITAL, PLANET = "capital of France", "largest planet"


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    """One store for the module (MLflow's schema costs seconds); the multi-hop trace gets
    expectations, so its second hop ([d7, d9]) is scored against d9."""
    import mlflow

    out = record(f"sqlite:///{tmp_path_factory.mktemp('fb') / 'mlflow.db'}", "app")
    with active_store(out.uri, "app"):
        mlflow.log_expectation(trace_id=out.multi_hop, name="expected_retrieved_context",
                               value=[{"doc_uri": "d9", "content": "Jupiter."}])
    return out


def _ours(traced: Recorded, trace_id: str) -> list[Any]:
    from mlflow import MlflowClient

    trace = MlflowClient(traced.uri).get_trace(trace_id)
    return [a for a in trace.info.assessments if a.name.startswith("context_precision")]


def _scores(traced: Recorded, trace_id: str) -> dict[str, float]:
    return {a.name: a.feedback.value for a in _ours(traced, trace_id)
            if not a.name.endswith("/chunk")}


def _args(traced: Recorded, tmp: Path, name: str, *more: str) -> list[str]:
    return ["dataset=mlflow_traces", "dataset.experiment_name=app",
            f"dataset.tracking_uri={traced.uri}", "tracking=none", "run.progress=false",
            "dataset.feedback=true", f"hydra.run.dir={tmp / name}", *more]


@pytest.mark.slow
def test_each_variant_writes_its_own_set_as_its_single_run_does(
    traced: Recorded, tmp_path: Path
) -> None:
    ids = [traced.traces[CAPITAL], traced.traces[PLANET]]
    pick = f"dataset.trace_ids=[{','.join(ids)}]"
    multi = run_cli(*_args(traced, tmp_path, "multi", pick, "metric=[id_ranked,id_based]"),
                    cwd=tmp_path)
    assert multi.returncode == 0, multi.stderr
    assert "(id_ranked, id_based)" in multi.stderr
    # [d1, d2, d3] against d1: average precision 1, set precision 1/3; [d7, d9] against d9:
    # average precision 1/2, set precision 1/2
    expected = {ids[0]: {"context_precision/id_ranked": 1.0,
                         "context_precision/id_based": pytest.approx(1 / 3)},
                ids[1]: {"context_precision/id_ranked": 0.5,
                         "context_precision/id_based": 0.5}}
    for trace_id in ids:
        assert _scores(traced, trace_id) == expected[trace_id]
    chunks = sorted((a.name, a.metadata["chunk_index"], a.feedback.value)
                    for a in _ours(traced, ids[0]) if a.name.endswith("/chunk"))
    assert chunks == [(f"context_precision/{m}/chunk", str(i), int(i == 0))
                      for m in ("id_based", "id_ranked") for i in range(3)]
    first = Counter((a.name, a.feedback.value) for t in ids for a in _ours(traced, t))
    # a single run replaces its variant's set; the multi run again replaces both
    single = run_cli(*_args(traced, tmp_path, "single", pick, "metric=id_based"), cwd=tmp_path)
    assert single.returncode == 0, single.stderr
    assert "replacing 7" in single.stderr  # 1 score + 3 chunks, and 1 + 2
    again = run_cli(*_args(traced, tmp_path, "again", pick, "metric=[id_ranked,id_based]"),
                    cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert Counter((a.name, a.feedback.value) for t in ids for a in _ours(traced, t)) == first
    assert sum(first.values()) == 2 * (1 + 3 + 1 + 2)
    assert not any("[" in a.name for t in ids for a in _ours(traced, t))


@pytest.mark.slow
def test_a_named_span_of_a_trace_with_two_gets_the_verdicts(
    traced: Recorded, tmp_path: Path
) -> None:
    from mlflow import MlflowClient
    from mlflow.entities import SpanType

    result = run_cli(*_args(traced, tmp_path, "hop", f"dataset.trace_ids=[{traced.multi_hop}]",
                            "dataset.span_name=second_hop", "metric=id_ranked"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    spans = MlflowClient(traced.uri).get_trace(traced.multi_hop).search_spans(
        span_type=SpanType.RETRIEVER)
    [hop] = [s.span_id for s in spans if s.name == "second_hop"]
    mine = _ours(traced, traced.multi_hop)
    assert {a.span_id for a in mine} == {hop}
    [score] = [a for a in mine if a.name == "context_precision/id_ranked"]
    assert score.feedback.value == 0.5  # [d7, d9] against d9


@pytest.mark.slow
def test_without_the_span_read_a_trace_of_two_spans_is_refused(traced: Recorded) -> None:
    row = {"id": traced.multi_hop, "score": 1.0, "verdicts": [1], "error": None,
           "chunks": [{"id": "d7", "verdict": 1}]}
    with pytest.raises(DatasetError, match="no such RETRIEVER span"):
        write_feedback([row], traced.uri, "id_based")


@pytest.mark.parametrize(("row", "expected"), [
    ({"id": "t", "score": 0.5, "verdicts": [0, 1], "error": None,
      "chunks": [{"id": "a", "verdict": 0}, {"id": "b", "verdict": 1}]},
     [("m", [("a", 0), ("b", 1)], 0.5)]),
    ({"id": "t", "score": 1.0, "verdicts": [1, 0], "error": None,
      "chunks": [{"id": "a", "verdict": 1}, {"id": "b", "verdict": 0}],
      "variants": {"x": {"score": 1.0, "verdicts": [1, 0], "error": None},
                   "y": {"score": None, "verdicts": None, "error": "no reference"}}},
     [("x", [("a", 1), ("b", 0)], 1.0), ("y", [("a", None), ("b", None)], None)]),
])
def test_a_row_splits_into_each_variants_own_row(
    row: dict[str, Any], expected: list[tuple[str, list[tuple[str, Any]], float | None]]
) -> None:
    got = [(name, [(c["id"], c.get("verdict")) for c in own["chunks"]], own["score"])
           for name, own in variant_rows(row, "m")]
    assert got == expected
