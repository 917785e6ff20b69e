"""The interval for few labels: the bootstrap's estimator is ppi_py's PPI++ point estimate on
every resample, its plain BCa interval agrees with scipy's, the expanded one is the plain
one at the level Student's t gives, it is seeded, and the block uses it below 50 labelled
samples and ppi_py's central-limit interval from 50."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.ppi_sim import ap, population

from harness.confidence.bootstrap import (
    BOOTSTRAP_BELOW,
    RESAMPLED_UP_TO,
    bca_interval,
    bca_test,
    estimates,
)
from harness.confidence.ppi import classical_ci, confidence_block

ppi_py = pytest.importorskip("ppi_py")
stats = pytest.importorskip("scipy.stats")


def arrays(seed: int, n: int, n_rest: int, judge: str = "lenient"):
    human, judged = population(np.random.default_rng(seed), n + n_rest, judge)
    h, j = ap(human), ap(judged)
    return h[:n], j[:n], j[n:]


@pytest.mark.parametrize(("n", "n_rest"), [(3, 2), (10, 5), (30, 570), (49, 3000)])
@pytest.mark.parametrize("judge", ["lenient", "useless"])
def test_each_resample_s_estimate_is_ppi_py_s(n, n_rest, judge):
    """20 explicit resamples of labelled and unlabelled samples: the estimator the bootstrap
    uses gives ppi_py.ppi_mean_pointestimate(lam=None) on each."""
    y, yhat, rest = arrays(n + n_rest, n, n_rest, judge)
    rng = np.random.default_rng(1)
    pick = rng.integers(0, n, (20, n))
    drawn = rest[rng.integers(0, n_rest, (20, n_rest))]
    ours = estimates(y[pick], yhat[pick], drawn.sum(axis=1), (drawn ** 2).sum(axis=1), n_rest)
    want = [ppi_py.ppi_mean_pointestimate(y[p], yhat[p], d, lam=None)[0]
            for p, d in zip(pick, drawn, strict=True)]
    assert ours == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_labels_only_interval_is_scipy_s_bca(seed):
    """The labels alone (the judge unused): the BCa interval of a mean, as scipy's (its
    resamples drawn otherwise: equal to within the resampling noise)."""
    y, yhat, rest = arrays(seed, 30, 570)
    ours = bca_interval(y, yhat, rest, 0.95, seed, resamples=4000, judge_weight=False,
                        expand=False)
    ref = stats.bootstrap((y,), np.mean, method="BCa", n_resamples=20000, random_state=seed,
                          confidence_level=0.95).confidence_interval
    width = ref.high - ref.low
    assert ours == pytest.approx([ref.low, ref.high], abs=0.04 * width)


@pytest.mark.parametrize(("seed", "n"), [(0, 20), (1, 30), (2, 45)])
def test_the_ppi_interval_is_scipy_s_bca_of_the_ppi_estimator(seed, n):
    """scipy's BCa over the labelled indices and the unlabelled scores resampled apart, the
    statistic ppi_py's PPI++ estimate (through ``estimates``, checked equal above)."""
    y, yhat, rest = arrays(seed, n, 400)

    def ppi(index, unlabelled, axis=-1):
        one = np.ndim(index) == 1
        index = np.atleast_2d(index).astype(int)
        unlabelled = np.atleast_2d(unlabelled)
        got = estimates(y[index], yhat[index], unlabelled.sum(axis=-1),
                        (unlabelled ** 2).sum(axis=-1), len(rest))
        return got[0] if one else got

    ref = stats.bootstrap((np.arange(n), rest), ppi, method="BCa", n_resamples=6000,
                          random_state=seed, vectorized=True, batch=500,
                          confidence_level=0.95).confidence_interval
    ours = bca_interval(y, yhat, rest, 0.95, seed, resamples=4000, expand=False)
    width = ref.high - ref.low
    assert ours == pytest.approx([ref.low, ref.high], abs=0.05 * width)


@pytest.mark.parametrize(("n", "level"), [(5, 0.95), (20, 0.95), (30, 0.9), (49, 0.99)])
def test_the_expanded_interval_is_the_plain_one_at_student_s_level(n, level):
    """Hesterberg's expansion: the quantile z becomes sqrt(n/(n-1)) t_(n-1): the plain BCa
    interval at the level whose normal quantile that is, on the same resamples."""
    y, yhat, rest = arrays(n, n, 300)
    wider = stats.t.ppf((1 + level) / 2, n - 1) * np.sqrt(n / (n - 1))
    plain_level = 2 * stats.norm.cdf(wider) - 1
    assert bca_interval(y, yhat, rest, level, 1) == pytest.approx(
        bca_interval(y, yhat, rest, plain_level, 1, expand=False), abs=1e-12)
    assert bca_interval(y, yhat, rest, level, 1, judge_weight=False) == pytest.approx(
        bca_interval(y, yhat, rest, plain_level, 1, judge_weight=False, expand=False),
        abs=1e-12)
    plain = bca_interval(y, yhat, rest, level, 1, expand=False)
    expanded = bca_interval(y, yhat, rest, level, 1)
    assert expanded[0] < plain[0] and expanded[1] > plain[1]


def test_it_is_seeded():
    y, yhat, rest = arrays(3, 25, 300)
    a = bca_interval(y, yhat, rest, 0.95, seed=7)
    assert bca_interval(y, yhat, rest, 0.95, seed=7) == a
    b = bca_interval(y, yhat, rest, 0.95, seed=8)
    assert b != a and b == pytest.approx(a, abs=0.1 * (a[1] - a[0]))


