"""docs/reference/metrics.md section 1: the reference values, compared by Python repr."""

import pytest
from helpers.ranking_table import TABLE

from harness.metrics.ranking import average_precision, set_precision


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
