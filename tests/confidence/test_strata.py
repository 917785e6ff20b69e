"""``run.strata``: the PPI++ block per value of a dataset column and the overall one combined
from them. Expected values come from ``ppi_py`` on each stratum's arrays, built here, and the
textbook stratified estimator (weights N_h / N, standard error sqrt(sum w_h^2 se_h^2));
the coverage study (slow lane) shows the combination is needed when the labels over-represent
a stratum the judge errs on less."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers.ppi_sim import ap, population
from scipy.stats import binom, norm, t

from harness.confidence.plan import allocate
from harness.confidence.ppi import confidence_block
from harness.confidence.strata import stratify_block
from harness.core.errors import ConfigError

ppi_py = pytest.importorskip("ppi_py")
Z = float(norm.ppf(0.975))


def two_strata(seed: int, sizes: tuple[int, int], labelled: tuple[int, int]):
    """Stratum ``a`` judged by a lenient judge, ``b`` by a strict one; ``labelled[i]`` of
    each drawn uniformly within it. Judge scores, human scores of the labelled, strata,
    and each stratum's arrays (y, yhat, rest) in id order."""
    rng = np.random.default_rng(seed)
    judge, human, strata, arrays = {}, {}, {}, {}
    for (name, kind), size, n in zip((("a", "lenient"), ("b", "strict")), sizes, labelled,
                                     strict=True):
        h, j = population(rng, size, kind)
        hs, js = ap(h), ap(j)
        ids = [f"{name}{i:05d}" for i in range(size)]
        chosen = set(rng.choice(size, n, replace=False).tolist())
        for i, k in enumerate(ids):
            judge[k], strata[k] = float(js[i]), name
            if i in chosen:
                human[k] = float(hs[i])
        lab = np.array(sorted(chosen), dtype=int)
        rest = np.array([i for i in range(size) if i not in chosen], dtype=int)
        arrays[name] = (hs[lab], js[lab], js[rest], float(hs.mean()))
    return judge, human, strata, arrays


def combined(parts: list[tuple[float, float, float]]) -> tuple[float, list[float]]:
    mean = sum(w * m for w, m, _ in parts)
    se = math.sqrt(sum((w * s) ** 2 for w, _, s in parts))
    return mean, [mean - Z * se, mean + Z * se]


def test_each_value_is_ppi_py_s_and_the_whole_the_stratified_estimator():
    """60 and 80 labelled (the central-limit interval): each value's mean and interval are
    ppi_py's on its own arrays; the overall mean is their weighted mean (weights 1500/2000
    and 500/2000), its interval normal with the combined standard error; labels alone too."""
    judge, human, strata, arrays = two_strata(1, (1500, 500), (60, 80))
    block = stratify_block(confidence_block(judge, human), judge, human, strata, "qtype", 0.95)
    got = {e["value"]: e for e in block["strata"]["values"]}
    parts, label_parts = [], []
    for name, weight in (("a", 0.75), ("b", 0.25)):
        y, yhat, rest, _ = arrays[name]
        lo, hi = ppi_py.ppi_mean_ci(y, yhat, rest, alpha=0.05, lam=None)
        mean = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, yhat, rest, lam=None))[0])
        entry = got[name]
        assert entry["ci"] == pytest.approx([float(lo[0]), float(hi[0])], abs=1e-12)
        assert entry["mean"] == pytest.approx(mean, abs=1e-12)
        assert (entry["n"], entry["n_labelled"]) == (len(y) + len(rest), len(y))
        assert entry["interval_method"] == "clt"
        parts.append((weight, mean, (float(hi[0]) - float(lo[0])) / (2 * Z)))
        llo, lhi = ppi_py.classical_mean_ci(y, alpha=0.05)
        label_parts.append((weight, float(y.mean()), (float(lhi) - float(llo)) / (2 * Z)))
    mean, ci = combined(parts)
    assert block["mean"] == pytest.approx(mean, abs=1e-12)
    assert block["ci"] == pytest.approx(ci, abs=1e-12)
    lab_mean, lab_ci = combined(label_parts)
    assert block["labels_only_mean"] == pytest.approx(lab_mean, abs=1e-12)
    assert block["labels_only_ci"] == pytest.approx(lab_ci, abs=1e-12)
    assert block["interval_method"] == "stratified" and "stratified by qtype" in block["interval"]
    unstratified = confidence_block(judge, human)
    assert block["unstratified"]["mean"] == unstratified["mean"] != block["mean"]
    assert block["judge_mean"] == unstratified["judge_mean"]  # every sample, as before


def test_few_labels_read_the_standard_error_off_the_bootstrap_s_widened_quantile():
    """20 and 12 labelled: each value's interval is the bootstrap (as a run of it alone
    gets), and its standard error its width over 2 sqrt(n/(n-1)) t(n-1)."""
    judge, human, strata, _ = two_strata(2, (300, 100), (20, 12))
    block = stratify_block(confidence_block(judge, human, seed=3), judge, human, strata, "q",
                           0.95, seed=3)
    parts = []
    for entry, weight in zip(block["strata"]["values"], (0.75, 0.25), strict=True):
        mine = {k: v for k, v in judge.items() if strata[k] == entry["value"]}
        alone = confidence_block(mine, {k: h for k, h in human.items() if k in mine}, seed=3)
        assert entry["ci"] == alone["ci"] and alone["interval_method"] == "bootstrap"
        n = entry["n_labelled"]
        q = math.sqrt(n / (n - 1)) * float(t.ppf(0.975, n - 1))
        parts.append((weight, entry["mean"], (entry["ci"][1] - entry["ci"][0]) / (2 * q)))
    mean, ci = combined(parts)
    assert block["mean"] == pytest.approx(mean, abs=1e-12)
    assert block["ci"] == pytest.approx(ci, abs=1e-12)


