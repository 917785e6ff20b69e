"""Labels tied to a run's chunks: a sample is labelled when all its chunks are; labels for
samples or chunks the run does not have are counted, never dropped in silence."""

from __future__ import annotations

import pytest

from harness.confidence.labels import Label, LabelFile
from harness.confidence.match import Judged, RunSample, judged, match, run_sample, same_text
from harness.core.errors import DatasetError

RUN = [
    RunSample("q1", ("d1", "d2", "d3"), ("Paris is the capital of France.", "Berlin…", "Rome")),
    RunSample("q2", ("d4", "d5"), ("x", "y")),
    RunSample("q3", ("d6", "d6"), ("same", "same")),
]


def _file(*labels, blank=0):
    return LabelFile("labels.jsonl", tuple(labels), blank)


def test_by_id_rank_and_text_a_sample_is_labelled_when_every_chunk_is():
    got = match(_file(
        Label("q1", 1, 1, context_id="d1"),
        Label("q1", 0, 2, rank=2),
        Label("q1", 0, 3, context="Rome"),
        Label("q2", 1, 4, context_id="d5"),      # q2 has two chunks: one is not enough
    ), RUN)
    assert got.verdicts == {"q1": (1, 0, 0)}
    assert got.counts() == {
        "label_rows": 4, "blank_rows": 0, "matched_rows": 4, "unknown_samples": 0,
        "unknown_chunks": 0, "partially_labelled_samples": 1, "labelled_samples": 1}


def test_labels_the_run_does_not_have_are_counted():
    got = match(_file(
        Label("q9", 1, 1, rank=1),                # no such sample
        Label("q2", 1, 2, context_id="d99"),      # no such chunk
        Label("q2", 1, 3, rank=3),                # q2 has 2 chunks
        Label("q2", 0, 4, context="not there"),
        Label("q2", 0, 5, rank=1), Label("q2", 1, 6, rank=2),
    ), RUN)
    assert got.verdicts == {"q2": (0, 1)}
    assert (got.unknown_samples, got.unknown_chunks, got.used) == (1, 3, 2)


def test_a_repeated_id_or_text_labels_every_chunk_it_names():
    by_id = match(_file(Label("q3", 1, 1, context_id="d6")), RUN)
    by_text = match(_file(Label("q3", 0, 1, context="same")), RUN)
    assert by_id.verdicts == {"q3": (1, 1)} and by_text.verdicts == {"q3": (0, 0)}


def test_two_verdicts_for_one_chunk_name_both_lines():
    with pytest.raises(DatasetError) as e:
        match(_file(Label("q1", 1, 4, context_id="d1"), Label("q1", 0, 9, rank=1)), RUN)
    assert str(e.value) == (
        "labels.jsonl:9: field 'relevant': sample 'q1', rank 1: line 4 says 1, this line 0; "
        "keep one verdict per chunk")


def test_the_same_verdict_twice_is_fine():
    got = match(_file(Label("q2", 1, 1, rank=1), Label("q2", 1, 2, context_id="d4"),
                      Label("q2", 0, 3, rank=2)), RUN)
    assert got.verdicts == {"q2": (1, 0)}


@pytest.mark.parametrize(("label", "chunk", "same"), [
    ("Paris is the capital", "Paris is the capital", True),
    ("  Paris\n", "Paris", True),
    ("Paris is…", "Paris is the capital", True),        # the label cut, as samples.jsonl
    ("Paris is the capital", "Paris is…", True),        # the run's text cut
    ("Paris was…", "Paris is the capital", False),
    ("…", "anything", False),
    ("Paris", "Paris is the capital", False),           # a prefix without the cut mark
])
def test_same_text(label, chunk, same):
    assert same_text(label, chunk) is same


def test_rows_of_samples_jsonl():
    row = {"id": 3, "score": 0.5, "verdicts": [0, 1],
           "chunks": [{"id": "d1", "text": "a", "verdict": 0}, {"id": "d2", "text": "b…"}],
           "variants": {"llm": {"score": 1.0, "verdicts": [1, 0]}, "id_ranked": {"score": None}}}
    assert run_sample(row) == RunSample("3", ("d1", "d2"), ("a", "b…"))
    assert run_sample({"id": "x", "retrieved_context_ids": ["a", "b"]}) == RunSample(
        "x", ("a", "b"))
    assert len(run_sample({"id": "x", "verdicts": [1, 0, 0]})) == 3
    assert judged(row) == Judged("3", 0.5, (0, 1))
    assert judged(row, "llm") == Judged("3", 1.0, (1, 0))
    assert judged(row, "id_ranked") == Judged("3", None, None)
    assert judged(row, "nope") == Judged("3", None)
