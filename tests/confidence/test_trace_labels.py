"""``trace_labels``: HUMAN feedback logged with MLflow's own API (``mlflow.log_feedback``,
``mlflow.override_feedback``) on traces recorded by real MLflow tracing into a SQLite store,
read back as labels and matched to the ``mlflow_traces`` samples. The expected verdicts are
what the test logged; a judge's feedback of the same name must not count."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest
from helpers.mlflow_runs import active_store
from helpers.traced_rag import Recorded, record

from harness.confidence.match import RunSample, match
from harness.confidence.traces import trace_labels
from harness.core.errors import ConfigError, DatasetError
from harness.datasets.mlflow_traces import MlflowTracesDataset

pytestmark = pytest.mark.slow  # MLflow's schema alone takes seconds
CAPITAL, WATER, PLANET = "capital of France", "boiling point of water", "largest planet"


@dataclass
class Labelled:
    """The store, and the sample ids the feedback was logged for."""

    traced: Recorded
    second_hop: str  # the multi-hop trace's second sample (TRACE/SPAN)


def _source(kind: str = "HUMAN", who: str = "ann") -> Any:
    from mlflow.entities import AssessmentSource

    return AssessmentSource(source_type=kind, source_id=who)


def _spans(uri: str, trace_id: str) -> list[str]:
    from mlflow import MlflowClient

    spans = MlflowClient(uri).get_trace(trace_id).search_spans(span_type="RETRIEVER")
    return [s.span_id for s in sorted(spans, key=lambda s: s.start_time_ns)]


def _log(trace_id: str, value: Any, span_id: str | None = None, name: str = "relevance",
         source: Any = None, **metadata: Any) -> Any:
    import mlflow

    time.sleep(0.002)  # an annotator's later feedback is later by the clock
    return mlflow.log_feedback(trace_id=trace_id, name=name, value=value, span_id=span_id,
                               source=source or _source(), metadata=metadata or None)


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> Labelled:
    """capital [d1, d2, d3]: 1, 0, 0 on its span (by rank, context_id and chunk_index, the
    last overridden from 1 to 0 by another annotator; rank 1 first said 0, then 1); a
    judge's list says otherwise.
    water [d4, d5]: 0, 1 as a trace-level list, a second annotator agreeing on d5 by doc_uri
    with grade 2. planet [d7, d9]: only d9 (partial), and a trace-level rating that names no
    chunk (skipped). multi-hop: a trace-level list (skipped: two spans) and [no, yes] on its
    second span."""
    import mlflow

    traced = record(f"sqlite:///{tmp_path_factory.mktemp('labels') / 'mlflow.db'}", "app")
    capital, water, planet = (traced.traces[q] for q in (CAPITAL, WATER, PLANET))
    with active_store(traced.uri, "app"):
        span = _spans(traced.uri, capital)[0]
        _log(capital, False, span, rank=1)
        _log(capital, True, span, rank=1)
        _log(capital, 0, span, context_id="d2")
        wrong = _log(capital, 1, span, chunk_index="2")
        mlflow.override_feedback(trace_id=capital, assessment_id=wrong.assessment_id,
                                 value=False, source=_source(who="lead"))
        _log(capital, [0, 1, 1], source=_source("LLM_JUDGE", "judge"))
        _log(capital, True, span, name="helpfulness", rank=2)
        _log(water, [0, 1], name="Context-Relevance")
        _log(water, 2, _spans(traced.uri, water)[0], source=_source(who="ann2"), doc_uri="d5")
        _log(planet, "yes", _spans(traced.uri, planet)[0], context_id="d9")
        _log(planet, 4)
        first, second = _spans(traced.uri, traced.multi_hop)
        _log(traced.multi_hop, [1, 0, 0])
        _log(traced.multi_hop, [False, True], second, name="is_relevant")
    return Labelled(traced, f"{traced.multi_hop}/{second}")


def _dataset(uri: str, experiment: str = "app") -> MlflowTracesDataset:
    return MlflowTracesDataset(experiment, uri)


def _run(dataset: MlflowTracesDataset) -> list[RunSample]:
    return [RunSample(s.id, tuple(s.retrieved_context_ids or ()),
                      tuple(s.retrieved_contexts or ())) for s in dataset.samples()]


def test_human_feedback_gives_the_logged_verdicts_per_sample(labelled: Labelled) -> None:
    traced = labelled.traced
    dataset = _dataset(traced.uri)
    labels = trace_labels(dataset)
    matched = match(labels, _run(dataset))
    assert matched.verdicts == {traced.traces[CAPITAL]: (1, 0, 0),
                                traced.traces[WATER]: (0, 1),
                                labelled.second_hop: (0, 1)}
    assert matched.partial_samples == 1  # planet: d9 only
    assert matched.unknown_samples == matched.unknown_chunks == 0
    assert labels.skipped == 2  # planet's rating, the multi-hop trace's trace-level list
    assert labels.blank == 0
    # one label per labelled chunk, in the dataset's order: 3 + 2 + 1 + 2
    assert [(label.sample_id, label.rank) for label in labels.labels][:3] == [
        (traced.traces[CAPITAL], r) for r in (1, 2, 3)]
    assert len(labels.labels) == 8
    assert [label.line for label in labels.labels] == list(range(1, 9))
    grades = {(label.sample_id, label.rank): label.grade for label in labels.labels}
    assert grades[(traced.traces[WATER], 2)] in (1.0, 2.0)  # two annotators, one verdict


def test_a_name_reads_only_that_feedback(labelled: Labelled) -> None:
    traced = labelled.traced
    labels = trace_labels(_dataset(traced.uri), name="is_relevant")
    assert [(label.sample_id, label.rank, label.relevant) for label in labels.labels] == [
        (labelled.second_hop, 1, 0), (labelled.second_hop, 2, 1)]
    assert labels.skipped == 0
    with pytest.raises(DatasetError, match="none names a chunk") as caught:
        trace_labels(_dataset(traced.uri), name="nothing_like_this")
    assert "\n" not in str(caught.value)


def test_a_graded_feedback_reads_with_min_grade(labelled: Labelled) -> None:
    traced = labelled.traced
    labels = trace_labels(_dataset(traced.uri), min_grade=3)
    water = traced.traces[WATER]
    # ann's 1 is now below the grade, ann2's 2 too: rank 2 of water is not relevant
    assert {(label.rank, label.relevant) for label in labels.labels
            if label.sample_id == water} == {(1, 0), (2, 0)}


def _fresh(traced: Recorded, experiment: str) -> Recorded:
    """The app's traces again, into another experiment of the same store."""
    return record(traced.uri, experiment)


