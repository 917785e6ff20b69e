"""The ``confidence`` block of one judged variant: the PPI++ mean and interval, beside the
labels-only and the judge-only intervals.

PPI++ (Angelopoulos, Duchi and Zrnic, 2023) through the authors' ``ppi-python``:
``ppi_mean_pointestimate`` and ``ppi_mean_ci`` with ``lam=None`` (power tuning), the human
scores of the labelled samples as ``Y``, the judge's scores on them as ``Yhat`` and the
judge's scores on the unlabelled samples as ``Yhat_unlabeled``. The two classical intervals
are ``ppi_py.classical_mean_ci``: the normal (central limit) interval, mean ± z·sd/√n.
With fewer than ``BOOTSTRAP_BELOW`` labelled samples the PPI++ and the labels-only
intervals are BCa bootstrap intervals instead (``bootstrap``), the block's
``interval_method`` says which. ``labels_to_halve_width``: how many more labelled samples
would halve the interval's width (``plan``; None: more than the run has, or too few labels
to tell).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from harness.confidence import bootstrap, plan
from harness.confidence.agreement import judge_agreement
from harness.confidence.match import Judged, Matched
from harness.core.errors import ConfigError
from harness.metrics.ranking import average_precision

METHOD = "ppi++"
#: The block's ``interval`` for the central-limit intervals.
CLT_TEXT = "normal (central limit), ppi_py.ppi_mean_ci and classical_mean_ci"
INSTALL = "pip install 'harness-context-precision[confidence]'"
#: Said in the block when the labelled samples were not drawn by ``label_sheet``.
NOT_DRAWN = ("the labelled samples were not drawn by `harness label`: the interval assumes "
             "they are a uniform random draw of the run's samples")


def _ppi() -> Any:
    try:
        import ppi_py
    except ImportError:
        raise ConfigError(f"run.human_labels: the PPI++ interval needs ppi-python; {INSTALL}"
                          ) from None
    return ppi_py


def _pair(interval: Any) -> list[float]:
    lo, hi = interval
    return [float(lo[0] if hasattr(lo, "__len__") else lo),
            float(hi[0] if hasattr(hi, "__len__") else hi)]


def classical_ci(values: Sequence[float], level: float = 0.95) -> list[float]:
    """The classical (normal, central-limit) interval of the mean of ``values``."""
    import numpy as np

    return _pair(_ppi().classical_mean_ci(np.asarray(values, dtype=float), alpha=1 - level))


def ppi_mean_ci(
    human: Sequence[float], judge_labelled: Sequence[float], judge_unlabelled: Sequence[float],
    level: float = 0.95,
) -> tuple[float, list[float]]:
    """``(mean, [lo, hi])``: the PPI++ point estimate and interval (power-tuned)."""
    import numpy as np

    ppi = _ppi()
    y, yhat, rest = (np.asarray(a, dtype=float) for a in (human, judge_labelled,
                                                          judge_unlabelled))
    mean = ppi.ppi_mean_pointestimate(y, yhat, rest, lam=None)
    interval = ppi.ppi_mean_ci(y, yhat, rest, alpha=1 - level, lam=None)
    return float(np.asarray(mean).reshape(-1)[0]), _pair(interval)


def confidence_block(
    judge_scores: Mapping[str, float | None],
    human_scores: Mapping[str, float],
    level: float = 0.95,
    agreement: dict[str, Any] | None = None,
    random_draw: bool = False,
    note: str | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """The ``confidence`` block of one variant.

    Args:
        judge_scores: The judge's score of every sample of the run (None: unscored, left out).
        human_scores: The score under human verdicts of each labelled sample.
        level: The intervals' confidence level.
        agreement: ``judge_agreement`` over the labelled chunks.
        random_draw: Whether the labelled samples are the seeded draw of ``label_sheet``.
        note: Said beside the interval (``NOT_DRAWN`` when ``random_draw`` is False and
            nothing else is said).
        seed: Seeds the bootstrap (``run.seed``), used below ``BOOTSTRAP_BELOW`` labels.

    Labelled samples the judge did not score cannot be paired and are left out (counted as
    ``n_labelled_unscored``).
    """
    if not 0 < level < 1:
        raise ConfigError(f"confidence level: expected a number between 0 and 1, got {level!r}")
    scored = {k: float(v) for k, v in judge_scores.items() if v is not None}
    # in id order: the bootstrap's resamples then do not depend on the order samples were
    # scored in
    labelled = sorted(k for k in human_scores if k in scored)
    if len(labelled) < 2:
        raise ConfigError(
            f"run.human_labels: {len(labelled)} labelled sample(s) the judge scored; the "
            "interval needs at least 2 (every retrieved chunk of a sample must be labelled)"
        )
    y = [float(human_scores[k]) for k in labelled]
    yhat = [scored[k] for k in labelled]
    rest = [scored[k] for k in sorted(scored) if k not in human_scores]
    small = len(y) < bootstrap.BOOTSTRAP_BELOW
    labels_ci = (bootstrap.bca_interval(y, yhat, rest, level, seed, judge_weight=False)
                 if small else classical_ci(y, level))
    if len(rest) < 2:  # everything (or all but one) labelled: nothing for the judge to add
        mean, ci = sum(y) / len(y), labels_ci
        unlabelled = "every scored sample is" if not rest else "all scored samples but one are"
        note = note or f"{unlabelled} labelled: the interval is the labels' own"
    else:
        mean, ci = ppi_mean_ci(y, yhat, rest, level)
        if small:
            ci = bootstrap.bca_interval(y, yhat, rest, level, seed)
    judge_all = list(scored.values())
    more = None
    if len(rest) >= 2 and len(y) >= plan.MIN_PAIRS:
        more = plan.halving((ci[1] - ci[0]) / 2, y, yhat, judge_all, level)
    return {
        "method": METHOD, "level": level, "mean": mean, "ci": ci,
        "n_labelled": len(labelled), "n": len(scored),
        "n_labelled_unscored": len(human_scores) - len(labelled),
        "labels_only_mean": sum(y) / len(y), "labels_only_ci": labels_ci,
        "judge_mean": sum(judge_all) / len(judge_all),
        "judge_only_ci": classical_ci(judge_all, level),
        "judge_agreement": agreement,
        "interval": bootstrap.method_text(len(y), seed, judged=len(rest) >= 2) if small
        else CLT_TEXT,
        "interval_method": "bootstrap" if small else "clt",
        "labels_to_halve_width": more,
        "random_draw": random_draw,
        "note": note if note is not None or random_draw else NOT_DRAWN,
    }


def human_score(eps: float) -> Callable[[Sequence[int]], float]:
    """The score of one sample under human verdicts: the variant's own average precision
    (``harness.metrics.ranking.average_precision`` with its ``eps``)."""
    return lambda verdicts: average_precision(verdicts, eps)


def variant_confidence(
    judged: Iterable[Judged],
    matched: Matched,
    score: Callable[[Sequence[int]], float],
    level: float = 0.95,
    random_draw: bool = False,
    note: str | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """The ``confidence`` block of one variant from its judged samples and the matched
    human verdicts; ``score`` turns a sample's human verdicts into its score with the
    variant's aggregation (``human_score(variant.eps)``). The block's ``labels`` holds the
    counts of ``Matched`` (labels for samples or chunks the run does not have, ...)."""
    judged = list(judged)
    human_scores = {k: score(v) for k, v in matched.verdicts.items()}
    human_chunks: list[int] = []
    judge_chunks: list[float] = []
    for sample in judged:
        verdicts = matched.verdicts.get(sample.id)
        if verdicts is None or sample.verdicts is None or sample.score is None:
            continue
        given = [float(v) for v in sample.verdicts if v is not None]
        if len(given) != len(verdicts) or any(math.isnan(v) for v in given):
            continue  # another list than the one labelled, or a chunk without a verdict
        human_chunks += verdicts
        judge_chunks += given
    block = confidence_block(
        {s.id: s.score for s in judged}, human_scores, level,
        judge_agreement(human_chunks, judge_chunks), random_draw, note, seed,
    )
    block["labels"] = matched.counts()
    return block
