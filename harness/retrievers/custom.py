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

from harness.core.capabilities import Role, conform, lacking
from harness.core.errors import ConfigError
from harness.core.protocols import RETRIEVER, Retriever
from harness.core.types import Corpus, Hit
from harness.retrievers.search import SearchRetriever

#: What a user's object needs to be wrapped as a retriever: ``search(queries)``; the rest
#: is optional (``index(corpus)``, ``needs_corpus``, ``top_k``, ``describe()``).
SEARCH = Role("search object", "an object with search(queries)", ("search",),
              frozenset({"search"}), {"index": lambda part: None,
                                      "needs_corpus": lambda part: False,
                                      "top_k": lambda part: None,
                                      "describe": lambda part: None})


def conforming(built: Any, target: str) -> Retriever:
    """``built`` as a ``Retriever`` (checked against its role once: ``conform``), or a
    ``Searcher`` around an object with ``search(queries)``; a ``ConfigError`` naming
    ``target`` when it is neither."""
    who = f"retriever._target_: {target} made a {type(built).__name__}, which"
    missing = lacking(built, RETRIEVER)
    if missing:
        if not lacking(built, SEARCH):
            return Searcher(conform(built, SEARCH, f"retriever {target}"))
        raise ConfigError(
            f"{who} is not a retriever: it lacks {', '.join(missing)} "
            "(harness.core.protocols.Retriever, API v1) and has no search(queries) method; "
            "subclass harness.retrievers.search.SearchRetriever")
    retriever: Retriever = conform(built, RETRIEVER, f"retriever {target}")
    for name, value in (("needs_corpus", retriever.needs_corpus),
                        ("searches", retriever.searches)):
        if not isinstance(value, bool):
            raise ConfigError(f"{who} has {name} {value!r}; expected True or False")
    return retriever


class Searcher(SearchRetriever):
    """A user's object with ``search(queries)`` (checked against ``SEARCH``) as a
    ``SearchRetriever``."""

    def __init__(self, inner: Any) -> None:
        top_k = inner.top_k
        super().__init__(top_k if isinstance(top_k, int) and not isinstance(top_k, bool)
                         and top_k >= 1 else None)
        self.inner = inner
        self.needs_corpus = bool(inner.needs_corpus)

    def search(self, queries: Sequence[str]) -> list[list[Hit]]:
        found: list[list[Hit]] = self.inner.search(queries)
        return found

    def index(self, corpus: Corpus) -> None:
        if callable(self.inner.index):
            self.inner.index(corpus)

    def name(self) -> str:
        cls = type(self.inner)
        return f"{cls.__module__}.{cls.__qualname__}"

    def describe(self) -> dict[str, Any]:
        own = self.inner.describe() if callable(self.inner.describe) else {}
        return {**super().describe(), **(own if isinstance(own, dict) else {})}
