"""How many labels: the labelled samples that give the PPI++ interval a half-width, from a
run's judge scores and the labels it has so far.

The PPI++ estimate with ``lambda`` (``ppi_py``'s power tuning) has variance

    Var(n) = var(Y - lambda·Yhat) / n + lambda² · var(Yhat) / (M - n)

with n labelled of the run's M scored samples (the estimator ``ppi_py.ppi_mean_ci`` bounds;
written with the PPI correlation of ``ppi_py``'s power analysis it is var(Y) / n_eff, n_eff
= n (n + N) / (n + (1 - rho²) N)). The half-width is z · √Var(n); the plan is the smallest n
that reaches the one asked for. The labels alone need z² var(Y) / W².

From labels so far (pairs of human and judge scores) the spreads are theirs, the variances
taken at their one-sided 90 % upper bound (chi-square): planned from a pilot of 30 (lenient
and strict simulated judges, 300 pilots each), ppi_py's interval then reaches the half-width
asked for in 88 % of the runs and comes within 15 % of it in 95-98 %, where the point
estimates reach it in about half. Without labels the judge's own spread stands in for the
humans', and the judge is assumed not to help (lambda 0): the plan is the labels-alone
number, said as such.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from harness.core.errors import ConfigError

#: Labelled pairs from which their spreads are used; fewer: the judge's spread, no help.
MIN_PAIRS = 10
#: The one-sided level of the upper bound taken on the spreads from labels so far.
UPPER = 0.9


@dataclass(frozen=True)
class Plan:
    """How many labelled samples give a half-width (``None``: more than the run has)."""

    width: float
    level: float
    needed: int | None
    labels_alone: int | None
    labelled: int
    total: int
    from_labels: bool
    sd_human: float
    correlation: float | None
    weight: float

    @property
    def more(self) -> int | None:
        """Labelled samples still to draw (0 when the labels so far reach the width)."""
        return None if self.needed is None else max(self.needed - self.labelled, 0)


def _var(values: Sequence[float]) -> float:
    n = len(values)
    mean = sum(values) / n
    return sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0


def plan(
    width: float, judge_scores: Sequence[float], human: Sequence[float] = (),
    judge_labelled: Sequence[float] = (), level: float = 0.95,
) -> Plan:
    """The labelled samples that give the PPI++ interval the half-width ``width``.

    Args:
        width: The half-width asked for.
        judge_scores: The judge's score of every scored sample of the run.
        human: The human scores of the samples labelled so far.
        judge_labelled: The judge's scores of the same samples, in the same order.
        level: The interval's confidence level.
    """
    from scipy.stats import norm

    total = len(judge_scores)
    z = float(norm.ppf((1 + level) / 2))
    c = _components(judge_scores, human, judge_labelled)
    alone = math.ceil(z * z * c.var_y / (width * width)) if width > 0 else None
    needed = _smallest(c.residual, c.imputed, (width / z) ** 2, total)
    return Plan(width, level, needed, alone if alone is not None and alone <= total else None,
                len(human), total, c.from_labels, math.sqrt(c.var_y), c.correlation, c.weight)


@dataclass(frozen=True)
class _Parts:
    """The spreads a plan is made of: ``residual`` var(Y - lambda·Yhat) and ``imputed``
    lambda² var(Yhat) (the two terms of Var(n)), var(Y), and how they were got."""

    residual: float
    imputed: float
    var_y: float
    weight: float
    correlation: float | None
    from_labels: bool


def _bound(df: float) -> float:
    """The factor that takes a variance measured with ``df`` degrees of freedom to its
    one-sided ``UPPER`` upper bound (chi-square)."""
    from scipy.stats import chi2

    return df / float(chi2.ppf(1 - UPPER, df))


def _components(judge_scores: Sequence[float], human: Sequence[float],
                judge_labelled: Sequence[float], bounded: bool = True) -> _Parts:
    """The spreads from the labelled pairs (at their upper bound; ``bounded`` False: as
    measured) when there are ``MIN_PAIRS``, else the judge's spread standing in for the
    humans', lambda 0."""
    n0 = len(human)
    if n0 < MIN_PAIRS:
        var_y = _var(judge_scores)
        return _Parts(var_y, 0.0, var_y, 0.0, None, False)
    var_y, var_f = _var(human), _var(judge_scores)
    my, mf = sum(human) / n0, sum(judge_labelled) / n0
    cov = sum((a - my) * (b - mf) for a, b in zip(human, judge_labelled, strict=True))
    cov /= n0 - 1
    lam = min(max(cov / var_f, 0.0), 1.0) if var_f > 0 else 0.0
    residual = _var([a - lam * b for a, b in zip(human, judge_labelled, strict=True)])
    bound = _bound(n0 - 1) if bounded else 1.0
    sd_f = math.sqrt(_var(judge_labelled))
    corr = cov / math.sqrt(_var(human)) / sd_f if sd_f > 0 and _var(human) > 0 else None
    return _Parts(residual * bound, lam * lam * var_f, var_y * bound, lam, corr, True)


