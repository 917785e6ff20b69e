"""What every corpus retriever shares: documents, chunks, top-k selection, filling samples.

A corpus retriever (``bm25``, ``dense``, ``hybrid``) is used in two steps:

1. ``prepare(corpus, corpus_key)`` once, with the dataset's documents and a key that
   names their content (``BeirDataset.corpus_key()``); it builds the index, or loads it
   from the on-disk cache (``harness.retrievers.index_cache``).
2. ``retrieve_batch(samples)`` per batch: each sample's ``user_input`` is the query, and
   the result fills ``retrieved_contexts`` (chunk texts, best first) and
   ``retrieved_context_ids`` (the **document** id of each chunk, so qrels and the id
   metrics match; with chunking, several chunks of one document repeat its id).

Importing this module imports numpy only.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from harness.errors import ConfigError
from harness.types import RagSample


@dataclass(frozen=True, slots=True)
class Document:
    """One corpus document (a BEIR ``corpus.jsonl`` record).

    Attributes:
        id: The document id, as written in the corpus and the qrels (an opaque string).
        title: The title; ``""`` when the corpus has none.
        text: The body text.
    """

    id: str
    title: str
    text: str

    @property
    def content(self) -> str:
        """The text a retriever indexes and a reader sees: ``"title\\n\\ntext"``, or just
        ``text`` when the title is empty."""
        return f"{self.title}\n\n{self.text}" if self.title else self.text


@dataclass(frozen=True, slots=True)
class Chunk:
    """A retrievable unit: a whole document, or a window of its words.

    Attributes:
        id: ``"<doc_id>#<n>"``, n counting the document's chunks from 0 (a document that
            is not split is its own chunk ``"<doc_id>#0"``).
        doc_id: The document the chunk comes from (what ``retrieved_context_ids`` holds).
        text: The chunk text.
    """

    id: str
    doc_id: str
    text: str


#: A ranked result list: (chunk index into the retriever's chunks, score), best first.
Hits = list[tuple[int, float]]


def top_k(scores: np.ndarray, k: int, *, positive_only: bool = False) -> Hits:
    """The ``k`` best entries of ``scores`` as ``(index, score)``, best first.

    Ties are broken by the lower index (corpus order), so results are deterministic.
    With ``positive_only``, entries scoring <= 0 are dropped (BM25: a document that shares
    no term with the query is not a match, as in Lucene).
    """
    n = int(scores.shape[0])
    k = min(int(k), n)
    if k <= 0:
        return []
    if k < n:
        part = np.argpartition(-scores, k - 1)[:k]
        kth = scores[part].min()
        candidates = np.flatnonzero(scores >= kth)
    else:
        candidates = np.arange(n)
    order = candidates[np.lexsort((candidates, -scores[candidates]))][:k]
    values = scores[order]
    if positive_only:
        keep = values > 0
        order, values = order[keep], values[keep]
    return list(zip(order.tolist(), values.astype(float).tolist(), strict=True))


def require_extra(modules: Sequence[str], what: str, extra: str | None) -> None:
    """Raise a one-line ``ConfigError`` when an optional dependency is not installed."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        how = f"pip install -e '.[{extra}]'" if extra else "pip install -e ."
        verb = "is" if len(missing) == 1 else "are"
        raise ConfigError(f"{what} needs {', '.join(missing)}, which {verb} not installed: {how}")