def test_many_unlabelled_samples_are_kept_as_they_are():
    """Past RESAMPLED_UP_TO unlabelled samples they are not resampled: the interval is that
    of one fewer, resampled, to within the resampling noise."""
    y, yhat, rest = arrays(4, 30, RESAMPLED_UP_TO + 1)
    kept = bca_interval(y, yhat, rest, 0.95, seed=0, resamples=4000)
    resampled = bca_interval(y, yhat, rest[:-1], 0.95, seed=0, resamples=4000)
    assert kept == pytest.approx(resampled, abs=0.06 * (kept[1] - kept[0]))


def _block(n: int, n_rest: int = 300, seed: int = 0):
    y, yhat, rest = arrays(5, n, n_rest)
    ids = [f"s{i:04d}" for i in range(n + n_rest)]
    judge = dict(zip(ids, [*yhat, *rest], strict=True))
    human = dict(zip(ids[:n], y, strict=True))
    return confidence_block(judge, human, seed=seed), (y, yhat, rest)


def test_below_50_labels_the_block_says_bootstrap():
    block, (y, yhat, rest) = _block(BOOTSTRAP_BELOW - 1, seed=3)
    assert block["interval_method"] == "bootstrap"
    assert block["interval"] == (
        "bootstrap (BCa expanded for small samples, 2,000 resamples of the PPI++ estimator, "
        "lambda re-estimated in each, seed 3): 49 labelled samples, fewer than the 50 the "
        "central-limit interval needs")
    assert block["ci"] == bca_interval(y, yhat, rest, 0.95, 3)
    assert block["labels_only_ci"] == bca_interval(y, yhat, rest, 0.95, 3, judge_weight=False)
    assert block["judge_only_ci"] == pytest.approx(classical_ci([*yhat, *rest]), rel=1e-12)
    assert block["mean"] == pytest.approx(
        ppi_py.ppi_mean_pointestimate(y, yhat, rest, lam=None)[0], rel=1e-12)


def test_from_50_labels_the_block_is_ppi_py_s_central_limit_interval():
    block, (y, yhat, rest) = _block(BOOTSTRAP_BELOW)
    assert block["interval_method"] == "clt"
    assert block["interval"] == "normal (central limit), ppi_py.ppi_mean_ci and classical_mean_ci"
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, rest, alpha=0.05, lam=None)
    assert block["ci"] == pytest.approx([lo[0], hi[0]], rel=1e-9)
    assert block["labels_only_ci"] == pytest.approx(classical_ci(y), rel=1e-9)


def test_the_order_samples_come_in_does_not_change_the_interval():
    y, yhat, rest = arrays(6, 20, 100)
    ids = [f"s{i:03d}" for i in range(120)]
    judge = dict(zip(ids, [*yhat, *rest], strict=True))
    human = dict(zip(ids[:20], y, strict=True))
    shuffled = dict(sorted(judge.items(), key=lambda kv: hash(kv[0]) % 17))
    assert confidence_block(shuffled, dict(reversed(human.items())))["ci"] == (
        confidence_block(judge, human)["ci"])


def test_everything_labelled_below_50_is_the_labels_own_bootstrap_interval():
    y, yhat, _ = arrays(7, 20, 2)
    ids = [f"s{i:02d}" for i in range(20)]
    block = confidence_block(dict(zip(ids, yhat.tolist(), strict=True)),
                             dict(zip(ids, y.tolist(), strict=True)), seed=2)
    assert block["ci"] == block["labels_only_ci"] == bca_interval(
        y, yhat, [], 0.95, 2, judge_weight=False)
    assert block["interval_method"] == "bootstrap"
    assert "resamples of the labels' mean, seed 2" in block["interval"]


@pytest.mark.parametrize("judge_weight", [True, False])
def test_the_p_value_is_below_alpha_exactly_when_the_interval_leaves_out_0(judge_weight):
    """Paired differences (in [-1, 1]) of 30 random cases, 5 to 49 labelled: the test's
    p-value is below alpha exactly when the interval at 1 - alpha (checked against scipy's
    BCa above) leaves out 0, at five levels; cases within the resamples' quantile step of
    the boundary are not decided by either and are skipped (at most a few)."""
    rng = np.random.default_rng(11)
    checked = 0
    for case in range(30):
        n, shift = int(rng.integers(5, 50)), float(rng.normal(0, 0.12))
        y = np.clip(rng.normal(shift, 0.3, n), -1, 1)
        yhat = np.clip(y + rng.normal(0.05, 0.2, n), -1, 1)
        rest = np.clip(rng.normal(shift + 0.05, 0.35, 300), -1, 1)
        for alpha in (0.01, 0.05, 0.1, 0.3, 0.5):
            ci, p = bca_test(y, yhat, rest, 1 - alpha, case, judge_weight=judge_weight)
            assert ci == bca_interval(y, yhat, rest, 1 - alpha, case, judge_weight=judge_weight)
            if abs(p - alpha) < 0.003 or min(abs(ci[0]), abs(ci[1])) < 1e-3:
                continue
            assert (p < alpha) == (ci[0] > 0 or ci[1] < 0), (case, alpha, p, ci)
            checked += 1
    assert checked >= 140


def test_the_p_value_is_0_when_every_resample_lies_on_one_side():
    """Every labelled difference positive: no resample reaches 0, so no interval does."""
    y = np.array([0.2, 0.3, 0.25, 0.4, 0.35, 0.3])
    _, p = bca_test(y, y, np.full(50, 0.3), 0.95, 0, judge_weight=False)
    assert p == 0.0
    _, p = bca_test(y - 0.3, y - 0.3, np.zeros(50), 0.95, 0, judge_weight=False)
    assert p > 0.5  # centred on 0
