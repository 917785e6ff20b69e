"""The base of the retrievers with an index of their own (``bm25``, ``dense``)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from harness.core.errors import ConfigError
from harness.core.types import Chunk, Corpus
from harness.retrievers.chunking import chunk_documents
from harness.retrievers.corpus import CorpusRetriever
from harness.retrievers.topk import Scored


class IndexedRetriever(CorpusRetriever):
    """A corpus retriever that chunks the corpus and indexes the chunks itself.

    Subclasses implement ``_build_index(chunks, corpus_key)`` and ``search(queries, k)``,
    and may extend ``index_settings`` (the settings that shape the index, its cache key)
    and ``settings`` (what ``describe`` shows).

    Attributes:
        corpus_key: The key of the corpus indexed (``None`` before ``prepare``).
        index_info: The index's provenance from the cache (``key``, ``path``, ``source``,
            ``seconds``, ``chunks``).
    """

    def __init__(self, top_k: int, chunk_size: int | None, chunk_overlap: int) -> None:
        super().__init__(top_k, chunk_size, chunk_overlap)
        self.corpus_key: str | None = None
        self.index_info: dict[str, Any] = {}

    def index_corpus(self, corpus: Corpus) -> None:
        """Chunk the documents and index the chunks."""
        chunks = chunk_documents(corpus.documents, self.chunk_size, self.chunk_overlap)
        self.prepare_chunks(chunks, corpus.key)

    def prepare_chunks(self, chunks: Sequence[Chunk], corpus_key: str) -> None:
        """Index already chunked text (a rerank stage gets its first stage's chunks).

        Nothing is done when these chunks of this corpus are indexed already.
        """
        if (
            self.chunks is not None
            and self.corpus_key == corpus_key
            and len(chunks) == len(self.chunks)
        ):
            return
        if not chunks:
            raise ConfigError(f"retriever ({self.kind}): the corpus has no documents to index")
        self.chunks, self.corpus_key = list(chunks), corpus_key
        self._build_index(self.chunks, corpus_key)

    @abstractmethod
    def _build_index(self, chunks: list[Chunk], corpus_key: str) -> None:
        """Build (or load from the cache) the index of ``chunks``; set ``index_info``."""

    def index_settings(self) -> dict[str, Any]:
        """The settings that shape the index (its cache key, with the corpus key)."""
        return {"chunk_size": self.chunk_size, "chunk_overlap": self.chunk_overlap}

    def settings(self) -> dict[str, Any]:
        """The retriever's own settings (for ``describe``)."""
        return self.index_settings()

    @abstractmethod
    def search(self, queries: Sequence[str], k: int) -> list[Scored]:
        """For each query, the ``k`` best chunks as ``(chunk index, score)``, best first."""

    def ranked(self, queries: Sequence[str], k: int) -> list[list[Chunk]]:
        """For each query, its best ``k`` chunks."""
        chunks = self.prepared_chunks()
        return [[chunks[i] for i, _ in hits] for hits in self.search(queries, k)]

    def prepared_chunks(self) -> list[Chunk]:
        """The indexed chunks; ``RuntimeError`` before ``prepare``."""
        if self.chunks is None:
            raise RuntimeError(f"retriever ({self.kind}): call prepare(corpus) before retrieving")
        return self.chunks

    def describe(self) -> dict[str, Any]:
        """Settings and index provenance, for outputs."""
        out: dict[str, Any] = {"kind": self.kind, "top_k": self.top_k, **self.settings()}
        if self.index_info:
            out["index"] = dict(self.index_info)
        return out