def check_top_k(where: str, name: str, value: int) -> int:
    """Validate a positive count setting (``top_k``, ``candidates``)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}.{name}: expected a number >= 1, got {value!r}")
    return value


class CorpusRetriever:
    """Base class of the retrievers that search a corpus (``bm25``, ``dense``).

    Subclasses set ``kind``, implement ``_build_index(chunks, corpus_key)`` and
    ``search(queries, k) -> list[Hits]``, and may implement ``index_settings()``.
    """

    kind = "corpus"

    def __init__(
        self,
        top_k: int,
        chunk_size: int | None,
        chunk_overlap: int,
        rerank: Any = None,
        candidates: int = 100,
    ) -> None:
        from harness.retrievers.chunking import check_chunking

        where = "retriever"
        self.top_k = check_top_k(where, "top_k", top_k)
        self.candidates = check_top_k(where, "candidates", candidates)
        self.chunk_size, self.chunk_overlap = check_chunking(where, chunk_size, chunk_overlap)
        self.reranker = build_reranker(rerank, self.chunk_size, self.chunk_overlap, where)
        self.chunks: list[Chunk] | None = None
        self.corpus_key: str | None = None
        self.index_info: dict[str, Any] = {}

    # -- preparing -------------------------------------------------------------------

    def prepare(self, corpus: Sequence[Document], corpus_key: str) -> None:
        """Chunk ``corpus`` and build its index, or load it from the cache.

        Args:
            corpus: The documents, in corpus order.
            corpus_key: A string that changes whenever the documents change (their
                content hash, e.g. ``BeirDataset.corpus_key()``); with the settings
                that shape the index it names the cached index.
        """
        from harness.retrievers.chunking import chunk_documents

        chunks = chunk_documents(corpus, self.chunk_size, self.chunk_overlap)
        self.prepare_chunks(chunks, corpus_key)

    def prepare_chunks(self, chunks: Sequence[Chunk], corpus_key: str) -> None:
        """Index already chunked text (the reranker gets its first stage's chunks)."""
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
        if self.reranker is not None:
            self.reranker.prepare_chunks(self.chunks, corpus_key)

    def _build_index(self, chunks: list[Chunk], corpus_key: str) -> None:
        raise NotImplementedError

    def index_settings(self) -> dict[str, Any]:
        """The settings that shape the index (its cache key, with the corpus key)."""
        return {"chunk_size": self.chunk_size, "chunk_overlap": self.chunk_overlap}

    # -- searching -------------------------------------------------------------------

    def search(self, queries: Sequence[str], k: int) -> list[Hits]:
        """For each query, the ``k`` best chunks as ``(chunk index, score)``, best first."""
        raise NotImplementedError

    def ranked(self, queries: Sequence[str], k: int) -> list[list[Chunk]]:
        """For each query, its best ``k`` chunks, after the rerank stage if there is one."""
        self._check_prepared()
        if self.reranker is None:
            return [[self.chunks[i] for i, _ in hits] for hits in self.search(queries, k)]  # type: ignore[index]
        first = [
            [self.chunks[i] for i, _ in hits]  # type: ignore[index]
            for hits in self.search(queries, max(k, self.candidates))
        ]
        return self.reranker.rerank(queries, first, k)

    def retrieve_batch(self, samples: Sequence[RagSample]) -> list[RagSample]:
        """The samples with ``retrieved_contexts`` / ``retrieved_context_ids`` filled."""
        return fill_samples(samples, self.ranked, self.top_k)

    def _check_prepared(self) -> None:
        if self.chunks is None:
            raise RuntimeError(
                f"retriever ({self.kind}): call prepare(corpus, corpus_key) before retrieving"
            )

    def describe(self) -> dict[str, Any]:
        """Settings and index provenance, for outputs."""
        out: dict[str, Any] = {"kind": self.kind, "top_k": self.top_k, **self.settings()}
        if self.reranker is not None:
            out["candidates"] = self.candidates
            out["rerank"] = self.reranker.describe()
        if self.index_info:
            out["index"] = dict(self.index_info)
        return out

    def settings(self) -> dict[str, Any]:
        """The retriever's own settings (for ``describe``)."""
        return self.index_settings()


def fill_samples(
    samples: Sequence[RagSample],
    ranked: Any,
    k: int,
) -> list[RagSample]:
    """Run ``ranked(queries, k)`` for the samples that have a question; fill the rest empty.

    A sample without a question (``user_input`` missing or blank) gets an empty
    retrieval: nothing was retrieved for it.
    """
    asked = [i for i, s in enumerate(samples) if s.user_input and s.user_input.strip()]
    results: dict[int, list[Chunk]] = {}
    if asked:
        for i, chunks in zip(asked, ranked([samples[i].user_input for i in asked], k), strict=True):
            results[i] = chunks
    out = []
    for i, sample in enumerate(samples):
        chunks = results.get(i, [])
        out.append(
            dataclasses.replace(
                sample,
                retrieved_contexts=tuple(c.text for c in chunks),
                retrieved_context_ids=tuple(c.doc_id for c in chunks),
            )
        )
    return out


# -- building retrievers from config ---------------------------------------------------

#: Short names accepted where a retriever is configured inside another (hybrid, rerank).
SHORT_NAMES = {
    "bm25": "harness.retrievers.bm25.BM25",
    "dense": "harness.retrievers.dense.Dense",
    "hybrid": "harness.retrievers.hybrid.Hybrid",
}


def _import_target(target: str, where: str) -> Any:
    if not isinstance(target, str) or not target.startswith("harness.retrievers."):
        raise ConfigError(
            f"{where}._target_: expected a retriever under harness.retrievers, got {target!r}"
        )
    module, _, name = target.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise ConfigError(f"{where}._target_: cannot import {target!r} ({e})") from None


def build_retriever(spec: Any, where: str) -> Any:
    """A retriever from its config: an object, a short name, or a ``_target_`` mapping.

    Args:
        spec: A retriever object (anything with ``retrieve_batch``), a short name
            (``bm25``, ``dense``, ``hybrid``: that retriever's defaults), or a mapping
            with ``_target_`` and settings (as Hydra composes it).
        where: The config path, for messages (e.g. ``retriever.retrievers[0]``).
    """
    if hasattr(spec, "retrieve_batch") or hasattr(spec, "ranked"):
        return spec
    if isinstance(spec, str):
        if spec not in SHORT_NAMES:
            from harness.errors import closest

            raise ConfigError(
                f"{where}: unknown retriever {spec!r}{closest(spec, list(SHORT_NAMES))}; "
                f"choose one of {', '.join(SHORT_NAMES)} or give a mapping with _target_"
            )
        return _import_target(SHORT_NAMES[spec], where)()
    if not isinstance(spec, Mapping):
        try:  # an OmegaConf node (Hydra with _recursive_: false)
            from omegaconf import DictConfig, OmegaConf

            if isinstance(spec, DictConfig):
                spec = OmegaConf.to_container(spec, resolve=True)
        except ImportError:  # pragma: no cover - omegaconf is a core dependency
            pass
    if not isinstance(spec, Mapping) or "_target_" not in spec:
        raise ConfigError(
            f"{where}: expected a retriever (bm25, dense, or a mapping with _target_), got {spec!r}"
        )
    from harness.validation import check_arguments

    cls = _import_target(spec["_target_"], where)
    kwargs = {k: v for k, v in spec.items() if not (k.startswith("_") and k.endswith("_"))}
    for key, value in list(kwargs.items()):
        if isinstance(value, Mapping) and "_target_" in value:
            kwargs[key] = build_retriever(value, f"{where}.{key}")
    check_arguments(where, cls, {k: v for k, v in kwargs.items() if not hasattr(v, "ranked")})
    try:
        return cls(**kwargs)
    except ConfigError as e:
        # the part's own messages say "retriever.x"; name where the part sits
        message = str(e)
        if message.startswith("retriever.") and where != "retriever":
            raise ConfigError(where + message[len("retriever") :]) from None
        raise


def build_reranker(spec: Any, chunk_size: int | None, chunk_overlap: int, where: str) -> Any:
    """The rerank stage of a first-stage retriever: a ``Dense`` (bi-encoder), or None.

    The reranker scores the first stage's own chunks, so its chunking settings, when
    given, must equal the first stage's.
    """
    if spec is None:
        return None
    reranker = build_retriever(spec, f"{where}.rerank")
    if not hasattr(reranker, "rerank"):
        raise ConfigError(f"{where}.rerank: {type(reranker).__name__} cannot rerank; use dense")
    own = (getattr(reranker, "chunk_size", None), getattr(reranker, "chunk_overlap", 0))
    if own != (None, 0) and own != (chunk_size, chunk_overlap):
        raise ConfigError(
            f"{where}.rerank: chunk_size/chunk_overlap {own} differ from the first stage's "
            f"{(chunk_size, chunk_overlap)}; the reranker scores the first stage's chunks, "
            "so leave them unset"
        )
    return reranker
