"""Reciprocal rank fusion of several retrievers (``retriever=hybrid``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from harness.errors import ConfigError
from harness.retrievers.base import (
    Chunk,
    Document,
    build_reranker,
    build_retriever,
    check_top_k,
    fill_samples,
)
from harness.types import RagSample

Level = Literal["chunk", "document"]


class Hybrid:
    """Fuse the rankings of two or more retrievers with reciprocal rank fusion (RRF).

    Each retriever returns its best ``candidates`` chunks per query. An item at rank r
    (1-based) of retriever i scores ``weights[i] / (rrf_k + r)``; an item's fused score is
    the sum over the retrievers that returned it (Cormack et al., 2009). Items are ordered
    by fused score, then by their best rank in any list, then by first appearance
    (retriever order), so the order is deterministic; the best ``top_k`` are returned.

    ``level`` decides what an item is. ``chunk``: a chunk id (``"<doc>#<n>"``), which
    needs every retriever to chunk the corpus the same way (checked). ``document``: a
    document id; each list is reduced to each document's first (best) chunk, ranks are
    counted over those, and the fused list returns, per document, the chunk that ranked
    best in any list.

    Args:
        retrievers: The retrievers to fuse: short names (``bm25``, ``dense``), mappings
            with ``_target_`` and settings, or retriever objects.
        top_k: How many chunks to return per query.
        rrf_k: The RRF constant (60 in the paper and most toolkits).
        candidates: How many results each retriever contributes per query (and how many
            fused results the rerank stage re-scores).
        weights: One weight per retriever (null: all 1).
        level: ``chunk`` or ``document`` (see above).
        rerank: Re-score the first ``candidates`` fused chunks with a dense bi-encoder:
            ``dense``, a mapping with ``_target_``, or null.
    """

    kind = "hybrid"

    def __init__(
        self,
        retrievers: Sequence[Any] = ("bm25", "dense"),
        top_k: int = 10,
        rrf_k: float = 60,
        candidates: int = 100,
        weights: list[float] | None = None,
        level: Level = "chunk",
        rerank: Any = None,
    ) -> None:
        where = "retriever"
        if isinstance(retrievers, (str, bytes)) or not isinstance(retrievers, Sequence):
            try:
                from omegaconf import ListConfig, OmegaConf

                if isinstance(retrievers, ListConfig):
                    retrievers = OmegaConf.to_container(retrievers, resolve=True)  # type: ignore[assignment]
            except ImportError:  # pragma: no cover
                pass
        if (
            isinstance(retrievers, (str, bytes))
            or not isinstance(retrievers, Sequence)
            or not retrievers
        ):
            raise ConfigError(
                f"{where}.retrievers: expected a list of one or more retrievers, got {retrievers!r}"
            )
        self.retrievers = [
            build_retriever(spec, f"{where}.retrievers[{i}]") for i, spec in enumerate(retrievers)
        ]
        for i, child in enumerate(self.retrievers):
            if not hasattr(child, "ranked") or not hasattr(child, "prepare"):
                raise ConfigError(
                    f"{where}.retrievers[{i}]: {type(child).__name__} does not search a corpus"
                )
        self.top_k = check_top_k(where, "top_k", top_k)
        self.candidates = check_top_k(where, "candidates", candidates)
        if isinstance(rrf_k, bool) or not isinstance(rrf_k, (int, float)) or rrf_k < 0:
            raise ConfigError(f"{where}.rrf_k: expected a number >= 0, got {rrf_k!r}")
        self.rrf_k = float(rrf_k)
        if weights is None:
            weights = [1.0] * len(self.retrievers)
        if len(weights) != len(self.retrievers) or any(
            isinstance(w, bool) or not isinstance(w, (int, float)) or w < 0 for w in weights
        ):
            raise ConfigError(
                f"{where}.weights: expected {len(self.retrievers)} numbers >= 0 (one per "
                f"retriever), got {weights!r}"
            )
        self.weights = [float(w) for w in weights]
        if level not in ("chunk", "document"):
            raise ConfigError(f"{where}.level: expected 'chunk' or 'document', got {level!r}")
        self.level = level
        chunkings = {
            (getattr(c, "chunk_size", None), getattr(c, "chunk_overlap", 0))
            for c in self.retrievers
        }
        if level == "chunk" and len(chunkings) > 1:
            raise ConfigError(
                f"{where}.level=chunk needs every retriever to chunk alike, got "
                f"(chunk_size, chunk_overlap) = {sorted(chunkings, key=str)}; give them the same "
                "chunking or fuse with level=document"
            )
        first = self.retrievers[0]
        self.chunk_size = getattr(first, "chunk_size", None)
        self.chunk_overlap = getattr(first, "chunk_overlap", 0)
        self.reranker = build_reranker(rerank, self.chunk_size, self.chunk_overlap, where)
        self.chunks: list[Chunk] | None = None

    def prepare(self, corpus: Sequence[Document], corpus_key: str) -> None:
        """Prepare every retriever (each builds or loads its own index)."""
        for child in self.retrievers:
            child.prepare(corpus, corpus_key)
        self.chunks = getattr(self.retrievers[0], "chunks", None)
        if self.reranker is not None:
            if self.chunks is None:
                from harness.retrievers.chunking import chunk_documents

                self.chunks = chunk_documents(corpus, self.chunk_size, self.chunk_overlap)
            self.reranker.prepare_chunks(self.chunks, corpus_key)

    def ranked(self, queries: Sequence[str], k: int) -> list[list[Chunk]]:
        """For each query, the best ``k`` fused chunks (after the rerank stage, if any)."""
        lists = [child.ranked(queries, self.candidates) for child in self.retrievers]
        depth = max(k, self.candidates) if self.reranker is not None else k
        fused = [
            fuse([per_child[q] for per_child in lists], self.weights, self.rrf_k, self.level)[
                :depth
            ]
            for q in range(len(queries))
        ]
        if self.reranker is None:
            return fused
        return self.reranker.rerank(queries, fused, k)

    def retrieve_batch(self, samples: Sequence[RagSample]) -> list[RagSample]:
        """The samples with ``retrieved_contexts`` / ``retrieved_context_ids`` filled."""
        return fill_samples(samples, self.ranked, self.top_k)

    def describe(self) -> dict[str, Any]:
        """Settings of the fusion and of each retriever, for outputs."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "top_k": self.top_k,
            "rrf_k": self.rrf_k,
            "candidates": self.candidates,
            "weights": self.weights,
            "level": self.level,
            "retrievers": [child.describe() for child in self.retrievers],
        }
        if self.reranker is not None:
            out["rerank"] = self.reranker.describe()
        return out


