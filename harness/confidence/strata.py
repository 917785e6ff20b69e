"""The PPI++ mean by stratum (``run.strata``: a dataset column such as the query type), and
the overall mean and interval combined from them.

Each stratum's block is the one a run of that stratum alone would get
(``confidence_block``: ``ppi_py``'s central-limit interval from 50 labelled samples, the
bootstrap below). The overall mean is the strata's means weighted by their share of the
scored samples (the stratified estimator: right whatever share of each stratum was
labelled, as when ``harness label --by`` draws the same number from a small stratum as from a
large one), and its interval is normal with the standard error
``sqrt(sum(w_h**2 * se_h**2))``, each ``se_h`` read off its stratum's interval: half its width
over the quantile it was made with (the normal one, or for a bootstrap interval the Student's
t quantile it was widened by). The labels-only mean and interval are combined the same way.
``labels_to_halve_width`` is then the stratified plan's (``plan.plan_strata``): more labels
shared among the values as ``harness label --by`` shares them.

A stratum with fewer than 2 labelled samples it scored has no interval; then the overall
interval cannot be combined, stays the unstratified one, and the block says which strata
lack labels.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from statistics import NormalDist
from typing import Any

#: The block's ``interval_method`` when its interval combines the strata's.
STRATIFIED = "stratified"


def quantile(method: str, n: int, level: float) -> float:
    """The quantile a stratum's interval at ``level`` was made with: normal (``clt``), or
    for the bootstrap the widened Student's t of ``harness.confidence.bootstrap``."""
    if method == "bootstrap" and n > 1:
        from scipy.stats import t

        return math.sqrt(n / (n - 1)) * float(t.ppf(0.5 + level / 2, n - 1))
    return NormalDist().inv_cdf(0.5 + level / 2)


def _combine(parts: list[tuple[float, float, float]], level: float) -> tuple[float, list[float]]:
    """The weighted mean of ``(weight, mean, se)`` and its normal interval at ``level``."""
    mean = math.fsum(w * m for w, m, _ in parts)
    se = math.sqrt(math.fsum((w * s) ** 2 for w, _, s in parts))
    z = NormalDist().inv_cdf(0.5 + level / 2)
    return mean, [mean - z * se, mean + z * se]


def stratify_block(
    block: dict[str, Any],
    judge_scores: Mapping[str, float | None],
    human_scores: Mapping[str, float],
    strata: Mapping[str, str],
    column: str,
    level: float,
    seed: int = 0,
) -> dict[str, Any]:
    """``block`` (the unstratified ``confidence`` block) with ``strata``: each value's
    samples, labels, means and interval; the overall ``mean`` and ``ci`` (and the
    labels-only ones) combined from them when every stratum has an interval (the
    unstratified ones kept under ``unstratified``).

    Args:
        block: The run's ``confidence_block`` over every sample.
        judge_scores: The judge's score of every sample (None: unscored, left out).
        human_scores: The score under human verdicts of each labelled sample.
        strata: Each sample's stratum (``RagSample.stratum``).
        column: ``run.strata``, as the block names it.
        level: The intervals' level.
        seed: Seeds each stratum's bootstrap (below 50 labelled samples).
    """
    from harness.confidence.ppi import confidence_block

    scored = {k: float(v) for k, v in judge_scores.items() if v is not None}
    values = sorted({strata[k] for k in scored if k in strata})
    total = sum(1 for k in scored if k in strata)
    entries: list[dict[str, Any]] = []
    lacking: list[str] = []
    parts: list[tuple[float, float, float]] = []
    labels_parts: list[tuple[float, float, float]] = []
    for value in values:
        mine = {k: v for k, v in scored.items() if strata.get(k) == value}
        human = {k: h for k, h in human_scores.items() if k in mine}
        entry: dict[str, Any] = {"value": value, "n": len(mine), "n_labelled": len(human),
                                 "judge_mean": math.fsum(mine.values()) / len(mine)}
        if len(human) < 2:
            lacking.append(value)
            entries.append(entry)
            continue
        sub = confidence_block(mine, human, level, {}, True, None, seed)
        method = sub["interval_method"]
        q = quantile(method, len(human), level)
        weight = len(mine) / total
        parts.append((weight, sub["mean"], (sub["ci"][1] - sub["ci"][0]) / (2 * q)))
        labels_parts.append((weight, sub["labels_only_mean"],
                             (sub["labels_only_ci"][1] - sub["labels_only_ci"][0]) / (2 * q)))
        entry.update(mean=sub["mean"], ci=sub["ci"], labels_only_mean=sub["labels_only_mean"],
                     labels_only_ci=sub["labels_only_ci"], interval_method=method)
        entries.append(entry)
    out = dict(block)
    out["strata"] = {"column": column, "values": entries}
    unstratified = sum(1 for k in scored if k not in strata)
    if unstratified:
        out["strata"]["note"] = (f"{unstratified:,} scored sample(s) have no {column} value: "
                                 "the overall interval is not stratified")
    elif lacking:
        listed = ", ".join(repr(v) for v in lacking[:5]) + (", ..." if len(lacking) > 5 else "")
        out["strata"]["note"] = (
            f"{len(lacking)} of the {len(values)} values of {column} have fewer than 2 "
            f"labelled samples ({listed}): the overall interval is not stratified; label "
            f"some of each (harness label RUN_DIR N --by {column})")
    elif len(values) > 1:
        out["unstratified"] = {k: block[k] for k in (
            "mean", "ci", "labels_only_mean", "labels_only_ci", "interval_method",
            "labels_to_halve_width")}
        out["mean"], out["ci"] = _combine(parts, level)
        out["labels_only_mean"], out["labels_only_ci"] = _combine(labels_parts, level)
        out["interval_method"] = STRATIFIED
        out["labels_to_halve_width"] = _halving(out["ci"], scored, human_scores, strata,
                                                column, level)
        out["interval"] = (
            f"stratified by {column}: the {len(values)} values' PPI++ means weighted by their "
            f"share of the {total:,} scored samples, a normal interval from their standard "
            "errors (each read off its value's own interval)")
    return out


def _halving(ci: list[float], scored: Mapping[str, float], human_scores: Mapping[str, float],
             strata: Mapping[str, str], column: str, level: float) -> int | None:
    """More labelled samples that would halve the stratified interval's width, shared
    among the values as ``harness label --width W --by`` shares them (``plan_strata``);
    None with fewer than ``plan.MIN_PAIRS`` labels, or when the run has too few samples."""
    from harness.confidence import plan

    labelled = [k for k in human_scores if k in scored]
    if len(labelled) < plan.MIN_PAIRS:
        return None
    groups = plan.grouped(scored, human_scores, strata)
    return plan.plan_strata((ci[1] - ci[0]) / 4, groups, column, level).more
