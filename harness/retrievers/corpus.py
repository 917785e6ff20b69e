"""The common base of the retrievers that search the dataset's corpus.

A corpus retriever (``bm25``, ``dense``, ``hybrid``) is used in two steps:

1. ``prepare(corpus)`` once, with the dataset's ``Corpus`` (its documents, and a key that
   names their content); it builds the index, or loads it from the on-disk cache
   (``harness.retrievers.index_cache``).
2. ``retrieve_batch(samples)`` per batch: each sample's ``user_input`` is the query, and
   the result fills ``retrieved_contexts`` (chunk texts, best first) and
   ``retrieved_context_ids`` (the **document** id of each chunk, so qrels and the id
   metrics match; with chunking, several chunks of one document repeat its id).

Importing this module imports numpy only.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from harness.core.errors import ConfigError
from harness.core.types import Chunk, Corpus, Hit, RagSample
from harness.retrievers.chunking import check_chunking
from harness.retrievers.fill import fill_samples
from harness.retrievers.topk import check_top_k


class CorpusRetriever(ABC):
    """Base class of the retrievers that search a corpus (the ``Retriever`` protocol).

    Subclasses set ``kind`` and implement ``index_corpus``, ``ranked`` and ``describe``.

    Attributes:
        needs_corpus: True: ``prepare`` needs the dataset's corpus.
        kind: The retriever's name in outputs and messages (``bm25``, ``dense``, ...).
        top_k: How many chunks ``retrieve_batch`` returns per query.
        chunk_size: Words per chunk; ``None``: whole documents.
        chunk_overlap: Words shared by consecutive chunks.
        chunks: The chunks searched, in corpus order, once prepared (``None`` before, and
            for retrievers that keep no chunks of their own).
    """

    needs_corpus: bool = True
    searches: bool = True
    kind: str = "corpus"

    @property
    def label(self) -> str:
        """How lines name this retriever: its option (``bm25``)."""
        return self.kind

    def __init__(self, top_k: int, chunk_size: int | None, chunk_overlap: int) -> None:
        where = "retriever"
        self.top_k = check_top_k(where, "top_k", top_k)
        self.chunk_size, self.chunk_overlap = check_chunking(where, chunk_size, chunk_overlap)
        self.chunks: list[Chunk] | None = None

    def prepare(self, corpus: Corpus | None) -> None:
        """Build the index of ``corpus`` (or load it from the cache).

        Raises:
            ConfigError: ``corpus`` is ``None`` (the dataset has no corpus).
        """
        if corpus is None:
            raise ConfigError(
                f"retriever ({self.kind}): searches a corpus, but got none; use a BEIR "
                "dataset (dataset=beir dataset.path=DIR) or retriever=precomputed"
            )
        self.index_corpus(corpus)

    @abstractmethod
    def index_corpus(self, corpus: Corpus) -> None:
        """Chunk and index ``corpus`` (what ``prepare`` does once it has one)."""

    @abstractmethod
    def ranked(self, queries: Sequence[str], k: int) -> list[list[Chunk]]:
        """For each query, its best ``k`` chunks, best first."""

    def retrieve_batch(self, samples: Sequence[RagSample]) -> list[RagSample]:
        """The samples with ``retrieved_contexts`` / ``retrieved_context_ids`` filled."""
        return fill_samples(samples, self._hits)

    def _hits(self, queries: list[str]) -> list[list[Hit]]:
        ranked = self.ranked(queries, self.top_k)
        return [[Hit(c.doc_id, c.text) for c in chunks] for chunks in ranked]

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Settings and index provenance, for outputs."""