def fuse(
    rankings: Sequence[Sequence[Chunk]],
    weights: Sequence[float],
    rrf_k: float,
    level: Level = "chunk",
) -> list[Chunk]:
    """Reciprocal rank fusion of ranked chunk lists (best first), all fused items returned.

    Args:
        rankings: One ranked list per retriever.
        weights: One weight per list.
        rrf_k: The RRF constant.
        level: ``chunk`` (items are chunk ids) or ``document`` (items are document ids;
            a document's later chunks in a list are skipped, and ranks count documents).
    """
    score: dict[str, float] = {}
    best: dict[str, tuple[int, int]] = {}  # item -> (best rank, first appearance)
    chunk_of: dict[str, Chunk] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        seen: set[str] = set()
        rank = 0
        for chunk in ranking:
            item = chunk.id if level == "chunk" else chunk.doc_id
            if item in seen:
                continue
            seen.add(item)
            rank += 1
            score[item] = score.get(item, 0.0) + weight / (rrf_k + rank)
            if item not in best:
                best[item] = (rank, len(best))
                chunk_of[item] = chunk
            elif rank < best[item][0]:
                best[item] = (rank, best[item][1])
                chunk_of[item] = chunk
    order = sorted(score, key=lambda item: (-score[item], best[item][0], best[item][1]))
    return [chunk_of[item] for item in order]