def _smallest(residual: float, imputed: float, target: float, total: int) -> int | None:
    """The smallest n in [2, total] with residual / n + imputed / (total - n) <= target;
    None when there is none. The equality is t n² - (t M + r - c) n + r M = 0 (M total, r
    residual, c imputed, t target): the n between its roots reach it (all M labelled: the
    residual's term alone)."""
    if target <= 0:
        return None
    b = target * total + residual - imputed
    disc = b * b - 4 * target * residual * total
    if disc >= 0:  # the n between the two roots reach the target
        low, high = ((b - s * math.sqrt(disc)) / (2 * target) for s in (1, -1))
        n = max(2, math.ceil(low - 1e-9))
        if n <= high + 1e-9 and n < total:
            return n
    return total if residual / total <= target else None


def halving(
    half_width: float, human: Sequence[float], judge_labelled: Sequence[float],
    judge_scores: Sequence[float], level: float = 0.95,
) -> int | None:
    """More labelled samples that would halve ``half_width`` (the interval's now), planned
    from the labelled pairs as ``plan`` does; ``None`` when the run has too few samples."""
    got = plan(half_width / 2, judge_scores, human, judge_labelled, level)
    return got.more


#: One value's scores for a stratified plan: the judge's score of each of its scored
#: samples, the human scores of those labelled so far, and the judge's scores of the same.
Group = tuple[Sequence[float], Sequence[float], Sequence[float]]


@dataclass(frozen=True)
class Share:
    """One value's part of a stratified plan: its scored samples, those labelled so far,
    the labelled samples planned, and whether its own labels gave the spreads."""

    value: str
    total: int
    labelled: int
    target: int
    from_labels: bool

    @property
    def more(self) -> int:
        """Its samples still to draw."""
        return max(self.target - self.labelled, 0)


@dataclass(frozen=True)
class StrataPlan:
    """How many labelled samples, shared among a column's values, give the stratified
    interval (``harness.confidence.strata``) a half-width; ``needed`` None: more than the
    run has. ``unstratified``: what ``plan`` says without the strata, for comparison (as
    ``needed``, never fewer than the labels so far, which are kept)."""

    width: float
    level: float
    column: str
    needed: int | None
    labelled: int
    total: int
    shares: tuple[Share, ...]
    unstratified: int | None

    @property
    def more(self) -> int | None:
        """Labelled samples still to draw (0 when the labels so far reach the width)."""
        return None if self.needed is None else sum(s.more for s in self.shares)

    def counts(self) -> dict[str, int]:
        """Each value's samples still to draw."""
        return {s.value: s.more for s in self.shares}


def grouped(judge: Mapping[str, float], human: Mapping[str, float],
            strata: Mapping[str, str]) -> dict[str, Group]:
    """``plan_strata``'s groups: each value's judge scores, and the human and judge scores
    of its labelled samples (``judge``, ``human``: by sample id; ``strata``: their values)."""
    groups: dict[str, tuple[list[float], list[float], list[float]]] = {}
    for key, score in judge.items():
        group = groups.setdefault(strata[key], ([], [], []))
        group[0].append(score)
        if key in human:
            group[1].append(human[key])
            group[2].append(score)
    return dict(groups)


