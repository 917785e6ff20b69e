"""What a row adds to explain a low score: the reference answer the judge compared against,
and the relevant documents the retriever did not return, each with its own text.

A dataset's ``reference_contexts`` need not be parallel to ``reference_context_ids``: a BEIR
or TREC dataset judges non-relevant documents too (grade 0) and keeps the texts of the
relevant ones in the corpus only. A missed document's text is therefore its own: the text
at its place when the texts are parallel to the ids, else the corpus's document of that id
where the dataset has a corpus, else the text at its place among the ids kept by the same
relevance (grade >= ``min_grade``) when as many; never a neighbour's, none when that
cannot be told.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from operator import itemgetter
from typing import Any

from harness.core.text import clip
from harness.core.types import RagSample
from harness.metrics.retrieval import sample_grades

#: Missed documents listed per row at most (a query with thousands of judged documents
#: would otherwise make one row as large as the run).
MAX_MISSED = 20
_GRADE = itemgetter(1)

class CorpusTexts:
    """The texts of a dataset's corpus by document id, read on first use only (a run whose
    texts line up with their ids never reads it).

    Args:
        corpus: Returns the dataset's ``Corpus``, or ``None`` when it has none.
    """

    def __init__(self, corpus: Callable[[], Any]) -> None:
        self._corpus = corpus
        self._index: dict[str, Any] | None = None

    def _documents(self) -> dict[str, Any]:
        if self._index is None:
            got = self._corpus()
            self._index = {d.id: d for d in got.documents} if got is not None else {}
        return self._index

    @property
    def available(self) -> bool:
        """Whether there is a corpus to look ids up in."""
        return bool(self._documents())

    def __call__(self, doc_id: str) -> str | None:
        """The document's text (``Document.content``), or ``None`` when the corpus lacks it."""
        found = self._documents().get(doc_id)
        return None if found is None else str(found.content)


def reference_texts(sample: RagSample, min_grade: float,
                    documents: CorpusTexts | None = None,
                    wanted: list[str] | None = None) -> dict[str, str]:
    """``{reference id: its text}`` for the ids of ``wanted`` (default: all) whose own text
    is known (see the module's docstring)."""
    ids, texts = sample.reference_context_ids or (), sample.reference_contexts
    if not ids or texts is None:
        return {}
    want = set(ids if wanted is None else wanted)
    if len(texts) == len(ids):
        return {d: t for d, t in zip(ids, texts, strict=True) if d in want}
    if documents is not None and documents.available:
        return {d: t for d in ids if d in want and (t := documents(d)) is not None}
    grades = sample_grades(sample)
    kept = [d for d in ids if grades.get(d, 0.0) >= min_grade]
    if len(kept) == len(texts):
        return {d: t for d, t in zip(kept, texts, strict=True) if d in want}
    return {}


def missed_relevant(sample: RagSample, min_grade: float, chars: int | None,
                    documents: CorpusTexts | None = None,
                    grades: Mapping[str, float] | None = None) -> list[dict[str, Any]]:
    """The sample's relevant reference documents (grade >= ``min_grade``) that are not among
    its retrieved ids, best grade first, each with its ``id``, ``grade`` and (when its own
    text is known and ``chars`` is not 0) its ``text`` trimmed to ``chars``; at most
    ``MAX_MISSED``. ``documents``: the dataset's corpus by id, where it has one;
    ``grades``: ``sample_grades(sample)``, where the caller has it already."""
    if sample.reference_context_ids is None or sample.retrieved_context_ids is None:
        return []
    retrieved = set(sample.retrieved_context_ids)
    if grades is None:
        grades = sample_grades(sample)
    missed = [(doc, grade) for doc, grade in grades.items()
              if grade >= min_grade and doc not in retrieved]
    if not missed:
        return []
    if len(missed) > 1:  # stable, also reversed: the dataset's order within a grade
        missed.sort(key=_GRADE, reverse=True)
        missed = missed[:MAX_MISSED]
    by_id = reference_texts(sample, min_grade, documents, [d for d, _ in missed]) if (
        chars != 0) else {}
    out = []
    for doc, grade in missed:
        entry: dict[str, Any] = {"id": doc, "grade": grade}
        if by_id.get(doc) is not None:
            entry["text"] = clip(str(by_id[doc]), chars)
        out.append(entry)
    return out


def explain_low_scores(
    row: dict[str, Any], sample: RagSample, chars: int | None, min_grade: float,
    documents: CorpusTexts | None = None, grades: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """``row`` with the sample's ``reference`` (trimmed to ``chars``) and its
    ``missed_relevant`` documents, where it has them (``grades``: as ``missed_relevant``)."""
    if chars != 0 and sample.reference is not None:
        row["reference"] = clip(str(sample.reference), chars)
    missed = missed_relevant(sample, min_grade, chars, documents, grades)
    if missed:
        row["missed_relevant"] = missed
    return row
