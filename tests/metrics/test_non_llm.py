"""docs/reference/metrics.md 2.3: ragas NonLLMContextPrecisionWithReference, checked against
rapidfuzz."""

import random
from collections.abc import Sequence
from typing import Any

import pytest
from rapidfuzz import distance

from harness.core.errors import ConfigError
from harness.core.types import RagSample
from harness.metrics.non_llm import MEASURES, StringContextPrecision
from harness.metrics.ranking import average_precision

EIFFEL = "The Eiffel Tower is located in Paris."
REFS = (
    "Paris is the capital of France.",
    "The Eiffel Tower is one of the most famous landmarks in Paris.",
)


def metric(**kw: Any) -> StringContextPrecision:
    return StringContextPrecision("non_llm", **kw)


def sample(
    retrieved: Sequence[str] | None, reference: Sequence[str] | None, sid: str = "s"
) -> RagSample:
    return RagSample(
        id=sid,
        retrieved_contexts=None if retrieved is None else tuple(retrieved),
        reference_contexts=None if reference is None else tuple(reference),
    )


def test_seed_example() -> None:
    # The spec's similarities: 0.21621621621621623 and 0.5483870967741935; max >= 0.5.
    per_ref = [1 - distance.Levenshtein.normalized_distance(EIFFEL, r) for r in REFS]
    assert [repr(x) for x in per_ref] == ["0.21621621621621623", "0.5483870967741935"]
    [result] = metric().score_batch([sample([EIFFEL], REFS)])
    assert result.details["similarities"] == [0.5483870967741935]
    assert result.verdicts == [1]
    assert repr(result.score) == "0.9999999999"


def test_threshold_is_inclusive() -> None:
    [result] = metric().score_batch([sample(["ab"], ["ac"])])
    assert result.details["similarities"] == [0.5]
    assert result.verdicts == [1]


def test_threshold_is_configurable() -> None:
    [result] = metric(threshold=0.6).score_batch([sample(["ab"], ["ac"])])
    assert result.verdicts == [0] and result.score == 0.0


def test_empty_reference_is_unscored_with_reason() -> None:
    [result] = metric().score_batch([sample(["a"], [])])
    assert result.score is None and "reference_contexts is empty" in (result.error or "")


def test_missing_reference_is_unscored() -> None:
    [result] = metric().score_batch([sample(["a"], None)])
    assert result.score is None and result.error == "missing field reference_contexts"


def test_empty_retrieved_is_zero_as_in_ragas() -> None:
    [result] = metric().score_batch([sample([], ["a"])])
    assert result.score == 0.0 and result.verdicts == []


def _words(rng: random.Random, n: int) -> str:
    vocab = ["paris", "tower", "river", "the", "is", "a", "city", "in", "France", "old", "of"]
    return " ".join(rng.choice(vocab) for _ in range(n))


@pytest.mark.parametrize("measure", sorted(MEASURES))
def test_batch_equals_per_pair_rapidfuzz_loop(measure: str) -> None:
    """Every measure, on random data, equals the plain ragas-style loop bit for bit."""
    rng = random.Random(7)
    samples = []
    for i in range(60):
        refs = [_words(rng, rng.randint(3, 9)) for _ in range(rng.randint(1, 3))]
        chunks = [
            rng.choice(refs) if rng.random() < 0.3 else _words(rng, rng.randint(3, 9))
            for _ in range(rng.randint(0, 5))
        ]
        samples.append(sample(chunks, refs, sid=str(i)))
    scorer = getattr(distance, MEASURES[measure]).normalized_distance
    results = metric(measure=measure).score_batch(samples)
    for s, result in zip(samples, results, strict=True):
        assert s.reference_contexts is not None and s.retrieved_contexts is not None
        sims = [max(1 - scorer(c, r) for r in s.reference_contexts) for c in s.retrieved_contexts]
        verdicts = [1 if x >= 0.5 else 0 for x in sims]
        assert result.details["similarities"] == sims
        assert result.verdicts == verdicts
        assert repr(result.score) == repr(average_precision(verdicts, 1e-10))


def test_mixed_batch_keeps_order_and_alignment() -> None:
    batch = [sample([EIFFEL], REFS, "a"), sample(["x"], [], "b"), sample(["zz", "ab"], ["ac"], "c")]
    results = metric().score_batch(batch)
    assert [r.id for r in results] == ["a", "b", "c"]
    assert results[1].score is None
    assert results[2].verdicts == [0, 1] and repr(results[2].score) == "0.49999999995"


def test_unknown_measure_suggests_the_closest() -> None:
    with pytest.raises(ConfigError, match="did you mean 'levenshtein'"):
        metric(measure="levenstein")
