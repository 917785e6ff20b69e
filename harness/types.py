"""Plain data passed between the stages of a run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Sample fields, named as ragas names them. A dataset may provide any subset.
SAMPLE_FIELDS: tuple[str, ...] = (
    "user_input",
    "reference",
    "response",
    "retrieved_contexts",
    "retrieved_context_ids",
    "reference_contexts",
    "reference_context_ids",
    "reference_context_grades",
)


@dataclass(frozen=True, slots=True)
class RagSample:
    """One evaluation record. ``None`` means the field is absent; ``()`` means empty.

    Context ids are normalised to ``str`` when loaded (ragas compares ``str(id)``).
    ``reference_context_grades`` (graded relevance, e.g. BEIR qrels) is parallel to
    ``reference_context_ids``.
    """

    id: str
    user_input: str | None = None
    reference: str | None = None
    response: str | None = None
    retrieved_contexts: tuple[str, ...] | None = None
    retrieved_context_ids: tuple[str, ...] | None = None
    reference_contexts: tuple[str, ...] | None = None
    reference_context_ids: tuple[str, ...] | None = None
    reference_context_grades: tuple[float, ...] | None = None


@dataclass(slots=True)
class SampleResult:
    """The outcome for one sample: a score, or ``score=None`` with the reason in ``error``.

    ``details`` holds the extra per-sample columns a reader needs (for example the
    per-chunk similarities of ``non_llm``); they are written after the fixed columns.
    """

    id: str
    score: float | None
    verdicts: list[int] | list[float] | None = None
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_row(self) -> dict[str, Any]:
        """The ``samples.jsonl`` row: ``id, score, verdicts, error`` then the details."""
        row: dict[str, Any] = {
            "id": self.id,
            "score": self.score,
            "verdicts": self.verdicts,
            "error": self.error,
        }
        row.update(self.details)
        return row


def unscored(sample_id: str, reason: str, **details: Any) -> SampleResult:
    """A result that carries no score, only why."""
    return SampleResult(sample_id, None, None, reason, dict(details))
