"""The confidence block: PPI++ as ppi_py computes it, the two classical intervals, and the
judge's agreement with the labels (kappa as scikit-learn computes it)."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from harness.confidence.agreement import judge_agreement
from harness.confidence.match import Judged, Matched
from harness.confidence.ppi import (
    NOT_DRAWN,
    classical_ci,
    confidence_block,
    human_score,
    ppi_mean_ci,
    variant_confidence,
)
from harness.core.errors import ConfigError

ppi_py = pytest.importorskip("ppi_py")


def _arrays(seed, n=120, big=900, bias=0.15):
    rng = np.random.default_rng(seed)
    y = rng.random(n + big).round(2)
    yhat = np.clip(y + bias + rng.normal(0, 0.2, n + big), 0, 1)
    return y[:n], yhat[:n], yhat[n:]


@pytest.mark.parametrize(("seed", "level"), [(0, 0.95), (1, 0.9), (2, 0.99), (3, 0.8)])
def test_point_estimate_and_interval_are_ppi_py_s(seed, level):
    y, yhat, rest = _arrays(seed)
    mean, ci = ppi_mean_ci(y, yhat, rest, level)
    assert mean == float(ppi_py.ppi_mean_pointestimate(y, yhat, rest, lam=None)[0])
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, rest, alpha=1 - level, lam=None)
    assert ci == [float(lo[0]), float(hi[0])]
    assert ci[0] < mean < ci[1]


def test_the_block_feeds_ppi_py_the_labelled_and_the_unlabelled_samples():
    y, yhat, rest = _arrays(5)
    ids = [f"s{i}" for i in range(len(y) + len(rest))]
    judge = dict(zip(ids, [*yhat, *rest], strict=True))
    human = dict(zip(ids[: len(y)], y, strict=True))
    shuffled = dict(sorted(judge.items(), key=lambda kv: hash(kv[0]) % 97))
    block = confidence_block(shuffled, human)
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, rest, alpha=0.05)
    assert block["ci"] == pytest.approx([lo[0], hi[0]], rel=1e-12)
    assert block["mean"] == pytest.approx(ppi_py.ppi_mean_pointestimate(y, yhat, rest)[0],
                                          rel=1e-12)
    assert (block["n"], block["n_labelled"], block["method"]) == (1020, 120, "ppi++")
    everything = np.concatenate([yhat, rest])
    assert block["judge_mean"] == pytest.approx(everything.mean())
    assert block["judge_only_ci"] == pytest.approx(classical_ci(everything))
    assert block["labels_only_ci"] == pytest.approx(classical_ci(y))
    assert block["random_draw"] is False and block["note"] == NOT_DRAWN


@pytest.mark.parametrize("level", [0.95, 0.9])
def test_classical_interval_is_the_normal_one(level):
    from scipy.stats import norm

    values = [0.0, 0.25, 1.0, 0.5, 0.5, 1.0, 0.0, 1 / 3]
    mean = statistics.fmean(values)
    half = norm.ppf(1 - (1 - level) / 2) * statistics.pstdev(values) / math.sqrt(len(values))
    assert classical_ci(values, level) == pytest.approx([mean - half, mean + half], rel=1e-12)


def test_unscored_samples_are_left_out_and_counted():
    judge = {"a": 0.5, "b": 1.0, "c": None, "d": 0.0, "e": 0.25, "f": 1.0}
    block = confidence_block(judge, {"a": 0.5, "b": 0.0, "c": 1.0, "d": 0.0}, random_draw=True)
    assert (block["n"], block["n_labelled"], block["n_labelled_unscored"]) == (5, 3, 1)
    assert block["note"] is None and block["random_draw"] is True


def test_every_sample_labelled_gives_the_labels_own_interval():
    block = confidence_block({"a": 1.0, "b": 0.5, "c": 0.0}, {"a": 1.0, "b": 0.0, "c": 0.5})
    assert block["ci"] == block["labels_only_ci"] and block["mean"] == 0.5
    assert "every scored sample is labelled" in block["note"]
    one_left = confidence_block({"a": 1.0, "b": 0.5, "c": 0.0}, {"a": 1.0, "b": 0.0})
    assert one_left["ci"] == one_left["labels_only_ci"]
    assert one_left["note"].startswith("all scored samples but one are labelled")


@pytest.mark.parametrize("human", [{}, {"a": 1.0}, {"zz": 1.0, "a": 0.0}])
def test_fewer_than_two_labelled_samples_is_refused(human):
    with pytest.raises(ConfigError, match=r"^run.human_labels: [01] labelled sample"):
        confidence_block({"a": 0.5, "b": 0.5, "c": 0.0}, human)


def test_level_out_of_range_is_refused():
    with pytest.raises(ConfigError, match="expected a number between 0 and 1"):
        confidence_block({"a": 0.5, "b": 0.5}, {"a": 1.0, "b": 0.0}, level=95)


@pytest.mark.parametrize(("verdicts", "eps", "score"), [
    ((1, 0), 0.0, 1.0), ((0, 1), 0.0, 0.5), ((0, 0, 0), 0.0, 0.0),
    ((0, 1, 0, 1), 0.0, (1 / 2 + 2 / 4) / 2), ((0, 1), 1e-10, 0.5 / (1 + 1e-10)),
])
def test_human_score_is_the_variant_s_average_precision(verdicts, eps, score):
    assert human_score(eps)(verdicts) == score


def test_kappa_by_hand():
    # 20 tp, 10 fp, 5 fn, 15 tn: observed 0.7, expected 0.6*0.5 + 0.4*0.5 = 0.5, kappa 0.4
    human = [1] * 20 + [0] * 10 + [1] * 5 + [0] * 15
    judge = [1] * 20 + [1] * 10 + [0] * 5 + [0] * 15
    got = judge_agreement(human, judge)
    assert (got["tp"], got["fp"], got["fn"], got["tn"], got["n_chunks"]) == (20, 10, 5, 15, 50)
    assert got["kappa"] == pytest.approx(0.4) and got["accuracy"] == pytest.approx(0.7)
    assert got["precision"] == pytest.approx(20 / 30) and got["recall"] == pytest.approx(0.8)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_agreement_is_scikit_learn_s(seed):
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(seed)
    human = (rng.random(300) < 0.4).astype(int)
    soft = np.clip(human * 0.6 + rng.random(300) * 0.5, 0, 1)  # soft verdicts, from 0.5
    judge = (soft >= 0.5).astype(int)
    got = judge_agreement(list(human), list(soft))
    assert got["kappa"] == pytest.approx(metrics.cohen_kappa_score(human, judge), abs=1e-12)
    assert got["accuracy"] == pytest.approx(metrics.accuracy_score(human, judge))
    assert got["precision"] == pytest.approx(metrics.precision_score(human, judge))
    assert got["recall"] == pytest.approx(metrics.recall_score(human, judge))
    tn, fp, fn, tp = metrics.confusion_matrix(human, judge, labels=[0, 1]).ravel()
    assert (got["tn"], got["fp"], got["fn"], got["tp"]) == (tn, fp, fn, tp)


def test_agreement_where_it_is_undefined():
    assert judge_agreement([1, 1], [1, 1])["kappa"] is None
    none = judge_agreement([0, 0], [0, 0])
    assert (none["precision"], none["recall"], none["accuracy"]) == (None, None, 1.0)
    assert judge_agreement([], [])["n_chunks"] == 0
    with pytest.raises(ValueError):
        judge_agreement([1], [1, 0])


def test_variant_confidence_scores_labels_with_the_variant_and_compares_labelled_chunks():
    judged = [Judged("a", 1.0, (1, 0)), Judged("b", 0.5, (0, 1)), Judged("c", 1.0, (1, 1)),
              Judged("d", 0.0, (0, 0)), Judged("e", None, None), Judged("f", 1.0, (1,))]
    matched = Matched(verdicts={"a": (0, 1), "b": (0, 1), "f": (1, 0)}, rows=6, used=6)
    block = variant_confidence(judged, matched, human_score(0.0))
    assert block["labels_only_mean"] == pytest.approx((0.5 + 0.5 + 1.0) / 3)
    # chunks of a and b only: f's judge saw one chunk where two are labelled
    agreement = block["judge_agreement"]
    assert (agreement["n_chunks"], agreement["tp"], agreement["fp"], agreement["fn"],
            agreement["tn"]) == (4, 1, 1, 1, 1)
    assert block["n"] == 5 and block["labels"]["labelled_samples"] == 3
