"""The part the adapters share (``retriever=langchain``, ``retriever=llamaindex``): a
trusted factory of yours builds a library's retriever, which answers the questions."""

from __future__ import annotations

import contextlib
import inspect
import time
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from harness.core.errors import ConfigError
from harness.core.resolve import user_code
from harness.core.trust import check_trusted, trusted_callable
from harness.core.types import Corpus, Hit
from harness.core.validation import check_arguments, check_value
from harness.retrievers.extras import require_extra
from harness.retrievers.search import SearchRetriever
from harness.retrievers.topk import Count


class FactoryRetriever(SearchRetriever):
    """A retriever from another library, built by the user's factory; subclasses say which
    library (``kind``, ``extra``, ``modules``) and implement ``documents``, ``accept`` and
    ``ask``.

    Args:
        factory: Import path of your function (or class) returning the library's
            retriever, e.g. ``mypkg.search.make_retriever``; it must be trusted.
        kwargs: Keyword arguments for the factory (checked against its signature).
        id_key: The metadata key holding the document id of a hit.
        top_k: Keep only the first k hits of each query (``null``: all the retriever
            returns; its own setting, e.g. ``k``, decides how many that is).
        max_concurrency: Queries of a batch in flight at once.
    """

    kind: str = ""
    extra: str = ""
    modules: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """How lines name this retriever: by the user's factory (``langchain factory
        mypkg.search.make``)."""
        return f"{self.kind} factory {self.factory}"

    def __init__(
        self,
        factory: str,
        kwargs: dict[str, Any] | None = None,
        id_key: str = "id",
        top_k: Count | None = None,
        max_concurrency: Count = 8,
    ) -> None:
        check_trusted("retriever.factory", factory)  # before anything is imported
        require_extra(self.modules, f"retriever={self.kind}", self.extra)
        super().__init__(top_k)
        if not isinstance(id_key, str) or not id_key:
            raise ConfigError(f"retriever.id_key: expected a metadata key, got {id_key!r}")
        if kwargs is not None and not isinstance(kwargs, Mapping):
            raise ConfigError(f"retriever.kwargs: expected a mapping, got {kwargs!r}")
        check_value("retriever.max_concurrency", Count, max_concurrency)
        self.factory, self.id_key, self.max_concurrency = factory, id_key, max_concurrency
        self.kwargs = dict(kwargs or {})
        self._factory = trusted_callable("retriever.factory", factory)
        try:
            params = dict(inspect.signature(self._factory).parameters)
        except (TypeError, ValueError):
            params = {}  # a callable without a signature: passed kwargs only
        documents = params.get("documents")
        self.takes_documents = documents is not None
        if "documents" in self.kwargs and self.takes_documents:
            raise ConfigError(
                "retriever.kwargs.documents: the harness passes the dataset's corpus as "
                "documents; remove it from retriever.kwargs"
            )
        if params:
            # annotations that do not resolve here (NameError): the call itself checks
            with contextlib.suppress(NameError):
                check_arguments("retriever.kwargs", self._factory, self.kwargs)
        required = [
            name
            for name, p in params.items()
            if p.default is p.empty
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            and name != "documents"
            and name not in self.kwargs
        ]
        if required:
            raise ConfigError(
                f"retriever.kwargs: {factory} needs {', '.join(required)}; set "
                f"retriever.kwargs.{required[0]}=..."
            )
        self.needs_corpus = documents is not None and documents.default is documents.empty
        self.retriever: Any = None
        self.index_info: dict[str, Any] = {}

    def prepare(self, corpus: Corpus | None) -> None:
        """Call the factory (with the corpus as ``documents`` when it takes them).

        Raises:
            ConfigError: The factory needs documents and the dataset has none, or it
                returned something that is not a retriever of the library.
        """
        if corpus is None and self.needs_corpus:
            raise ConfigError(
                f"retriever.factory: {self.factory} needs documents, but the dataset has no "
                "corpus; use a BEIR dataset (dataset=beir dataset.path=DIR) or give "
                "documents a default"
            )
        args = dict(self.kwargs)
        if corpus is not None and self.takes_documents:
            args["documents"] = self.documents(corpus)
        start = time.perf_counter()
        with user_code("retriever.factory", f"calling {self.factory}"):
            built = self._factory(**args)
        seconds = round(time.perf_counter() - start, 3)
        self.retriever = self.accept(built)
        self.index_info = {"source": "built", "seconds": seconds}

    def search(self, queries: Sequence[str]) -> list[list[Hit]]:
        """Ask the built retriever; ``RuntimeError`` before ``prepare``."""
        if self.retriever is None:
            raise RuntimeError(f"retriever ({self.kind}): call prepare(corpus) before retrieving")
        return self.ask(list(queries))

    @abstractmethod
    def documents(self, corpus: Corpus) -> list[Any]:
        """The corpus as the library's documents."""

    @abstractmethod
    def accept(self, built: Any) -> Any:
        """``built`` if it is a retriever of the library, else a one-line ``ConfigError``."""

    @abstractmethod
    def ask(self, queries: list[str]) -> list[list[Hit]]:
        """Each query's hits, best first."""

    def hit_id(self, metadata: Any, fallbacks: Sequence[Any], query: int) -> str:
        """``metadata[id_key]``, else the first fallback id that is set, as a string."""
        candidates = [metadata.get(self.id_key) if isinstance(metadata, Mapping) else None]
        for value in [*candidates, *fallbacks]:
            if isinstance(value, str) and value:
                return value
            if isinstance(value, int) and not isinstance(value, bool):
                return str(value)
        raise ConfigError(
            f"retriever.id_key: a hit of query {query} has no metadata[{self.id_key!r}] and no "
            f"id; put your document ids in metadata[{self.id_key!r}] or set retriever.id_key "
            "to the metadata key that holds them"
        )

    def refuse(self, built: Any, expected: str, hint: str) -> ConfigError:
        """The error for a factory that returned the wrong thing."""
        what = type(built)
        return ConfigError(
            f"retriever.factory: {self.factory} returned {what.__module__}.{what.__qualname__}, "
            f"expected {expected}{hint}"
        )

    def wrong_answer(self, got: Any, expected: str) -> ConfigError:
        """The error for an answer of the built retriever that is not what it should be."""
        return ConfigError(
            f"retriever.factory: the retriever {self.factory} built answered "
            f"{type(got).__name__}, expected {expected}"
        )

    def describe(self) -> dict[str, Any]:
        """Settings, the built retriever's class and the build time."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "factory": self.factory,
            "kwargs": dict(self.kwargs),
            "id_key": self.id_key,
            "top_k": self.top_k,
            "max_concurrency": self.max_concurrency,
        }
        if self.retriever is not None:
            cls = type(self.retriever)
            out["retriever"] = f"{cls.__module__}.{cls.__qualname__}"
            out["index"] = dict(self.index_info)
        return out
