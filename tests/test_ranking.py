"""docs/metrics.md section 1: the reference values, compared by Python repr."""

import pytest

from harness.metrics.ranking import average_precision, set_precision

# (verdicts, ragas repr with eps=1e-10, deepeval repr with eps=0 or None when not listed)
TABLE = [
    ([], "0.0", "0"),
    ([0], "0.0", "0"),
    ([1], "0.9999999999", "1.0"),
    ([1, 1], "0.99999999995", "1.0"),
    ([1, 1, 1], "0.9999999999666667", "1.0"),
    ([0, 1], "0.49999999995", "0.5"),
    ([1, 0, 1], "0.8333333332916666", "0.8333333333333333"),
    ([0, 1, 1], "0.5833333333041666", "0.5833333333333333"),
    ([0, 0, 1], "0.3333333333", "0.3333333333333333"),
    ([1, 0, 0, 1], "0.7499999999625", "0.75"),
    ([1, 1, 0, 1], "0.9166666666361111", "0.9166666666666666"),
    ([0, 0, 1, 1, 1], "0.47777777776185176", None),
    ([1, 1, 0, 0, 1, 1, 0, 1], "0.7783333333177667", None),
]


@pytest.mark.parametrize(("verdicts", "ragas", "deepeval"), TABLE)
def test_average_precision_matches_ragas_bit_for_bit(
    verdicts: list[float], ragas: str, deepeval: str | None
) -> None:
    assert repr(average_precision(verdicts, eps=1e-10)) == ragas


@pytest.mark.parametrize(("verdicts", "ragas", "deepeval"), [r for r in TABLE if r[2]])
def test_average_precision_matches_deepeval_bit_for_bit(
    verdicts: list[float], ragas: str, deepeval: str | None
) -> None:
    score = average_precision(verdicts, eps=0.0)
    if deepeval == "0":  # deepeval returns the int 0; ours is the float 0.0
        assert score == 0 and isinstance(score, float)
    else:
        assert repr(score) == deepeval


def test_no_relevant_chunk_is_zero_never_nan() -> None:
    assert average_precision([0, 0, 0], eps=0.0) == 0.0
    assert average_precision([0, 0, 0], eps=1e-10) == 0.0


def test_order_matters() -> None:
    assert average_precision([1, 0], 0.0) == 1.0
    assert average_precision([0, 1], 0.0) == 0.5


def test_soft_verdicts_use_the_same_formula() -> None:
    # P@1 = 0.5, P@2 = (0.5 + 1) / 2 = 0.75; (0.5*0.5 + 0.75*1) / 1.5
    assert average_precision([0.5, 1.0], eps=0.0) == pytest.approx((0.25 + 0.75) / 1.5)


def test_set_precision() -> None:
    assert set_precision([1, 0]) == 0.5
    assert set_precision([1, 1, 1]) == 1.0
