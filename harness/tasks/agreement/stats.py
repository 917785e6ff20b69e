"""Judge meta-evaluation statistics: the pairs a judge is asked about, and how often it
agrees with the human grades (the task itself is ``harness.tasks.agreement.task``)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.core.errors import ConfigError
from harness.core.types import Document, RagSample


@dataclass(frozen=True)
class Pair:
    """One human-judged (query, passage) pair."""

    query_id: str
    doc_id: str
    question: str
    passage: str
    grade: float


def pairs_from(
    samples: Sequence[RagSample], docs: dict[str, Document], per_query: int | None, seed: int
) -> list[Pair]:
    """Judged pairs of each sample (at most ``per_query``, sampled with ``seed``)."""
    rng = random.Random(seed)
    out = []
    for s in samples:
        judged = [
            (d, g)
            for d, g in zip(
                s.reference_context_ids or (), s.reference_context_grades or (), strict=True
            )
            if d in docs
        ]
        if per_query is not None and len(judged) > per_query:
            judged = rng.sample(judged, per_query)
        out += [Pair(s.id, d, s.user_input or "", docs[d].content, g) for d, g in judged]
    return out


def agreement(
    human: Sequence[int], judge: Sequence[int], grades: Sequence[float]
) -> dict[str, Any]:
    """Accuracy, precision/recall/F1 of "relevant", Cohen's kappa, confusion per grade."""
    n = len(human)
    if n == 0:
        raise ConfigError("judge_agreement: no judged pairs to compare")
    tp = sum(h and j for h, j in zip(human, judge, strict=True))
    tn = sum(not h and not j for h, j in zip(human, judge, strict=True))
    fp = sum(not h and j for h, j in zip(human, judge, strict=True))
    fn = n - tp - tn - fp
    accuracy = (tp + tn) / n
    p_yes = ((tp + fp) / n) * ((tp + fn) / n)
    p_no = ((tn + fn) / n) * ((tn + fp) / n)
    expected = p_yes + p_no
    kappa = (accuracy - expected) / (1 - expected) if expected < 1 else 1.0
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = 2 * precision * recall / (precision + recall) if precision and recall else None
    per_grade: dict[str, dict[str, int]] = {}
    for g, j in zip(grades, judge, strict=True):
        row = per_grade.setdefault(f"{g:g}", {"judged_relevant": 0, "judged_not": 0})
        row["judged_relevant" if j else "judged_not"] += 1
    return {
        "pairs": n,
        "accuracy": accuracy,
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "cohen_kappa": kappa,
        "confusion": {"tp": tp, "fp": fp, "fn": fn, "tn": tn},
        "by_grade": dict(sorted(per_grade.items())),
    }
