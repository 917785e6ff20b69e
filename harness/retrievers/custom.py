"""Users' own retrievers (``retriever=custom``): what a trusted ``_target_`` may build.

A user's class or factory (admitted by ``trusted_targets``) builds either

- a ``harness.core.protocols.Retriever`` (public API v1: ``needs_corpus``, ``prepare``,
  ``retrieve_batch``, ``describe``), e.g. a ``SearchRetriever`` subclass; or
- any object with ``search(queries) -> list[list[Hit]]`` (and, optionally, ``index(corpus)``,
  ``needs_corpus``, ``top_k`` and ``describe()``): it is wrapped in a ``SearchRetriever``.

Anything else stops the run before any work, with one line naming what is missing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from harness.core.errors import ConfigError
from harness.core.protocols import Retriever
from harness.core.types import Corpus, Hit
from harness.retrievers.search import SearchRetriever

#: The members of the ``Retriever`` protocol (public API v1).
MEMBERS = ("needs_corpus", "prepare", "retrieve_batch", "describe")


def conforming(built: Any, target: str) -> Retriever:
    """``built`` as a ``Retriever``; a ``ConfigError`` naming ``target`` when it is none."""
    missing = [m for m in MEMBERS if not hasattr(built, m)]
    if not missing and all(callable(getattr(built, m)) for m in MEMBERS[1:]):
        if not isinstance(built.needs_corpus, bool):
            raise ConfigError(
                f"retriever._target_: {target} made an object whose needs_corpus is "
                f"{built.needs_corpus!r}; expected True or False"
            )
        if not isinstance(getattr(built, "searches", True), bool):
            raise ConfigError(
                f"retriever._target_: {target} made an object whose searches is "
                f"{built.searches!r}; expected True or False"
            )
        if not hasattr(built, "searches"):  # declared by the class, else it searches
            built.searches = True
        retriever: Retriever = built
        return retriever
    if callable(getattr(built, "search", None)):
        return Searcher(built)
    raise ConfigError(
        f"retriever._target_: {target} made a {type(built).__name__}, which is not a "
        f"retriever: it lacks {', '.join(missing)} (harness.core.protocols.Retriever, API v1) and "
        "has no search(queries) method; subclass harness.retrievers.search.SearchRetriever"
    )


class Searcher(SearchRetriever):
    """A user's object with ``search(queries)`` as a ``SearchRetriever``."""

    def __init__(self, inner: Any) -> None:
        top_k = getattr(inner, "top_k", None)
        super().__init__(top_k if isinstance(top_k, int) and not isinstance(top_k, bool)
                         and top_k >= 1 else None)
        self.inner = inner
        self.needs_corpus = bool(getattr(inner, "needs_corpus", False))

    def search(self, queries: Sequence[str]) -> list[list[Hit]]:
        found: list[list[Hit]] = self.inner.search(queries)
        return found

    def index(self, corpus: Corpus) -> None:
        if callable(getattr(self.inner, "index", None)):
            self.inner.index(corpus)

    def name(self) -> str:
        cls = type(self.inner)
        return f"{cls.__module__}.{cls.__qualname__}"

    def describe(self) -> dict[str, Any]:
        own = self.inner.describe() if callable(getattr(self.inner, "describe", None)) else {}
        return {**super().describe(), **(own if isinstance(own, dict) else {})}
