"""The optional rerank stage of ``bm25`` and ``hybrid`` (``rerank=dense``).

The first stage returns its best ``candidates`` chunks per query; a ``Dense`` bi-encoder
re-orders them by cosine similarity to the query and keeps the best ``top_k``. The
reranker scores the first stage's own chunks (it embeds them once, through the index
cache), so its chunking settings, when given, must equal the first stage's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from harness.core.capabilities import Role, lacking
from harness.core.errors import ConfigError
from harness.core.types import Chunk
from harness.retrievers.dense.retriever import Dense
from harness.retrievers.topk import check_top_k

#: A first stage: for each query, its best ``k`` chunks.
FirstStage = Callable[[Sequence[str], int], list[list[Chunk]]]


#: What a reranker must do: score a first stage's candidates again (``retriever=dense``).
RERANKS = Role("reranker", "harness.retrievers.dense.retriever.Dense",
               ("prepare_chunks", "rerank", "describe", "chunk_size", "chunk_overlap"),
               frozenset({"prepare_chunks", "rerank", "describe"}))


class RerankStage:
    """A first-stage retriever's rerank stage, or its absence (``reranker=None``).

    Args:
        reranker: The ``Dense`` that re-scores, or ``None`` for no rerank stage.
        candidates: How many first-stage chunks the reranker re-scores per query.
        chunk_size: The first stage's chunking (words per chunk).
        chunk_overlap: The first stage's overlap.
        where: The config path of the first stage, for messages.
    """

    def __init__(
        self,
        reranker: Dense | None,
        candidates: int,
        chunk_size: int | None,
        chunk_overlap: int,
        where: str = "retriever",
    ) -> None:
        self.candidates = check_top_k(where, "candidates", candidates)
        if reranker is not None and lacking(reranker, RERANKS):
            raise ConfigError(
                f"{where}.rerank: {type(reranker).__name__} cannot rerank; use dense"
            )
        if reranker is not None:
            own = (reranker.chunk_size, reranker.chunk_overlap)
            if own != (None, 0) and own != (chunk_size, chunk_overlap):
                raise ConfigError(
                    f"{where}.rerank: chunk_size/chunk_overlap {own} differ from the first "
                    f"stage's {(chunk_size, chunk_overlap)}; the reranker scores the first "
                    "stage's chunks, so leave them unset"
                )
        self.reranker = reranker

    def prepare(self, chunks: Sequence[Chunk], corpus_key: str) -> None:
        """Embed the first stage's chunks (or load them from the cache)."""
        if self.reranker is not None:
            self.reranker.prepare_chunks(chunks, corpus_key)

    def ranked(self, first_stage: FirstStage, queries: Sequence[str], k: int) -> list[list[Chunk]]:
        """Each query's best ``k`` chunks: the first stage's, re-scored if there is a
        reranker (from the first stage's best ``max(k, candidates)``)."""
        if self.reranker is None:
            return first_stage(queries, k)
        return self.reranker.rerank(queries, first_stage(queries, max(k, self.candidates)), k)

    def describe(self) -> dict[str, Any]:
        """``candidates`` and the reranker's settings; ``{}`` without a reranker."""
        if self.reranker is None:
            return {}
        return {"candidates": self.candidates, "rerank": self.reranker.describe()}