def plan_strata(width: float, groups: Mapping[str, Group], column: str,
                level: float = 0.95) -> StrataPlan:
    """The labelled samples that give the stratified PPI++ interval the half-width
    ``width``: the smallest total that, shared among the values as ``harness label --by``
    shares it (``allocate``: in proportion to their samples, at least 2 each; a
    value keeps the labels it has when that is more), brings
    Var = sum(w_h² · Var_h(n_h)) to (width / z)², each value's Var_h as ``plan`` reckons it
    from its own labelled pairs (``MIN_PAIRS``), else from its judge scores (the judge
    assumed not to help; the run's spread where the judge gave the value one score).

    The spreads measured from labels are taken at one upper bound for them all, with the
    Satterthwaite degrees of freedom of the stratified variance (sum of w_h·r_h, each
    measured from its value's labels): bounding each value's own small pilot would ask for
    more labels than the whole pilot's spread warrants."""
    from scipy.stats import norm

    z = float(norm.ppf((1 + level) / 2))
    target = (width / z) ** 2
    sizes = {v: len(g[0]) for v, g in groups.items() if g[0]}
    total = sum(sizes.values())
    pooled = _var([x for g in groups.values() for x in g[0]])
    parts: dict[str, _Parts] = {}
    for value in sizes:
        got = _components(*groups[value], bounded=False)
        if not got.from_labels and got.var_y == 0:
            got = _Parts(pooled, 0.0, pooled, 0.0, None, False)
        parts[value] = got
    measured = {v: (sizes[v] / total * c.residual, len(groups[v][1]) - 1)
                for v, c in parts.items() if c.from_labels}
    spread = sum(u for u, _ in measured.values())
    if spread > 0:
        bound = _bound(spread ** 2 / sum(u * u / df for u, df in measured.values()))
        parts.update({v: replace(parts[v], residual=parts[v].residual * bound,
                                 var_y=parts[v].var_y * bound) for v in measured})
    labelled = {v: min(len(groups[v][1]), sizes[v]) for v in sizes}

    def shares(n: int) -> dict[str, int]:
        planned = allocate(sizes, n, column)
        return {v: max(planned[v], labelled[v]) for v in sizes}

    def variance(counts: Mapping[str, int]) -> float:
        out = 0.0
        for v, n_h in counts.items():
            m, c = sizes[v], parts[v]
            term = c.residual / m if n_h >= m else c.residual / n_h + c.imputed / (m - n_h)
            out += (m / total) ** 2 * term
        return out

    low, high = sum(min(2, m) for m in sizes.values()), total
    needed: dict[str, int] | None = None
    if total and variance(shares(high)) <= target:
        while low < high:  # the smallest total that reaches it
            mid = (low + high) // 2
            if variance(shares(mid)) <= target:
                high = mid
            else:
                low = mid + 1
        needed = shares(low)
    flat = plan(width, [x for g in groups.values() for x in g[0]],
                [x for g in groups.values() for x in g[1]],
                [x for g in groups.values() for x in g[2]], level)
    return StrataPlan(
        width, level, column, None if needed is None else sum(needed.values()),
        sum(labelled.values()), total,
        tuple(Share(v, sizes[v], labelled[v], needed[v] if needed else sizes[v],
                    parts[v].from_labels) for v in sorted(sizes)),
        None if flat.needed is None else max(flat.needed, sum(labelled.values())))


@dataclass(frozen=True)
class RunPlan:
    """A plan from a finished run's rows: the plan, the variant it is for (None: a run of
    one), and the samples labelled so far with their human verdicts (rank order)."""

    plan: Plan
    variant: str | None
    carried: dict[str, list[int]]


def run_plan(rows: Sequence[Mapping[str, Any]], width: float, level: float = 0.95) -> RunPlan:
    """The plan for half-width ``width`` from a finished run's ``samples.jsonl`` rows: the
    judge's ``score`` of each scored sample and, on the samples labelled so far, the
    ``human_score`` beside it. With several variants (``variants.<name>``), those that have
    human scores (else all) are planned and the one that needs the most labels is kept.
    A ``ConfigError`` when the run has too few scores to tell."""
    plans: list[tuple[Plan, str | None]] = []
    for name, judge, human in _scores(rows):
        plans.append((_checked(width, judge, human, level, name), name))
    labelled = [p for p in plans if p[0].from_labels]
    chosen, name = max(labelled or plans, key=lambda p: (p[0].needed is None, p[0].needed or 0))
    return RunPlan(chosen, name, _carried(rows))


@dataclass(frozen=True)
class RunStrataPlan:
    """A stratified plan from a finished run's rows (as ``RunPlan``)."""

    plan: StrataPlan
    variant: str | None
    carried: dict[str, list[int]]


