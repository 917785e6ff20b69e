"""FAISS indexes for ``retriever=dense``: HNSW (the default), IVF or flat.

Every index scores by inner product over L2-normalised embeddings, i.e. by cosine. It is
built from the chunk embeddings and cached beside them (``harness.retrievers.index_cache``,
kind ``dense-faiss``), keyed by the embeddings' content hash, the index type, its build
settings (``hnsw_m``, ``ef_construction``; the effective ``nlist``) and the faiss version.
Search-time settings (``ef_search``, ``nprobe``, ``top_k``) are not in the key: a sweep
over them loads the index and never re-embeds or rebuilds.

Results are deterministic: HNSW graphs are built on one thread (parallel insertion makes
the graph depend on thread timing), IVF's k-means uses faiss's fixed seed, and hits with
equal scores are ordered by chunk index, as the exact search orders them. faiss is
imported when an index is built or loaded, never at import.
"""

from __future__ import annotations

import hashlib
import importlib
import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from harness.core.errors import ConfigError
from harness.retrievers import index_cache
from harness.retrievers.topk import Scored

#: ``exact`` scores every chunk with numpy (no faiss); the others are FAISS indexes.
IndexKind = Literal["hnsw", "flat", "ivf", "exact"]

#: faiss's k-means wants this many training points per IVF list (``min_points_per_centroid``).
POINTS_PER_LIST = 39

#: Most query-by-chunk scores held at once by an exact search (floats).
SCORE_BLOCK = 1 << 24

#: Exact scores this close to the k-th best count as ties of it (float32 rounding).
TIE = 1e-6

_FILE = "index.faiss"

#: Fewer query rows than this are scored on one BLAS thread (``score_blocks``).
FEW_QUERIES = 64

_CONTROLLER: Any = None


