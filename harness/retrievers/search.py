"""Your own retriever: subclass ``SearchRetriever`` and write ``search`` (public API v1).

``SearchRetriever`` implements the ``harness.core.protocols.Retriever`` protocol (version
``harness.core.protocols.API_VERSION``) around one method of yours::

    from collections.abc import Sequence

    from harness.retrievers.search import SearchRetriever
    from harness.core.types import Corpus, Hit


    class MyService(SearchRetriever):  # asks our search service
        def __init__(self, url: str, top_k: int | None = 10) -> None:
            super().__init__(top_k)
            self.url = url

        def search(self, queries: Sequence[str]) -> list[list[Hit]]:
            return [
                [Hit(id=d["id"], text=d["text"], score=d["score"]) for d in ask(self.url, q)]
                for q in queries
            ]

A retriever that indexes the dataset's corpus itself also writes ``index`` and sets
``needs_corpus = True``::

    class Grep(SearchRetriever):
        needs_corpus = True

        def index(self, corpus: Corpus) -> None:
            self.documents = list(corpus.documents)

        def search(self, queries: Sequence[str]) -> list[list[Hit]]:
            return [
                [Hit(d.id, d.content) for d in self.documents if q.lower() in d.content.lower()]
                for q in queries
            ]

What the harness does with it, per batch of samples (``retrieve_batch``): the questions
(``user_input``) of the samples that have one go to ``search`` in one call, in sample
order; each sample's ``retrieved_contexts`` become its hits' ``text`` and
``retrieved_context_ids`` its hits' ``id``, best first, cut to the first ``top_k`` hits.
A sample without a question (missing or blank) is not searched and gets an empty
retrieval. The other fields of a sample are kept.

The ids are what the id-based metrics compare with the reference ids (the BEIR qrels'
document ids), so return document ids; the text is what a judge or the string metric
reads.

A run uses it as its ``retriever``: name the class with ``_target_`` in a ``retriever``
config, its settings beside it (they are checked against your ``__init__``), e.g.
``conf/retriever/my_service.yaml``::

    _target_: my_package.MyService
    url: http://localhost:8080
    top_k: 10

Only trusted code is imported: harness's own components (those its ``conf/`` names, see
``harness.core.trust.component_targets``) and what ``trusted_targets`` admits, in the config or
in ``$HARNESS_TRUSTED_TARGETS`` (e.g. ``trusted_targets=[my_package.*]``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Annotated, Any

from harness.core.boundary import check_hits, guarded
from harness.core.errors import ConfigError
from harness.core.types import Corpus, Hit, RagSample
from harness.core.validation import Range
from harness.retrievers.fill import check_optional_top_k, fill_samples


class SearchRetriever(ABC):
    """Base class of a user's retriever: implement ``search`` (and maybe ``index``).

    Args:
        top_k: Keep only the first k hits of each query (``None``: all that ``search``
            returns). A subclass with its own ``__init__`` passes it on with
            ``super().__init__(top_k)``.

    Attributes:
        needs_corpus: Set it to ``True`` in your class when ``index`` needs the dataset's
            corpus: a run on a dataset without one then stops before any work, with one
            line saying so. ``False`` (the default): ``index`` is called only when the
            dataset has a corpus.
        top_k: See Args.
    """

    needs_corpus: bool = False
    searches: bool = True

    def __init__(self, top_k: Annotated[int, Range(ge=1)] | None = None) -> None:
        self.top_k = check_optional_top_k(top_k)

    @abstractmethod
    def search(self, queries: Sequence[str]) -> list[list[Hit]]:
        """For each query, in order, its hits, best first (an empty list: no hits).

        Called once per batch with the questions of the batch's samples (never with an
        empty list). Return exactly one list per query. Each hit's ``id`` is the id the
        metrics compare with the reference ids (a document id, a ``str``); its ``text``
        is what a reader sees; its ``score`` is yours to fill or leave ``None`` (the
        order of the list is the ranking).
        """

    def index(self, corpus: Corpus) -> None:
        """Index the dataset's documents (``corpus.documents``), once, before ``search``.

        ``corpus.key`` changes whenever the documents do: use it to name a cached index.
        The default does nothing.
        """
        return None

    def prepare(self, corpus: Corpus | None) -> None:
        """Call ``index`` with the dataset's corpus, when there is one.

        Raises:
            ConfigError: ``needs_corpus`` is set and ``corpus`` is ``None``.
        """
        if corpus is None:
            if self.needs_corpus:
                raise ConfigError(
                    f"retriever ({self.name()}): needs a corpus to index, but the dataset "
                    "has none; give your documents with dataset.corpus=FILE, or use a BEIR "
                    "dataset (dataset=beir dataset.path=DIR)"
                )
            return
        guarded(f"retriever {self.label}", "index()", lambda: self.index(corpus))

    def retrieve_batch(self, samples: Sequence[RagSample]) -> list[RagSample]:
        """The samples, in order, with ``retrieved_contexts`` / ``retrieved_context_ids``
        filled from ``search`` (see the module's docstring)."""
        return fill_samples(samples, self._checked_search, self.top_k)

    def describe(self) -> dict[str, Any]:
        """``kind`` (the class's import path) and ``top_k``; extend it with your settings
        (``{**super().describe(), "url": self.url}``), never with secrets."""
        return {"kind": self.name(), "top_k": self.top_k}

    def name(self) -> str:
        """The class's import path, e.g. ``my_package.retrievers.MyService``."""
        cls = type(self)
        return f"{cls.__module__}.{cls.__qualname__}"

    @property
    def label(self) -> str:
        """How lines name this retriever: its class's import path (``name()``)."""
        return self.name()

    def _checked_search(self, queries: list[str]) -> list[list[Hit]]:
        """``search`` behind the boundary of users' code (``harness.core.boundary``):
        what it raises is one line naming this retriever, and its answer is checked, so a
        mistake is named here, not in a metric or the row writer."""
        component = f"retriever {self.label}"
        results = guarded(component, "search()", lambda: self.search(queries), mid_run=True)
        check_hits(component, results, len(queries))
        return results