def run_strata_plan(rows: Sequence[Mapping[str, Any]], width: float, column: str,
                    strata: Mapping[str, str], level: float = 0.95) -> RunStrataPlan:
    """``run_plan`` shared among the values of ``column`` (``strata``: each sample's value,
    by id): the variant that needs the most labels is kept."""
    plans: list[tuple[StrataPlan, str | None]] = []
    for name, judge, human in _scores(rows):
        _checked(width, judge, human, level, name)  # too few scores, or one score throughout
        plans.append((plan_strata(width, grouped(judge, human, strata), column, level), name))
    chosen, name = max(plans, key=lambda p: (p[0].needed is None, p[0].needed or 0))
    return RunStrataPlan(chosen, name, _carried(rows))


def _scores(rows: Sequence[Mapping[str, Any]]
            ) -> list[tuple[str | None, dict[str, float], dict[str, float]]]:
    """Per variant (None: a run of one; with several, each ``variants.<name>``): the
    judge's score and the human score of each sample, by id."""
    variants = sorted({str(k) for r in rows for k in (r.get("variants") or {})})
    out: list[tuple[str | None, dict[str, float], dict[str, float]]] = []
    names: list[str | None] = [*variants] or [None]
    for name in names:
        judge: dict[str, float] = {}
        human: dict[str, float] = {}
        for row in rows:
            entry = row if name is None else (row.get("variants") or {}).get(name) or {}
            score, given = _number(entry.get("score")), _number(entry.get("human_score"))
            if score is not None:
                judge[str(row["id"])] = score
                if given is not None:
                    human[str(row["id"])] = given
        out.append((name, judge, human))
    return out


def _carried(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[int]]:
    """The samples labelled so far, with their human verdicts (rank order)."""
    return {str(r["id"]): [int(v) for v in r["human_verdicts"]] for r in rows
            if isinstance(r.get("human_verdicts"), list)}


def _number(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def _checked(width: float, judge: Mapping[str, float], human: Mapping[str, float],
             level: float, name: str | None) -> Plan:
    which = f" ({name})" if name else ""
    if len(judge) < 2:
        raise ConfigError(
            f"label: the run has {len(judge)} scored sample(s){which}: too few to tell how "
            f"many labels give ±{width:g}; draw a number of samples instead "
            "(harness label RUN_DIR N)")
    pairs = [k for k in human if k in judge]
    got = plan(width, list(judge.values()), [human[k] for k in pairs],
               [judge[k] for k in pairs], level)
    if not got.from_labels and got.sd_human == 0:
        raise ConfigError(
            f"label: the judge gave every sample the same score{which}, so its spread cannot "
            f"stand in for the labels'; draw a pilot (harness label RUN_DIR 30), label it, "
            f"rerun with it and ask for ±{width:g} again")
    return got


def allocate(sizes: Mapping[str, int], n: int, column: str) -> dict[str, int]:
    """How many of ``n`` samples to draw from each value (``sizes``: its samples):
    proportional to its size (largest remainders), at least 2 where it has 2 (so that each
    value gets an interval), never more than it has. Too few for 2 each is refused."""
    total = sum(sizes.values())
    if n > total:
        raise ConfigError(f"label: {n} samples asked for, but the run has {total} samples "
                          "with retrieved chunks; ask for at most that many")
    floor = {v: min(2, size) for v, size in sizes.items()}
    if sum(floor.values()) > n:
        raise ConfigError(
            f"label --by {column}: {n} samples cannot give each of the {len(sizes)} values "
            f"of {column} the 2 labelled samples its interval needs; ask for at least "
            f"{sum(floor.values())}")
    share = {v: n * size / total for v, size in sizes.items()}
    got = {v: max(floor[v], min(sizes[v], int(share[v]))) for v in sizes}
    while sum(got.values()) > n:  # the floors pushed it over: take from the largest shares
        v = max((v for v in got if got[v] > floor[v]), key=lambda v: (got[v] - share[v], v))
        got[v] -= 1
    order = sorted(sizes, key=lambda v: (-(share[v] - int(share[v])), v))
    while sum(got.values()) < n:
        v = next(v for v in order if got[v] < sizes[v])
        got[v] += 1
        order.remove(v)
        order.append(v)
    return got
