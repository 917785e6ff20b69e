"""Split documents into overlapping windows of words, for every corpus retriever.

``chunk_size`` and ``chunk_overlap`` count **words** (runs of non-whitespace characters):
words need no tokenizer, mean the same thing to BM25 and to an embedding model, and
English text averages about 1.3 model tokens per word, so ``chunk_size=200`` fits a
256-token encoder such as all-MiniLM-L6-v2.

A document's text is its ``content`` (``"title\\n\\ntext"``, or the text when there is no
title), so the title belongs to the first chunk. Windows start every
``chunk_size - chunk_overlap`` words; the last window ends at the document's last word
(no window lies wholly inside the one before it). A chunk's text is the exact slice of
the document between its first and last word, whitespace and line breaks kept.

Chunk ids are ``"<doc_id>#<n>"`` with n = 0, 1, ... per document; ``Chunk.doc_id`` carries
the document id, and ``doc_id_of`` recovers it from a chunk id (ids containing ``#``
work: only the last ``#`` separates). With ``chunk_size=None`` a document is one chunk,
``"<doc_id>#0"``, with the whole content.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated, Any

from harness.core.errors import ConfigError
from harness.core.types import Chunk, Document
from harness.core.validation import Range

_WORD = re.compile(r"\S+")

#: ``chunk_size``: words per chunk, >= 1, or null for whole documents.
ChunkSize = Annotated[int, Range(ge=1)] | None
#: ``chunk_overlap``: words shared by consecutive chunks, >= 0 (and < chunk_size).
ChunkOverlap = Annotated[int, Range(ge=0)]


def check_chunking(where: str, chunk_size: Any, chunk_overlap: Any) -> tuple[int | None, int]:
    """Validate ``chunk_size`` (words, >= 1, or None) and ``chunk_overlap`` (0 <= o < size)."""
    if chunk_size is not None and (
        isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1
    ):
        raise ConfigError(
            f"{where}.chunk_size: expected a number of words >= 1 or null, got {chunk_size!r}"
        )
    if isinstance(chunk_overlap, bool) or not isinstance(chunk_overlap, int) or chunk_overlap < 0:
        raise ConfigError(
            f"{where}.chunk_overlap: expected a number of words >= 0, got {chunk_overlap!r}"
        )
    if chunk_size is None and chunk_overlap:
        raise ConfigError(f"{where}.chunk_overlap: needs chunk_size (documents are not split)")
    if chunk_size is not None and chunk_overlap >= chunk_size:
        raise ConfigError(
            f"{where}.chunk_overlap: must be smaller than chunk_size ({chunk_size}), "
            f"got {chunk_overlap}"
        )
    return chunk_size, chunk_overlap


def chunk_id(doc_id: str, n: int) -> str:
    """The id of a document's n-th chunk."""
    return f"{doc_id}#{n}"


def doc_id_of(chunk_id_: str) -> str:
    """The document id of a chunk id (everything before the last ``#``)."""
    doc, sep, _ = chunk_id_.rpartition("#")
    if not sep:
        raise ValueError(f"not a chunk id (no '#'): {chunk_id_!r}")
    return doc


def split_text(text: str, chunk_size: int | None, chunk_overlap: int = 0) -> list[str]:
    """Cut ``text`` into windows of ``chunk_size`` words overlapping by ``chunk_overlap``."""
    if chunk_size is None:
        return [text]
    spans = [m.span() for m in _WORD.finditer(text)]
    if len(spans) <= chunk_size:
        return [text.strip()] if spans else [text]
    step = chunk_size - chunk_overlap
    pieces = []
    start = 0
    while True:
        end = min(start + chunk_size, len(spans))
        pieces.append(text[spans[start][0] : spans[end - 1][1]])
        if end == len(spans):
            return pieces
        start += step


def chunk_documents(
    documents: Iterable[Document], chunk_size: int | None, chunk_overlap: int = 0
) -> list[Chunk]:
    """Every document's chunks, in corpus order."""
    chunks = []
    for doc in documents:
        for n, text in enumerate(split_text(doc.content, chunk_size, chunk_overlap)):
            chunks.append(Chunk(chunk_id(doc.id, n), doc.id, text))
    return chunks
