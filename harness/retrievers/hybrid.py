"""Reciprocal rank fusion of several retrievers (``retriever=hybrid``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from harness.core.capabilities import Role, lacking
from harness.core.errors import ConfigError
from harness.core.types import Chunk, Corpus
from harness.core.validation import Range
from harness.retrievers.chunking import chunk_documents
from harness.retrievers.corpus import CorpusRetriever
from harness.retrievers.dense.retriever import Dense
from harness.retrievers.rerank import RerankStage
from harness.retrievers.topk import Count, check_top_k

Level = Literal["chunk", "document"]
#: ``rrf_k`` and each of ``weights``: finite numbers >= 0.
NonNegative = Annotated[float, Range(ge=0)]


class Hybrid(CorpusRetriever):
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
        retrievers: The corpus retrievers to fuse, by name (a mapping, as the config
            composes them: ``retrievers.bm25``, ``retrievers.dense``) or in a list; they
            are fused in this order.
        top_k: How many chunks to return per query.
        rrf_k: The RRF constant (60 in the paper and most toolkits).
        candidates: How many results each retriever contributes per query (and how many
            fused results the rerank stage re-scores).
        weights: One weight per retriever, in the order of ``retrievers`` (null: all 1).
        level: ``chunk`` or ``document`` (see above).
        rerank: Re-score the first ``candidates`` fused chunks with this dense bi-encoder
            (``rerank=dense``), or null.
    """

    kind = "hybrid"

    def __init__(
        self,
        retrievers: Mapping[str, CorpusRetriever] | Sequence[CorpusRetriever],
        top_k: Count = 10,
        rrf_k: NonNegative = 60,
        candidates: Count = 100,
        weights: list[NonNegative] | None = None,
        level: Level = "chunk",
        rerank: Dense | None = None,
    ) -> None:
        where = "retriever"
        self.retrievers = _check_parts(retrievers, where)
        parts = list(self.retrievers.values())
        first = parts[0]
        super().__init__(top_k, first.chunk_size, first.chunk_overlap)
        self.candidates = check_top_k(where, "candidates", candidates)
        if not _non_negative(rrf_k):
            raise ConfigError(f"{where}.rrf_k: expected a finite number >= 0, got {rrf_k!r}")
        self.rrf_k = float(rrf_k)
        if weights is None:
            weights = [1.0] * len(parts)
        if len(weights) != len(parts) or not all(_non_negative(w) for w in weights):
            raise ConfigError(
                f"{where}.weights: expected {len(parts)} numbers >= 0 (finite, one per "
                f"retriever), got {weights!r}"
            )
        self.weights = [float(w) for w in weights]
        if level not in ("chunk", "document"):
            raise ConfigError(f"{where}.level: expected 'chunk' or 'document', got {level!r}")
        self.level: Level = level
        chunkings = {(c.chunk_size, c.chunk_overlap) for c in parts}
        if level == "chunk" and len(chunkings) > 1:
            raise ConfigError(
                f"{where}.level=chunk needs every retriever to chunk alike, got "
                f"(chunk_size, chunk_overlap) = {sorted(chunkings, key=str)}; give them the same "
                "chunking or fuse with level=document"
            )
        self.stage = RerankStage(rerank, self.candidates, self.chunk_size, self.chunk_overlap)

    def index_corpus(self, corpus: Corpus) -> None:
        """Prepare every retriever (each builds or loads its own index)."""
        parts = list(self.retrievers.values())
        for child in parts:
            child.prepare(corpus)
        self.chunks = parts[0].chunks
        if self.stage.reranker is not None:
            if self.chunks is None:
                self.chunks = chunk_documents(corpus.documents, self.chunk_size, self.chunk_overlap)
            self.stage.prepare(self.chunks, corpus.key)

    def ranked(self, queries: Sequence[str], k: int) -> list[list[Chunk]]:
        """For each query, the best ``k`` fused chunks (after the rerank stage, if any)."""
        return self.stage.ranked(self._fused, queries, k)

    def _fused(self, queries: Sequence[str], k: int) -> list[list[Chunk]]:
        lists = [child.ranked(queries, self.candidates) for child in self.retrievers.values()]
        return [
            fuse([per_child[q] for per_child in lists], self.weights, self.rrf_k, self.level)[:k]
            for q in range(len(queries))
        ]

    def describe(self) -> dict[str, Any]:
        """Settings of the fusion and of each retriever (in fusion order), for outputs."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "top_k": self.top_k,
            "rrf_k": self.rrf_k,
            "candidates": self.candidates,
            "weights": self.weights,
            "level": self.level,
            "retrievers": [child.describe() for child in self.retrievers.values()],
        }
        if self.stage.reranker is not None:
            out["rerank"] = self.stage.reranker.describe()
        return out


def _non_negative(value: Any) -> bool:
    """Whether ``value`` is a finite number >= 0 (not a bool)."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


#: What a part of a hybrid must do: rank a corpus's chunks (a ``CorpusRetriever``).
FUSED = Role("corpus retriever", "harness.retrievers.corpus.CorpusRetriever",
             ("index_corpus", "ranked"), frozenset({"index_corpus", "ranked"}))


def _check_parts(
    retrievers: Mapping[str, CorpusRetriever] | Sequence[CorpusRetriever], where: str
) -> dict[str, CorpusRetriever]:
    """The parts by name (a list's parts are named ``0``, ``1``, ...), each checked."""
    if isinstance(retrievers, Mapping):
        named = [(str(name), f".{name}", part) for name, part in retrievers.items()]
    elif isinstance(retrievers, Sequence) and not isinstance(retrievers, (str, bytes)):
        named = [(str(i), f"[{i}]", part) for i, part in enumerate(retrievers)]
    else:
        named = []
    if not named:
        raise ConfigError(
            f"{where}.retrievers: expected one or more retrievers, got {retrievers!r}"
        )
    for _, path, part in named:
        if isinstance(part, (str, Mapping)):
            raise ConfigError(
                f"{where}.retrievers{path}: expected a retriever, got {part!r}; add parts "
                "from the retriever group, e.g. +retriever@retriever.retrievers.NAME=bm25"
            )
        if lacking(part, FUSED):
            raise ConfigError(
                f"{where}.retrievers{path}: {type(part).__name__} does not search a corpus"
            )
    return {name: part for name, _, part in named}


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
