"""What a row adds to explain a low score: the reference answer the judge compared against,
and the relevant documents the retriever did not return."""

from __future__ import annotations

from typing import Any

from harness.core.text import clip
from harness.core.types import RagSample
from harness.metrics.retrieval import sample_grades

#: Missed documents listed per row at most (a query with thousands of judged documents
#: would otherwise make one row as large as the run).
MAX_MISSED = 20


def missed_relevant(sample: RagSample, min_grade: float, chars: int | None) -> list[dict[str, Any]]:
    """The sample's relevant reference documents (grade >= ``min_grade``) that are not among
    its retrieved ids, best grade first, each with its ``id``, ``grade`` and (when the
    sample carries the reference texts and ``chars`` is not 0) its ``text`` trimmed to
    ``chars``; at most ``MAX_MISSED``."""
    if sample.reference_context_ids is None or sample.retrieved_context_ids is None:
        return []
    retrieved = set(sample.retrieved_context_ids)
    texts = sample.reference_contexts
    if texts is not None and len(texts) != len(sample.reference_context_ids):
        texts = None
    by_id = dict(zip(sample.reference_context_ids, texts, strict=True)) if texts else {}
    grades = sample_grades(sample)
    missed = [(doc, grade) for doc, grade in grades.items()
              if grade >= min_grade and doc not in retrieved]
    missed.sort(key=lambda pair: -pair[1])  # stable: the dataset's order within a grade
    out = []
    for doc, grade in missed[:MAX_MISSED]:
        entry: dict[str, Any] = {"id": doc, "grade": grade}
        if chars != 0 and by_id.get(doc) is not None:
            entry["text"] = clip(str(by_id[doc]), chars)
        out.append(entry)
    return out


def explain_low_scores(
    row: dict[str, Any], sample: RagSample, chars: int | None, min_grade: float
) -> dict[str, Any]:
    """``row`` with the sample's ``reference`` (trimmed to ``chars``) and its
    ``missed_relevant`` documents, where it has them."""
    if chars != 0 and sample.reference is not None:
        row["reference"] = clip(str(sample.reference), chars)
    missed = missed_relevant(sample, min_grade, chars)
    if missed:
        row["missed_relevant"] = missed
    return row