def score_blocks(q: np.ndarray, embeddings: np.ndarray) -> Iterator[np.ndarray]:
    """Exact scores ``q @ embeddings.T``, a block of query rows at a time.

    A few queries are scored on one BLAS thread: BLAS's threads gain nothing on a
    matrix-vector product and fight torch's OpenMP threads, still spinning after the query
    was encoded (on 2 cores: 24 ms instead of 8 ms per SciFact query).
    """
    block = max(1, SCORE_BLOCK // max(1, embeddings.shape[0]))
    with one_blas_thread() if len(q) < FEW_QUERIES else nullcontext():
        for start in range(0, len(q), block):
            yield q[start : start + block] @ embeddings.T


def one_blas_thread() -> Any:
    """A context that runs numpy's BLAS on one thread (threadpoolctl, of the dense extra);
    a no-op without threadpoolctl."""
    global _CONTROLLER
    if _CONTROLLER is None:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:
            return nullcontext()
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")


@dataclass(frozen=True)
class AnnSettings:
    """How a FAISS index is built and searched (see ``Dense`` for each setting)."""

    index: IndexKind
    hnsw_m: int
    ef_construction: int
    ef_search: int
    nlist: int | None
    nprobe: int

    def lists(self, n: int) -> int:
        """The IVF list count for ``n`` chunks: ``nlist``, or about ``4*sqrt(n)`` when null,
        at most one list per ``POINTS_PER_LIST`` chunks (and at least one)."""
        most = max(1, n // POINTS_PER_LIST)
        if self.nlist is None:
            return min(most, max(1, round(4 * math.sqrt(n))))
        if self.nlist > most:
            raise ConfigError(
                f"retriever.nlist: {self.nlist} lists need at least "
                f"{self.nlist * POINTS_PER_LIST} chunks to train ({POINTS_PER_LIST} per list), "
                f"the corpus has {n}; use nlist <= {most}, or null to choose it from the size"
            )
        return self.nlist

    def build_settings(self, n: int) -> dict[str, Any]:
        """The settings that shape the index of ``n`` chunks (its cache key)."""
        if self.index == "hnsw":
            return {"index": "hnsw", "hnsw_m": self.hnsw_m, "ef_construction": self.ef_construction}
        if self.index == "ivf":
            return {"index": "ivf", "nlist": self.lists(n)}
        return {"index": self.index}

    def type_name(self, n: int) -> str:
        """The index in faiss factory words, e.g. ``HNSW32,ef_construction=200``."""
        if self.index == "hnsw":
            return f"HNSW{self.hnsw_m},ef_construction={self.ef_construction}"
        if self.index == "ivf":
            return f"IVF{self.lists(n)},Flat"
        return "Flat" if self.index == "flat" else "exact"


class AnnIndex:
    """A FAISS index over one embedding matrix: built or loaded, searched, its recall kept.

    Args:
        settings: The index type and its settings (not ``exact``).
        measure_recall: Also search exactly, to report ``ann_recall`` (costs one exact
            search per query).
    """

    def __init__(self, settings: AnnSettings, measure_recall: bool) -> None:
        if settings.index == "exact":
            raise ValueError("AnnIndex needs a FAISS index type, not 'exact'")
        self.settings = settings
        self.measure_recall = measure_recall and settings.index != "flat"
        self.index: Any = None
        self.info: dict[str, Any] = {}
        self.digest: str | None = None
        self._recall_sum = 0.0
        self._recall_n = 0

    def prepare(
        self,
        embeddings: np.ndarray,
        corpus_key: str,
        embedding_settings: Mapping[str, Any],
        enabled: bool,
    ) -> dict[str, Any]:
        """Load the index of ``embeddings`` from the cache, or build (and cache) it.

        Returns the cache record: ``key``, ``path``, ``source``, ``seconds`` (to build,
        also when loaded), ``bytes`` (serialised size) and ``type``.
        """
        faiss = _faiss()

        digest = hashlib.sha256(np.ascontiguousarray(embeddings).data).hexdigest()
        if self.index is not None and digest == self.digest:
            return self.info
        n = int(embeddings.shape[0])
        settings = {
            **self.settings.build_settings(n),
            "embeddings": {"sha256": digest, **dict(embedding_settings)},
            "faiss": faiss.__version__,
        }

        def load(folder: Path) -> Any:
            index = faiss.read_index(str(folder / _FILE))
            if index.ntotal != n or index.d != embeddings.shape[1]:
                raise ValueError(f"{folder / _FILE} does not index these {n} embeddings")
            return index

        def save(index: Any, folder: Path) -> None:
            faiss.write_index(index, str(folder / _FILE))

        index, info = index_cache.load_or_build(
            "dense-faiss",
            corpus_key,
            settings,
            n,
            lambda: build_index(embeddings, self.settings),
            save,
            load,
            enabled=enabled,
        )
        info["seconds"] = info["build_seconds"] = build_seconds(info)
        if not isinstance(info.get("bytes"), int):  # not on disk: cache off or read-only
            info["bytes"] = int(faiss.serialize_index(index).nbytes)
        info["type"] = self.settings.type_name(n)
        self.index, self.info, self.digest = index, info, digest
        return info

    def search(self, q: np.ndarray, k: int) -> list[Scored]:
        """Each query's best ``k`` chunks as ``(chunk index, score)``, best first; equal
        scores in chunk order. An IVF search may find fewer than ``k``."""
        faiss = _faiss()

        if self.index is None:
            raise RuntimeError("AnnIndex.search before prepare")
        s = self.settings
        k = min(k, int(self.index.ntotal))
        params: Any
        if s.index == "hnsw":
            # a candidate list shorter than the result list only loses hits (hnswlib's rule)
            params = faiss.SearchParametersHNSW(efSearch=max(s.ef_search, k))
        elif s.index == "ivf":
            params = faiss.SearchParametersIVF(nprobe=s.nprobe)
        else:
            params = None
        x = np.ascontiguousarray(q, dtype=np.float32)
        scores, ids = self.index.search(x, k, params=params)
        out: list[Scored] = []
        for row_scores, row_ids in zip(scores, ids, strict=True):
            keep = row_ids >= 0
            found, values = row_ids[keep], row_scores[keep]
            order = np.lexsort((found, -values))
            out.append(list(zip(found[order].tolist(), values[order].astype(float).tolist(),
                                strict=True)))
        return out

    def record_recall(
        self, q: np.ndarray, embeddings: np.ndarray, hits: list[Scored], k: int
    ) -> None:
        """Add each query's recall of ``hits`` against the exact top ``k`` to the mean.

        Ties aware: a hit counts when its exact score reaches the exact k-th best score
        (within ``TIE``), so any of several equally good chunks is a right answer.
        """
        if not self.measure_recall or not len(q):
            return
        k = min(k, int(embeddings.shape[0]))
        at = 0
        for scores in score_blocks(q, embeddings):
            kth = -np.partition(-scores, k - 1, axis=1)[:, k - 1]
            for row, bar in zip(scores, kth, strict=True):
                ids = np.fromiter((i for i, _ in hits[at]), dtype=np.int64)
                found = int(np.count_nonzero(row[ids] >= bar - TIE)) if len(ids) else 0
                self._recall_sum += min(found, k) / k
                self._recall_n += 1
                at += 1

    def metrics(self) -> dict[str, float]:
        """``{"ann_recall": mean over the queries searched}`` (1.0 for flat; ``{}`` when
        not measured)."""
        if self.settings.index == "flat":
            return {"ann_recall": 1.0}
        if not self._recall_n:
            return {}
        return {"ann_recall": self._recall_sum / self._recall_n}


def build_index(embeddings: np.ndarray, settings: AnnSettings) -> Any:
    """A FAISS inner-product index of ``embeddings`` (rows: L2-normalised float32)."""
    faiss = _faiss()

    x = np.ascontiguousarray(embeddings, dtype=np.float32)
    n, dim = x.shape
    if settings.index == "hnsw":
        index = faiss.IndexHNSWFlat(dim, settings.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = settings.ef_construction
        with _one_thread(faiss):
            index.add(x)
        return index
    if settings.index == "ivf":
        nlist = settings.lists(n)
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
        # a single list of a tiny corpus needs no 39 points; faiss would only warn
        index.cp.min_points_per_centroid = min(POINTS_PER_LIST, n // nlist)
        index.train(x)
        index.add(x)
        return index
    if settings.index == "flat":
        index = faiss.IndexFlatIP(dim)
        index.add(x)
        return index
    raise ValueError(f"not a FAISS index type: {settings.index!r}")


def build_seconds(info: Mapping[str, Any]) -> float:
    """How long a cache entry took to build (also when it was loaded): ``build_seconds``
    of ``index_cache``'s record, else its ``seconds``."""
    value = info.get("build_seconds")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return float(info.get("seconds", 0.0))


def _faiss() -> Any:
    """The faiss module, untyped: its bundled stubs lack the search parameter classes."""
    return importlib.import_module("faiss")


@contextmanager
def _one_thread(faiss: Any) -> Iterator[None]:
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)
