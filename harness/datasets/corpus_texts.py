"""Texts looked up in ``dataset.corpus`` by id, for samples that name documents by id only.

A file dataset with a corpus (``dataset.corpus=FILE``) whose records hold
``reference_context_ids`` but no ``reference_contexts`` gets the reference texts from the
corpus, so the text and judged variants (``non_llm``, ``llm_with_reference``,
``contextual_precision``) score it as they score a file that writes the texts itself:

- ``reference_contexts``: the text (``Document.content``: ``"title\\n\\ntext"``, or the text
  alone without a title) of each reference id with grade >= the dataset's ``min_grade``
  (every id without grades) that the corpus holds, in reference-id order, as ``dataset=beir``
  and ``dataset=trec`` fill them. Ids the corpus lacks are skipped here: the dataset's
  ``describe`` already counts them (``reference_ids_missing_from_corpus``). A sample whose
  relevant ids are all missing keeps none (``missing field`` when a variant needs them).
- ``retrieved_contexts``: with ``retriever=precomputed`` and ``retrieved_context_ids`` only,
  the text of each retrieved id, parallel to the ids, when the corpus holds every one of
  them (otherwise none: a text list must be parallel to its ids).

A sample that carries its own texts keeps them. The corpus is the dataset's own, read once
and shared with the corpus retrievers (``CorpusFile.corpus``); it is only looked at when a
sample needs a text.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping

from harness.core.types import Document, RagSample


def needs_texts(sample: RagSample) -> bool:
    """Whether ``sample`` names documents by id whose texts it lacks."""
    return (sample.reference_contexts is None and bool(sample.reference_context_ids)) or (
        sample.retrieved_contexts is None and sample.retrieved_context_ids is not None
    )


def relevant_ids(sample: RagSample, min_grade: float) -> list[str]:
    """The reference ids with grade >= ``min_grade`` (all of them without grades)."""
    ids = sample.reference_context_ids or ()
    grades = sample.reference_context_grades
    if grades is None:
        return list(ids)
    return [d for d, g in zip(ids, grades, strict=True) if g >= min_grade]


def with_texts(sample: RagSample, docs: Mapping[str, Document], min_grade: float) -> RagSample:
    """``sample`` with the texts it lacks taken from ``docs`` (see the module's docstring)."""
    references, texts = sample.reference_contexts, sample.retrieved_contexts
    if references is None and sample.reference_context_ids:
        relevant = relevant_ids(sample, min_grade)
        found = tuple(docs[d].content for d in relevant if d in docs)
        references = found if found or not relevant else None
    retrieved = sample.retrieved_context_ids
    if texts is None and retrieved is not None and all(d in docs for d in retrieved):
        texts = tuple(docs[d].content for d in retrieved)
    if references is sample.reference_contexts and texts is sample.retrieved_contexts:
        return sample
    return dataclasses.replace(sample, reference_contexts=references, retrieved_contexts=texts)


def fill_from_corpus(
    samples: Iterable[RagSample], documents: Callable[[], Mapping[str, Document]],
    min_grade: float,
) -> Iterator[RagSample]:
    """``samples`` in order, each with the texts it lacks from ``documents()`` (the corpus
    by id, asked for at the first sample that needs it, and only then)."""
    docs: Mapping[str, Document] | None = None
    for sample in samples:
        if needs_texts(sample):
            if docs is None:
                docs = documents()
            sample = with_texts(sample, docs, min_grade)
        yield sample
