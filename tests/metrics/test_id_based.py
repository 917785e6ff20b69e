"""docs/reference/metrics.md 2.1 and 2.2: ragas IDBasedContextPrecision, and our rank-aware
id_ranked."""

from collections.abc import Sequence

import pytest

from harness.core.types import RagSample
from harness.metrics.id_based import IdContextPrecision
from harness.metrics.ranking import average_precision

ID_BASED = IdContextPrecision("id_based", aggregate="set_precision")
ID_RANKED = IdContextPrecision("id_ranked", aggregate="average_precision")


def sample(
    retrieved: Sequence[object] | None,
    reference: Sequence[object] | None,
    grades: tuple[float, ...] | None = None,
    sid: str = "s",
) -> RagSample:
    return RagSample(
        id=sid,
        retrieved_context_ids=None if retrieved is None else tuple(str(r) for r in retrieved),
        reference_context_ids=None if reference is None else tuple(str(r) for r in reference),
        reference_context_grades=grades,
    )


def test_seed_example_is_half() -> None:
    s = sample(["doc_1", "doc_2", "doc_3", "doc_4"], ["doc_1", "doc_4", "doc_5", "doc_6"])
    result = ID_BASED.score_one(s)
    assert repr(result.score) == "0.5"
    assert result.verdicts == [1, 0, 0, 1]


def test_duplicates_collapse() -> None:
    assert ID_BASED.score_one(sample([1, 1, 2], [1])).score == 0.5


def test_int_matches_str() -> None:
    # The loader normalises ids with str(), as ragas compares str(id).
    assert ID_BASED.score_one(sample([1, "2"], ["1"])).score == 0.5


def test_not_rank_aware() -> None:
    assert ID_BASED.score_one(sample(["a", "b"], ["b"])).score == 0.5
    assert ID_BASED.score_one(sample(["b", "a"], ["b"])).score == 0.5


def test_empty_retrieved_is_unscored_not_zero() -> None:
    result = ID_BASED.score_one(sample([], ["a"]))
    assert result.score is None
    assert result.error is not None and "retrieved_context_ids is empty" in result.error


def test_empty_reference_is_zero() -> None:
    assert ID_BASED.score_one(sample(["a"], [])).score == 0.0


def test_missing_field_is_unscored_with_reason() -> None:
    result = ID_BASED.score_one(sample(["a"], None))
    assert result.score is None and result.error == "missing field reference_context_ids"


@pytest.mark.parametrize(
    ("retrieved", "reference", "expected"),
    [
        (["a", "b"], ["a"], 1.0),
        (["b", "a"], ["a"], 0.5),
        (["x", "a", "b"], ["a", "b"], average_precision([0, 1, 1])),
        ([], ["a"], 0.0),
    ],
)
def test_id_ranked_is_average_precision(
    retrieved: list[str], reference: list[str], expected: float
) -> None:
    assert ID_RANKED.score_one(sample(retrieved, reference)).score == expected


def test_id_ranked_repeated_id_counts_once() -> None:
    result = ID_RANKED.score_one(sample(["a", "a", "b"], ["a", "b"]))
    assert result.verdicts == [1, 0, 1]
    assert result.score == average_precision([1, 0, 1])


def test_id_ranked_eps_is_configurable() -> None:
    metric = IdContextPrecision("id_ranked", aggregate="average_precision", eps=1e-10)
    assert repr(metric.score_one(sample(["x", "a"], ["a"])).score) == "0.49999999995"


def test_graded_relevance_uses_min_grade() -> None:
    s = sample(["a", "b", "c"], ["a", "b", "c"], grades=(0.0, 1.0, 2.0))
    for min_grade, verdicts in ((1, [0, 1, 1]), (2, [0, 0, 1])):
        metric = IdContextPrecision("id_ranked", "average_precision", min_grade=min_grade)
        assert metric.score_one(s).verdicts == verdicts
    assert IdContextPrecision("id_based", min_grade=2).score_one(s).score == pytest.approx(1 / 3)
