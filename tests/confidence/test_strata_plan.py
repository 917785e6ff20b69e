"""How many labels, by stratum (``harness label --width W --by COLUMN``): without labels the
textbook number for proportional allocation (Cochran: n = z² sum(w_h s_h²) / W²); from a
pilot drawn by value, the stratified interval then reaches the width most times; and the
labels a stratified block says would halve its width do halve it."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from helpers.ppi_sim import ap, population
from scipy.stats import norm

from harness.confidence.plan import allocate, plan_strata
from harness.confidence.ppi import confidence_block
from harness.confidence.strata import stratify_block

pytest.importorskip("ppi_py")
Z = float(norm.ppf(0.975))


def _groups(scores: dict[str, list[float]]) -> dict[str, tuple[list[float], list, list]]:
    return {v: (s, [], []) for v, s in scores.items()}


@pytest.mark.parametrize("width", [0.02, 0.05])
def test_without_labels_it_is_cochran_s_proportional_number(width: float) -> None:
    rng = np.random.default_rng(0)
    scores = {"easy": rng.beta(6, 2, 1200).tolist(), "hard": rng.beta(2, 5, 600).tolist()}
    got = plan_strata(width, _groups(scores), "qtype")
    total = 1800
    want = Z * Z * sum(len(s) / total * statistics.variance(s) for s in scores.values())
    want /= width ** 2
    pooled = math.ceil(Z * Z * statistics.variance(scores["easy"] + scores["hard"]) / width ** 2)
    assert got.needed is not None and abs(got.needed - math.ceil(want)) <= 1, (got, want)
    assert got.unstratified == pooled and got.needed < 0.6 * pooled  # the strata differ
    shares = {s.value: s.target for s in got.shares}
    assert shares == allocate({"easy": 1200, "hard": 600}, got.needed, "qtype")
    assert got.more == got.needed and got.labelled == 0
    assert not any(s.from_labels for s in got.shares)


def test_labels_so_far_are_kept_and_only_the_rest_is_drawn() -> None:
    rng = np.random.default_rng(1)
    judge = {"a": rng.random(900).tolist(), "b": rng.random(100).tolist()}
    # the small value over-labelled (40 of 100): it keeps them, the large one gets the rest
    groups = {"a": (judge["a"], judge["a"][:12], judge["a"][:12]),
              "b": (judge["b"], judge["b"][:40], judge["b"][:40])}
    got = plan_strata(0.05, groups, "q")
    by = {s.value: s for s in got.shares}
    assert by["b"].target == 40 and by["b"].more == 0 and by["a"].labelled == 12
    assert got.more == by["a"].target - 12 == got.counts()["a"] and got.counts()["b"] == 0
    assert all(s.from_labels for s in got.shares)
    # labels so far beyond what the width needs: both figures count the labels kept
    wide = plan_strata(0.5, groups, "q")
    assert wide.more == 0 and wide.needed == wide.unstratified == 52


def test_a_width_the_run_cannot_reach_and_a_value_judged_all_alike() -> None:
    assert plan_strata(0.001, _groups({"a": [0.0, 1.0] * 20, "b": [0.5, 1.0] * 5}),
                       "q").needed is None
    # the judge gave "b" one score: the run's spread stands in for it, not zero
    alike = plan_strata(0.1, _groups({"a": [0.0, 1.0] * 50, "b": [1.0] * 100}), "q")
    assert {s.value: s.target for s in alike.shares}["b"] > 2


def _strata_population(seed: int, sizes: tuple[int, int]):
    """Two values: ``a`` judged leniently, ``b`` strictly (their judge errors differ)."""
    rng = np.random.default_rng(seed)
    judge, human, strata = {}, {}, {}
    for (name, kind), size in zip((("a", "lenient"), ("b", "strict")), sizes, strict=True):
        h, j = population(rng, size, kind)
        for i, (hs, js) in enumerate(zip(ap(h), ap(j), strict=True)):
            key = f"{name}{i:05d}"
            judge[key], human[key], strata[key] = float(js), float(hs), name
    return rng, judge, human, strata


def _draw(rng, strata: dict[str, str], counts: dict[str, int], have: set[str]) -> set[str]:
    """``counts`` more of each value, uniformly among those not in ``have``."""
    out = set(have)
    for value, n in counts.items():
        pool = sorted(k for k, v in strata.items() if v == value and k not in have)
        out |= set(rng.choice(pool, n, replace=False).tolist())
    return out


def _half_width(judge, human, strata, labelled: set[str], seed: int) -> float:
    given = {k: human[k] for k in labelled}
    block = stratify_block(confidence_block(judge, given, seed=seed), judge, given, strata,
                           "q", 0.95, seed=seed)
    assert block["interval_method"] == "stratified"
    return (block["ci"][1] - block["ci"][0]) / 2, block


def _plan_from(judge, human, strata, labelled: set[str], width: float):
    groups: dict[str, tuple[list, list, list]] = {}
    for k, score in judge.items():
        g = groups.setdefault(strata[k], ([], [], []))
        g[0].append(score)
        if k in labelled:
            g[1].append(human[k])
            g[2].append(score)
    return plan_strata(width, groups, "q")


@pytest.mark.slow
def test_planned_from_a_pilot_by_value_the_stratified_width_is_met_most_times() -> None:
    """60 pilots of 30 drawn by value (20 and 10) over 2,000 + 1,000 samples, each planning
    ±0.04: the planned labels, shared by value, give the stratified interval at most the
    half-width in at least 3 of 4 and at most 1.15 times it in at least 9 of 10 (measured:
    49 and 58 of 60; the plans' median 259 labels, the unstratified plans' 299)."""
    met = close = 0
    for trial in range(60):
        rng, judge, human, strata = _strata_population(300 + trial, (2000, 1000))
        pilot = _draw(rng, strata, allocate({"a": 2000, "b": 1000}, 30, "q"), set())
        got = _plan_from(judge, human, strata, pilot, 0.04)
        assert got.needed is not None and got.labelled == 30
        labelled = _draw(rng, strata, got.counts(), pilot)
        assert len(labelled) == got.needed
        w, _ = _half_width(judge, human, strata, labelled, trial)
        met += w <= 0.04
        close += w <= 0.04 * 1.15
    assert met >= 45 and close >= 54, (met, close)


@pytest.mark.slow
def test_the_labels_a_stratified_block_says_would_halve_it_do() -> None:
    """From 60 + 30 labels, the block's ``labels_to_halve_width`` more, drawn by value as
    the plan shares them, bring the half-width to about half (mean of 8 draws within 15 %)."""
    ratios = []
    for trial in range(8):
        rng, judge, human, strata = _strata_population(500 + trial, (3000, 1500))
        first = _draw(rng, strata, {"a": 60, "b": 30}, set())
        w0, block = _half_width(judge, human, strata, first, trial)
        more = block["labels_to_halve_width"]
        assert more is not None and more > 0
        assert block["unstratified"]["labels_to_halve_width"] is not None
        got = _plan_from(judge, human, strata, first, w0 / 2)
        assert got.more == more
        w1, _ = _half_width(judge, human, strata, _draw(rng, strata, got.counts(), first),
                            trial)
        ratios.append(w1 / w0)
    assert statistics.mean(ratios) == pytest.approx(0.5, rel=0.15), ratios
