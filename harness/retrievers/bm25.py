"""BM25 over the dataset's corpus, with the ``bm25s`` library (``retriever=bm25``)."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from harness.core.errors import ConfigError
from harness.core.types import Chunk
from harness.core.validation import Range, check_value
from harness.retrievers import index_cache
from harness.retrievers.chunking import ChunkOverlap, ChunkSize
from harness.retrievers.dense.retriever import Dense
from harness.retrievers.extras import require_extra
from harness.retrievers.indexed import IndexedRetriever
from harness.retrievers.rerank import RerankStage
from harness.retrievers.topk import Count, Scored, top_k

Method = Literal["robertson", "lucene", "atire", "bm25l", "bm25+"]
#: ``k1`` and ``delta``: finite numbers >= 0.
NonNegative = Annotated[float, Range(ge=0)]
#: ``b``: a number in [0, 1].
Fraction = Annotated[float, Range(ge=0, le=1)]


class BM25(IndexedRetriever):
    """Lexical retrieval with BM25 (``bm25s``: sparse matrices, numpy only, no downloads).

    Text is tokenized by ``bm25s``'s own tokenizer (lower-cased, words of two or more
    letters or digits, ``\\b\\w\\w+\\b``), English stopwords removed, optionally stemmed.
    Each chunk's text is indexed (the title is part of a document's first chunk). Only
    chunks that share a term with the query are returned, so a query can get fewer than
    ``top_k`` results, or none. Ties keep corpus order.

    Args:
        top_k: How many chunks to return per query.
        k1: Term-frequency saturation (>= 0).
        b: Document-length normalisation (0 none, 1 full; in [0, 1]).
        method: The BM25 variant (``bm25s`` names): ``lucene`` (as Lucene/Anserini),
            ``robertson``, ``atire``, ``bm25l``, ``bm25+``.
        delta: The delta of ``bm25l`` and ``bm25+`` (>= 0; ignored by the others).
        stemmer: A Snowball language (``english``, ``german``, ...) or null for no
            stemming. Stemming needs PyStemmer (the ``stem`` extra).
        stopwords: ``en`` (bm25s's English list), another ``bm25s`` language code, a
            list of words, or null to keep every word.
        chunk_size: Split documents into chunks of this many words (null: whole
            documents). See ``harness.retrievers.chunking``.
        chunk_overlap: Words shared by consecutive chunks.
        rerank: Re-score the first ``candidates`` chunks with this dense bi-encoder
            (``rerank=dense`` in the config, the ``rerank`` group), or null for no rerank
            stage. See ``harness.retrievers.rerank``.
        candidates: How many first-stage chunks the rerank stage re-scores.
        cache: Keep the index in the on-disk index cache (``index_cache``).
    """

    kind = "bm25"

    def __init__(
        self,
        top_k: Count = 10,
        k1: NonNegative = 1.5,
        b: Fraction = 0.75,
        method: Method = "lucene",
        delta: NonNegative = 0.5,
        stemmer: str | None = None,
        stopwords: str | list[str] | None = "en",
        chunk_size: ChunkSize = None,
        chunk_overlap: ChunkOverlap = 0,
        rerank: Dense | None = None,
        candidates: Count = 100,
        cache: bool = True,
    ) -> None:
        require_extra(["bm25s"], "retriever=bm25", None)
        if method not in ("robertson", "lucene", "atire", "bm25l", "bm25+"):
            raise ConfigError(
                f"retriever.method: expected one of robertson, lucene, atire, bm25l, bm25+; "
                f"got {method!r}"
            )
        check_value("retriever.k1", NonNegative, k1)
        check_value("retriever.b", Fraction, b)
        check_value("retriever.delta", NonNegative, delta)
        self.k1, self.b, self.method, self.delta = float(k1), float(b), method, float(delta)
        self.stemmer_name = stemmer
        self._stemmer = _make_stemmer(stemmer)
        self.stopwords = _check_stopwords(stopwords)
        self.cache = cache
        super().__init__(top_k, chunk_size, chunk_overlap)
        self.stage = RerankStage(rerank, candidates, self.chunk_size, self.chunk_overlap)
        self._index: Any = None

    def prepare_chunks(self, chunks: Sequence[Chunk], corpus_key: str) -> None:
        super().prepare_chunks(chunks, corpus_key)
        self.stage.prepare(self.prepared_chunks(), corpus_key)

    def ranked(self, queries: Sequence[str], k: int) -> list[list[Chunk]]:
        """For each query, its best ``k`` chunks, after the rerank stage if there is one."""
        return self.stage.ranked(super().ranked, queries, k)

    def index_settings(self) -> dict[str, Any]:
        import bm25s

        return {
            "k1": self.k1,
            "b": self.b,
            "method": self.method,
            "delta": self.delta if self.method in ("bm25l", "bm25+") else None,
            "stemmer": self.stemmer_name,
            "stopwords": self.stopwords,
            "tokenizer": r"bm25s.tokenize \b\w\w+\b lower",
            "bm25s": bm25s.__version__,
            **super().index_settings(),
        }

    def settings(self) -> dict[str, Any]:
        out = self.index_settings()
        out.pop("tokenizer")
        return {**out, **self.stage.describe()}

    def _tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        bm25s = _bm25s()

        tokens = bm25s.tokenize(
            list(texts),
            stopwords=self.stopwords,
            stemmer=self._stemmer,
            return_ids=False,
            show_progress=False,
        )
        return [list(t) for t in tokens]

    def _build_index(self, chunks: list[Chunk], corpus_key: str) -> None:
        bm25s = _bm25s()

        def build() -> Any:
            index = bm25s.BM25(k1=self.k1, b=self.b, method=self.method, delta=self.delta)
            index.index(self._tokenize([c.text for c in chunks]), show_progress=False)
            return index

        def save(index: Any, folder: Path) -> None:
            index.save(str(folder), **_quiet(index.save))

        def load(folder: Path) -> Any:
            return bm25s.BM25.load(str(folder), **_quiet(bm25s.BM25.load))

        self._index, self.index_info = index_cache.load_or_build(
            self.kind,
            corpus_key,
            self.index_settings(),
            len(chunks),
            build,
            save,
            load,
            enabled=self.cache,
        )
        self.index_info["chunks"] = len(chunks)

    def search(self, queries: Sequence[str], k: int) -> list[Scored]:
        self.prepared_chunks()
        index = self._index
        vocab = index.vocab_dict
        out: list[Scored] = []
        for tokens in self._tokenize(queries):
            ids = [vocab[t] for t in tokens if t in vocab and t != ""]
            if not ids:
                out.append([])
                continue
            out.append(top_k(index.get_scores_from_ids(ids), k, positive_only=True))
        return out


def _bm25s() -> Any:
    """``bm25s``, with its logger (set to DEBUG on import) quietened to warnings."""
    import bm25s

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return bm25s


def _quiet(method: Any) -> dict[str, Any]:
    """``show_progress=False`` where the bm25s method takes it (save/load: 0.3.10 and later)."""
    return (
        {"show_progress": False} if "show_progress" in inspect.signature(method).parameters else {}
    )


def _make_stemmer(language: str | None) -> Any:
    if language is None:
        return None
    if not isinstance(language, str) or not language:
        raise ConfigError(
            f"retriever.stemmer: expected a Snowball language or null, got {language!r}"
        )
    require_extra(["Stemmer"], f"retriever.stemmer={language}", "stem")
    import Stemmer

    try:
        return Stemmer.Stemmer(language)
    except KeyError:
        from harness.core.errors import closest

        names = Stemmer.algorithms()
        raise ConfigError(
            f"retriever.stemmer: unknown language {language!r}{closest(language, names)}; "
            f"choose one of {', '.join(names)}"
        ) from None


def _check_stopwords(stopwords: Any) -> Any:
    if stopwords is None or stopwords is False:
        return None
    if isinstance(stopwords, (list, tuple)):
        if not all(isinstance(w, str) for w in stopwords):
            raise ConfigError("retriever.stopwords: expected a list of words")
        return [w.lower() for w in stopwords]
    import bm25s

    try:
        bm25s.tokenize(["probe"], stopwords=stopwords, show_progress=False)
    except (ValueError, TypeError):
        raise ConfigError(
            f"retriever.stopwords: unknown stopword list {stopwords!r}; give a language code "
            "(en, de, fr, es, ...), a list of words, or null"
        ) from None
    return stopwords
