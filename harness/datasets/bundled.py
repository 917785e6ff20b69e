"""The SciFact subset bundled with the package (``dataset=scifact_mini``): a BEIR folder
inside ``harness/data``, found wherever the package is installed."""

from __future__ import annotations

import os
from pathlib import Path

from harness.datasets.beir.dataset import BeirDataset

#: The bundled BEIR folder (``harness/data/scifact_mini``; its SOURCE.md: origin, licence).
SCIFACT_MINI = Path(__file__).resolve().parents[1] / "data" / "scifact_mini"


class ScifactMiniDataset(BeirDataset):
    """50 SciFact test claims, their 59 relevant abstracts and 177 distractors (118 of them
    BM25-hard), bundled in BEIR layout: the README's retrieval and sweep examples run on a
    fresh install. CC BY-NC 2.0 (non-commercial): ``harness/data/scifact_mini/SOURCE.md``.

    Args:
        limit: Use only the first N queries (null: all 50).
        min_grade: The lowest grade whose document text goes into ``reference_contexts``
            (the qrels are binary).
        answers: A JSONL file of ``{"query_id": ..., "answer": ...}`` giving reference
            answers (``reference``), for the LLM-judged variants.
    """

    def __init__(
        self,
        limit: int | None = None,
        min_grade: float = 1,
        answers: str | os.PathLike[str] | None = None,
    ) -> None:
        super().__init__(SCIFACT_MINI, "test", limit, min_grade, answers)
