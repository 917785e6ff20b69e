"""How often the judge's chunk verdicts agree with the human ones: accuracy, precision and
recall of "relevant", Cohen's kappa and the confusion counts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def relevant(verdict: float) -> int:
    """A judge's verdict as 0/1: a soft verdict (a probability) counts from 0.5."""
    return int(verdict >= 0.5)


def judge_agreement(human: Sequence[int], judge: Sequence[float]) -> dict[str, Any]:
    """Agreement of ``judge`` (0/1 or soft verdicts) with ``human`` (0/1), chunk by chunk.

    Returns:
        ``kappa`` (Cohen's; None when both raters give one class only, where it is 0/0),
        ``accuracy``, ``precision`` and ``recall`` of "relevant" (None when undefined),
        ``n_chunks`` and the confusion counts ``tp``, ``fp``, ``fn``, ``tn`` (the judge's
        "relevant" against the human one).
    """
    if len(human) != len(judge):
        raise ValueError(f"{len(human)} human verdicts against {len(judge)} judge verdicts")
    pairs = [(int(h), relevant(j)) for h, j in zip(human, judge, strict=True)]
    n = len(pairs)
    tp = sum(1 for h, j in pairs if h and j)
    fp = sum(1 for h, j in pairs if not h and j)
    fn = sum(1 for h, j in pairs if h and not j)
    tn = n - tp - fp - fn
    out: dict[str, Any] = {
        "kappa": None, "accuracy": None, "precision": None, "recall": None, "n_chunks": n,
        "tp": tp, "fp": fp, "fn": fn, "tn": tn,
    }
    if n == 0:
        return out
    observed = (tp + tn) / n
    expected = ((tp + fp) * (tp + fn) + (tn + fn) * (tn + fp)) / (n * n)
    out["accuracy"] = observed
    out["kappa"] = (observed - expected) / (1 - expected) if expected < 1 else None
    out["precision"] = tp / (tp + fp) if tp + fp else None
    out["recall"] = tp / (tp + fn) if tp + fn else None
    return out
