"""A LangChain retriever in a run (``retriever=langchain``): your factory builds it.

Needs the ``langchain`` extra (``pip install -e '.[langchain]'``: langchain-core). Write a
function that returns a LangChain ``BaseRetriever`` (or any runnable whose ``batch``
answers each query with ``Document``\\ s)::

    # mypkg/search.py
    def make_retriever(documents, k=10):
        store = InMemoryVectorStore(MyEmbeddings())
        store.add_documents(documents)
        return store.as_retriever(search_kwargs={"k": k})

and name it: ``python -m harness retriever=langchain retriever.factory=mypkg.search.make_retriever
'retriever.kwargs={k: 5}'``, with ``mypkg.*`` in your trust setting (``trusted_targets`` or
``HARNESS_TRUSTED_TARGETS``). When the factory has a ``documents`` parameter and the dataset
has a corpus, it gets the corpus as ``Document(page_content=title + text, metadata={"id",
"title"}, id=doc id)``. The questions of a batch go through ``retriever.batch`` (LangChain
runs them concurrently, in order); a hit's id is ``metadata[id_key]``, else ``Document.id``.

Importing this module imports no LangChain code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.core.types import Corpus, Hit
from harness.retrievers.adapters.factory import FactoryRetriever

#: Metadata keys read as a hit's score, in this order.
SCORE_KEYS = ("score", "relevance_score", "similarity_score")


def metadata_score(metadata: Any) -> float | None:
    """The first number among ``SCORE_KEYS`` in ``metadata``, else ``None``."""
    if isinstance(metadata, Mapping):
        for key in SCORE_KEYS:
            value = metadata.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
    return None


class LangChain(FactoryRetriever):
    """A LangChain ``BaseRetriever`` built by your factory (``retriever=langchain``).

    Args:
        factory: Import path of your function returning a LangChain retriever, e.g.
            ``mypkg.search.make_retriever`` (``vectorstore.as_retriever(...)``); it must
            be trusted (``trusted_targets`` / ``HARNESS_TRUSTED_TARGETS``).
        kwargs: Keyword arguments for the factory.
        id_key: The ``Document.metadata`` key holding the document id (else ``Document.id``).
        top_k: Keep only the first k hits of each query (``null``: all it returns).
        max_concurrency: Queries ``batch`` runs at once.
    """

    kind = "langchain"
    extra = "langchain"
    modules = ("langchain_core",)

    def documents(self, corpus: Corpus) -> list[Any]:
        from langchain_core.documents import Document

        return [
            Document(page_content=d.content, metadata={"id": d.id, "title": d.title}, id=d.id)
            for d in corpus.documents
        ]

    def accept(self, built: Any) -> Any:
        if callable(getattr(built, "batch", None)):
            return built
        hint = (
            " (it looks like a vector store: return store.as_retriever())"
            if callable(getattr(built, "as_retriever", None))
            else ""
        )
        raise self.refuse(built, "a LangChain BaseRetriever (a runnable with batch)", hint)

    def ask(self, queries: list[str]) -> list[list[Hit]]:
        answers = self.retriever.batch(queries, config={"max_concurrency": self.max_concurrency})
        if not isinstance(answers, list) or len(answers) != len(queries):
            raise self.wrong_answer(answers, "one list of Documents per query")
        out = []
        for n, docs in enumerate(answers):
            if not isinstance(docs, list):
                raise self.wrong_answer(docs, f"a list of Documents for query {n}")
            hits = []
            for doc in docs:
                text = getattr(doc, "page_content", None)
                if not isinstance(text, str):
                    raise self.wrong_answer(doc, f"a Document for query {n}")
                meta = getattr(doc, "metadata", None)
                doc_id = self.hit_id(meta, [getattr(doc, "id", None)], n)
                hits.append(Hit(doc_id, text, metadata_score(meta)))
            out.append(hits)
        return out
