"""Dense retrieval through a Chroma vector database server (``retriever=chroma``).

Needs the ``chroma`` extra (``pip install -e '.[chroma]'``) and a running server
(``chroma run --path DIR --host 127.0.0.1 --port 8000``). The embeddings are harness's
own (``retriever=dense``'s encoder, cached on disk like its index); Chroma stores them in
an HNSW index and answers the queries. Chroma never embeds anything itself.

A collection is named after the corpus key and every setting that shapes its index
(``space``, ``hnsw_m``, ``ef_construction``, ``ef_search``, the model and the chunking),
so runs and sweep jobs with the same settings share one collection, uploaded once. Chroma
(1.5) ignores an ``ef_search`` changed with ``collection.modify`` on an existing index, so
each ``ef_search`` gets a collection of its own: a sweep over it measures what it says.

As it searches, the retriever also runs the exact search over the same embeddings and
reports how many of its results the HNSW index found: ``describe()["metrics"]["ann_recall"]``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Annotated, Any, Literal

import numpy as np

from harness.core.errors import ConfigError
from harness.core.types import Chunk, Corpus
from harness.core.validation import Range, check_value
from harness.retrievers import index_cache
from harness.retrievers.chroma.client import Endpoint, connect, endpoint, talking
from harness.retrievers.chunking import ChunkOverlap, ChunkSize, chunk_documents
from harness.retrievers.corpus import CorpusRetriever
from harness.retrievers.dense.retriever import RECALL_QUERIES, Dense
from harness.retrievers.extras import require_extra
from harness.retrievers.topk import Count, top_k

Space = Literal["cosine", "ip", "l2"]
#: ``hnsw_m``: links per HNSW node, >= 2.
Links = Annotated[int, Range(ge=2)]
_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]")
#: Queries per request (Chroma also caps requests at ``client.get_max_batch_size()``).
_QUERY_BATCH = 256


class Chroma(CorpusRetriever):
    """Approximate nearest-neighbour search in a Chroma server's HNSW index.

    Args:
        host: The server's host name, or its URL (``https://user:password@db:8000``;
            credentials are sent as Basic auth and never shown).
        port: The server's port (when ``host`` is not a URL naming one).
        collection: The collection to use (null: a name derived from the corpus and
            the index settings, shared by every run with the same ones).
        space: ``cosine``, ``ip`` or ``l2``: the HNSW distance (the same ranking on the
            normalised embeddings; it changes the graph Chroma builds).
        hnsw_m: Links per node of the HNSW graph (Chroma's ``max_neighbors``).
        ef_construction: Candidates kept while the graph is built.
        ef_search: Candidates kept while searching (higher: better recall, slower).
        model: The embedding model, as for ``retriever=dense``.
        top_k: How many chunks to return per query.
        batch_size: Texts encoded per forward pass.
        chunk_size: Split documents into chunks of this many words (null: whole documents).
        chunk_overlap: Words shared by consecutive chunks.
        device: ``cpu``, ``cuda``, ``cuda:1``, ``mps``: where the model runs.
        cache: Keep the chunk embeddings in the on-disk index cache.
        ann_recall: Also run the exact search and report the HNSW results' recall of it.
    """

    kind = "chroma"

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        collection: str | None = None,
        space: Space = "cosine",
        hnsw_m: Links = 16,
        ef_construction: Count = 100,
        ef_search: Count = 100,
        model: str = "all-MiniLM-L6-v2",
        top_k: Count = 10,
        batch_size: Count = 64,
        chunk_size: ChunkSize = None,
        chunk_overlap: ChunkOverlap = 0,
        device: str = "cpu",
        cache: bool = True,
        ann_recall: bool = True,
    ) -> None:
        require_extra(["chromadb", "torch", "transformers"], "retriever=chroma", "chroma")
        self.endpoint: Endpoint = endpoint(host, port)
        check_value("retriever.space", Space, space)
        for name, annotation, value in (
            ("hnsw_m", Links, hnsw_m),
            ("ef_construction", Count, ef_construction),
            ("ef_search", Count, ef_search),
            ("ann_recall", bool, ann_recall),
        ):
            check_value(f"retriever.{name}", annotation, value)
        if collection is not None and (
            not isinstance(collection, str) or not _NAME.fullmatch(collection)
        ):
            raise ConfigError(
                "retriever.collection: expected 3-512 characters of a-z A-Z 0-9 . _ - that "
                f"start and end with a letter or digit, or null, got {collection!r}"
            )
        super().__init__(top_k, chunk_size, chunk_overlap)
        # the encoder and the embedding cache only: Chroma holds the index (no FAISS)
        self.dense = Dense(model=model, top_k=top_k, batch_size=batch_size,
                           chunk_size=chunk_size, chunk_overlap=chunk_overlap, device=device,
                           cache=cache, index="exact")
        self.space, self.hnsw_m = space, hnsw_m
        self.ef_construction, self.ef_search = ef_construction, ef_search
        self.collection_setting, self.cache, self.ann_recall = collection, cache, ann_recall
        self.collection_name: str | None = None
        self.index_info: dict[str, Any] = {}
        self._collection: Any = None
        self._embeddings: np.ndarray | None = None
        self._rows: dict[str, int] = {}
        self._recall_sum, self._recall_n = 0.0, 0
        self._held: list[tuple[np.ndarray, list[int], int]] = []

    def index_settings(self) -> dict[str, Any]:
        """The settings that shape the collection (its name, with the corpus key)."""
        return {
            "space": self.space,
            "hnsw_m": self.hnsw_m,
            "ef_construction": self.ef_construction,
            "ef_search": self.ef_search,
            **self.dense.index_settings(),  # model, encoder recipe, chunking
        }

    def index_corpus(self, corpus: Corpus) -> None:
        """Embed the chunks (or load them from the cache), then make sure the server holds
        them in a collection with this index's settings."""
        chunks = chunk_documents(corpus.documents, self.chunk_size, self.chunk_overlap)
        if not chunks:
            raise ConfigError("retriever (chroma): the corpus has no documents to index")
        client = connect(self.endpoint)  # first: a missing server fails before the model loads
        embeddings, embedded = self._embed(chunks, corpus.key)
        key = index_cache.index_key(self.kind, corpus.key, self.index_settings())
        name = self.collection_setting or f"harness-{key[:40]}"
        self._collection, info = self._sync(client, name, key, chunks, embeddings)
        self.chunks, self.collection_name, self._embeddings = chunks, name, embeddings
        self._rows = {c.id: i for i, c in enumerate(chunks)}
        built = [embedded.get("build_seconds"), info.get("upload_seconds")]
        seconds = [float(x) for x in built if isinstance(x, (int, float))]
        if len(seconds) == len(built):
            info["build_seconds"] = round(sum(seconds), 3)  # from scratch: embed, then upload
        self.index_info = {**info, "collection": name, "chunks": len(chunks),
                           "embeddings": embedded}

    def _embed(self, chunks: list[Chunk], corpus_key: str) -> tuple[np.ndarray, dict[str, Any]]:
        # the embeddings retriever=dense caches for the same model and chunks: shared
        embeddings, info = self.dense.embed(chunks, corpus_key)
        keep = ("source", "seconds", "build_seconds", "bytes")
        return embeddings, {k: info[k] for k in keep if info.get(k) is not None}

    def _sync(
        self, client: Any, name: str, key: str, chunks: list[Chunk], embeddings: np.ndarray
    ) -> tuple[Any, dict[str, Any]]:
        """The collection, created and filled unless it already holds these chunks.

        Returns the collection and its provenance: ``source`` (``built`` or ``reused``),
        ``seconds`` (spent now) and ``upload_seconds`` (to upload it, also when reused).
        """
        where, start = self.endpoint, time.perf_counter()
        hnsw = {"space": self.space, "max_neighbors": self.hnsw_m,
                "ef_construction": self.ef_construction, "ef_search": self.ef_search}
        with talking(where, f"opening collection {name}"):
            collection = client.get_or_create_collection(
                name, configuration={"hnsw": hnsw}, metadata={"harness_key": key},
                embedding_function=None,
            )
            metadata = dict(collection.metadata or {})
            count = collection.count()
        if metadata.get("harness_key") != key:
            raise ConfigError(
                f"retriever.collection: collection {name!r} on {where.url} holds another "
                "index (another corpus, model, chunking or HNSW settings); choose another "
                "name, or null for one derived from the settings"
            )
        if count == len(chunks):
            info = {"source": "reused", "seconds": round(time.perf_counter() - start, 3)}
            uploaded = metadata.get("harness_upload_seconds")
            return collection, {**info, **({"upload_seconds": uploaded} if uploaded else {})}
        with talking(where, f"uploading to collection {name}"):
            step = max(1, min(int(client.get_max_batch_size()), 4096))
            for at in range(0, len(chunks), step):
                part = chunks[at : at + step]
                # upsert, so that sweep jobs filling one collection at once agree
                collection.upsert(
                    ids=[c.id for c in part],
                    embeddings=embeddings[at : at + step],
                    metadatas=[{"doc_id": c.doc_id} for c in part],
                )
            count = collection.count()
            seconds = round(time.perf_counter() - start, 3)
            collection.modify(metadata={"harness_key": key, "harness_upload_seconds": seconds})
        if count != len(chunks):
            raise ConfigError(
                f"retriever.collection: collection {name!r} holds {count} items after the "
                f"upload, the corpus has {len(chunks)} chunks; delete it and run again"
            )
        return collection, {"source": "built", "seconds": seconds, "upload_seconds": seconds}

    def ranked(self, queries: Sequence[str], k: int) -> list[list[Chunk]]:
        """For each query, the ``k`` nearest chunks the server's HNSW index finds."""
        if self.chunks is None or self._embeddings is None:
            raise RuntimeError("retriever (chroma): call prepare(corpus) before retrieving")
        chunks = self.chunks
        if not queries:
            return []
        k = min(k, len(chunks))
        q = self.dense.encode_queries(queries)
        ids: list[list[str]] = []
        with talking(self.endpoint, f"searching collection {self.collection_name}"):
            for at in range(0, len(q), _QUERY_BATCH):
                reply = self._collection.query(
                    query_embeddings=q[at : at + _QUERY_BATCH], n_results=k, include=[]
                )
                ids.extend(list(row) for row in reply["ids"])
        rows = [[self._row(i) for i in found] for found in ids]
        if self.ann_recall and self._recall_n + len(self._held) < RECALL_QUERIES:
            self._held.extend((v, r, k) for v, r in zip(q, rows, strict=True))  # scored later
        return [[chunks[r] for r in found] for found in rows]

    def _measure_recall(self) -> None:  # the held queries, searched exactly (ann_recall)
        assert self._embeddings is not None
        for vector, found, k in self._held:
            exact = {i for i, _ in top_k(self._embeddings @ vector, k)}
            self._recall_sum += len(exact.intersection(found)) / k
            self._recall_n += 1
        self._held.clear()

    def _row(self, chunk_id: str) -> int:
        row = self._rows.get(chunk_id)
        if row is None:
            raise ConfigError(
                f"retriever.collection: collection {self.collection_name!r} returned "
                f"{chunk_id!r}, which is no chunk of this corpus; delete the collection"
            )
        return row

    def describe(self) -> dict[str, Any]:
        """Settings, the server and collection, the index's provenance and its recall."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "server": self.endpoint.url,
            "collection": self.collection_name or self.collection_setting,
            "top_k": self.top_k,
            "space": self.space,
            "hnsw_m": self.hnsw_m,
            "ef_construction": self.ef_construction,
            "ef_search": self.ef_search,
            "model": self.dense.model,
            "model_id": self.dense.model_id,
            "device": self.dense.device,
            "chunk_size": self.chunk_size,
            "chunk_overlap": self.chunk_overlap,
        }
        if self.index_info:
            out["index"] = dict(self.index_info)
        self._measure_recall()
        if self._recall_n:
            out["metrics"] = {"ann_recall": round(self._recall_sum / self._recall_n, 6)}
        return out