def test_a_value_with_fewer_than_2_labels_leaves_the_whole_unstratified_and_says_so():
    judge, human, strata, _ = two_strata(3, (300, 100), (40, 0))
    first_b = next(k for k in sorted(judge) if strata[k] == "b")
    human[first_b] = 0.5
    plain = confidence_block(judge, human)
    block = stratify_block(plain, judge, human, strata, "lang", 0.95)
    assert (block["mean"], block["ci"]) == (plain["mean"], plain["ci"])
    assert "unstratified" not in block and block["interval_method"] == plain["interval_method"]
    b = block["strata"]["values"][1]
    assert (b["value"], b["n_labelled"], b.get("ci")) == ("b", 1, None)
    assert block["strata"]["note"] == (
        "1 of the 2 values of lang have fewer than 2 labelled samples ('b'): the overall "
        "interval is not stratified; label some of each (harness label RUN_DIR N --by lang)")


def test_samples_without_a_stratum_leave_the_whole_unstratified():
    judge, human, strata, _ = two_strata(4, (200, 100), (30, 30))
    del strata[next(iter(strata))]
    block = stratify_block(confidence_block(judge, human), judge, human, strata, "q", 0.95)
    assert block["strata"]["note"].startswith("1 scored sample(s) have no q value")
    assert block["mean"] == confidence_block(judge, human)["mean"]


def test_unscored_samples_count_in_no_weight():
    judge, human, strata, _ = two_strata(5, (200, 200), (60, 60))
    for k in [k for k in sorted(judge) if strata[k] == "a"][:100]:
        if k not in human:
            judge[k] = None  # type: ignore[assignment]
    block = stratify_block(confidence_block(judge, human), judge, human, strata, "q", 0.95)
    a, b = block["strata"]["values"]
    assert a["n"] + b["n"] == sum(v is not None for v in judge.values())
    w = a["n"] / (a["n"] + b["n"])
    assert block["mean"] == pytest.approx(w * a["mean"] + (1 - w) * b["mean"], abs=1e-12)


@pytest.mark.parametrize(("sizes", "n", "want"), [
    ({"a": 150, "b": 50}, 40, {"a": 30, "b": 10}),
    ({"a": 1000, "b": 5, "c": 1}, 30, {"a": 27, "b": 2, "c": 1}),  # floors of 2 (1: all)
    ({"x": 10, "y": 10, "z": 10}, 7, {"x": 3, "y": 2, "z": 2}),
    ({"a": 3, "b": 3}, 6, {"a": 3, "b": 3}),
])
def test_the_draw_is_shared_in_proportion_with_2_at_least(sizes, n, want):
    assert allocate(sizes, n, "q") == want


def test_the_shares_always_add_up_and_stay_within_each_value():
    rng = np.random.default_rng(0)
    for _ in range(300):
        sizes = {f"v{i}": int(s) for i, s in enumerate(rng.integers(1, 60, rng.integers(1, 7)))}
        floor = sum(min(2, s) for s in sizes.values())
        n = int(rng.integers(floor, sum(sizes.values()) + 1))
        got = allocate(sizes, n, "q")
        assert sum(got.values()) == n
        assert all(min(2, sizes[v]) <= got[v] <= sizes[v] for v in sizes)
        for v in sizes:  # within one of its share, unless a floor or the size bound it
            assert got[v] <= max(2, math.ceil(n * sizes[v] / sum(sizes.values())) + 1)


def test_too_few_for_2_each_is_refused():
    with pytest.raises(ConfigError, match=r"label --by q: 5 samples cannot give each of the "
                                          r"3 values of q the 2 .*ask for at least 6"):
        allocate({"a": 10, "b": 10, "c": 10}, 5, "q")
    with pytest.raises(ConfigError, match="31 samples asked for, but the run has 30"):
        allocate({"a": 10, "b": 20}, 31, "q")


@pytest.mark.slow
def test_stratified_covers_where_the_pooled_interval_does_not():
    """200 draws: a large stratum (1,600) judged leniently and a small one (400) judged
    strictly, 40 labelled in each (the small one over-represented 4 to 1). The stratified
    interval covers the 2,000 samples' human mean within the binomial tolerance of 95 %;
    the pooled PPI++ interval over the same labels, which weighs them as one uniform draw,
    covers it far less often (measured: 193 and 98 of 200; median widths 0.142 and 0.125)."""
    covered = pooled = 0
    for draw in range(200):
        judge, human, strata, arrays = two_strata(100 + draw, (1600, 400), (40, 40))
        truth = (1600 * arrays["a"][3] + 400 * arrays["b"][3]) / 2000
        plain = confidence_block(judge, human, seed=draw)
        block = stratify_block(plain, judge, human, strata, "q", 0.95, seed=draw)
        covered += block["ci"][0] <= truth <= block["ci"][1]
        pooled += plain["ci"][0] <= truth <= plain["ci"][1]
    low = binom.ppf(0.0005, 200, 0.95)
    assert covered >= low and pooled < covered - 40, (covered, pooled)