@pytest.mark.parametrize(("case", "message"), [
    ("bad_rank", "metadata 'rank': expected a whole number from 1, got 'first'"),
    ("list_and_rank", "a list of verdicts names its chunks by position"),
    ("bad_value", "expected a verdict (true/false, 0/1 or a grade), got 'maybe'"),
    ("annotators_differ", "'ann' says 1"),
    ("judge_only", "none names a chunk (0 HUMAN feedback named"),
])
def test_bad_feedback_fails_in_one_line_naming_the_trace(
    labelled: Labelled, case: str, message: str
) -> None:
    traced = _fresh(labelled.traced, f"bad-{case}")
    capital = traced.traces[CAPITAL]
    with active_store(traced.uri, f"bad-{case}"):
        span = _spans(traced.uri, capital)[0]
        logged = {
            "bad_rank": lambda: _log(capital, 1, span, rank="first"),
            "list_and_rank": lambda: _log(capital, [1, 0, 0], span, rank=1),
            "bad_value": lambda: _log(capital, "maybe", span, rank=1),
            "annotators_differ": lambda: (_log(capital, 1, span, rank=2),
                                          _log(capital, 0, span, source=_source(who="bo"),
                                               context_id="d2")),
            "judge_only": lambda: _log(capital, [1, 0, 0], source=_source("LLM_JUDGE", "j")),
        }[case]()
    assert logged is not None
    with pytest.raises(DatasetError) as caught:
        trace_labels(_dataset(traced.uri, f"bad-{case}"))
    text = str(caught.value)
    assert message in text and "\n" not in text
    if case != "judge_only":
        assert f"trace {capital}" in text
    if case in ("bad_rank", "bad_value"):
        assert "feedback 'relevance' (" in text


def test_another_dataset_is_refused() -> None:
    from harness.datasets.memory import RecordsDataset

    records = RecordsDataset([{"id": "q1", "retrieved_context_ids": ["d1"]}])
    with pytest.raises(ConfigError, match="dataset=mlflow_traces"):
        trace_labels(records)  # not read from traces: its declared traced is None
