"""A LlamaIndex retriever in a run (``retriever=llamaindex``): your factory builds it.

Needs the ``llamaindex`` extra (``pip install -e '.[llamaindex]'``: llama-index-core). Write
a function that returns a LlamaIndex ``BaseRetriever``::

    # mypkg/search.py
    def make_retriever(documents, k=10):
        index = VectorStoreIndex(documents, embed_model=MyEmbedding())
        return index.as_retriever(similarity_top_k=k)

and name it: ``python -m harness retriever=llamaindex
retriever.factory=mypkg.search.make_retriever``, with ``mypkg.*`` in your trust setting.
When the factory has a ``documents`` parameter and the dataset has a corpus, it gets the
corpus as ``Document(text=title + text, id_=doc id, metadata={"id", "title"})``, with the
metadata kept out of what is embedded and shown to an LLM (the text holds the title).
The questions of a batch go through ``aretrieve`` concurrently (``max_concurrency`` at a
time; 1: ``retrieve`` one by one). A hit's id is ``node.metadata[id_key]``, else
``node.ref_doc_id``, else ``node.node_id``; its score is ``NodeWithScore.score``.

Importing this module imports no LlamaIndex code.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Coroutine
from typing import Any

from harness.core.aio import LoopThread
from harness.core.types import Corpus, Hit
from harness.retrievers.adapters.factory import FactoryRetriever

#: Metadata keys kept out of embeddings and LLM prompts (the text already holds the title).
_HIDDEN = ["id", "title"]


class LlamaIndex(FactoryRetriever):
    """A LlamaIndex ``BaseRetriever`` built by your factory (``retriever=llamaindex``).

    Args:
        factory: Import path of your function returning a LlamaIndex retriever, e.g.
            ``mypkg.search.make_retriever`` (``index.as_retriever(similarity_top_k=10)``);
            it must be trusted (``trusted_targets`` / ``HARNESS_TRUSTED_TARGETS``).
        kwargs: Keyword arguments for the factory.
        id_key: The node metadata key holding the document id (else ``ref_doc_id``, then
            ``node_id``).
        top_k: Keep only the first k hits of each query (``null``: all it returns).
        max_concurrency: Queries in flight at once through ``aretrieve`` (1: ``retrieve``
            one query at a time).
    """

    kind = "llamaindex"
    extra = "llamaindex"
    modules = ("llama_index.core",)

    _loop: LoopThread | None = None

    def documents(self, corpus: Corpus) -> list[Any]:
        from llama_index.core import Document

        return [
            Document(
                text=d.content,
                id_=d.id,
                metadata={"id": d.id, "title": d.title},
                excluded_embed_metadata_keys=list(_HIDDEN),
                excluded_llm_metadata_keys=list(_HIDDEN),
            )
            for d in corpus.documents
        ]

    def accept(self, built: Any) -> Any:
        if callable(getattr(built, "retrieve", None)):
            return built
        hint = (
            " (it looks like an index: return index.as_retriever(similarity_top_k=10))"
            if callable(getattr(built, "as_retriever", None))
            else ""
        )
        raise self.refuse(built, "a LlamaIndex BaseRetriever (with retrieve)", hint)

    def ask(self, queries: list[str]) -> list[list[Hit]]:
        retriever = self.retriever
        if self.max_concurrency > 1 and callable(getattr(retriever, "aretrieve", None)):
            answers = self._run(self._gather(queries))
        else:
            answers = [retriever.retrieve(q) for q in queries]
        return [self._hits(nodes, n) for n, nodes in enumerate(answers)]

    async def _gather(self, queries: list[str]) -> list[Any]:
        gate = asyncio.Semaphore(self.max_concurrency)

        async def one(query: str) -> Any:
            async with gate:
                return await self.retriever.aretrieve(query)

        return list(await asyncio.gather(*(one(q) for q in queries)))

    def _run(self, coro: Coroutine[Any, Any, list[Any]]) -> list[Any]:
        """Run on one long-lived loop (clients a retriever binds to it stay valid)."""
        if self._loop is None:
            self._loop = LoopThread()
            weakref.finalize(self, self._loop.close)
        return self._loop.run(coro)

    def _hits(self, nodes: Any, query: int) -> list[Hit]:
        if not isinstance(nodes, list):
            raise self.wrong_answer(nodes, f"a list of NodeWithScore for query {query}")
        hits = []
        for item in nodes:
            node = getattr(item, "node", None)
            if node is None or not callable(getattr(node, "get_content", None)):
                raise self.wrong_answer(item, f"a NodeWithScore for query {query}")
            text = node.get_content()
            doc_id = self.hit_id(
                getattr(node, "metadata", None),
                [getattr(node, "ref_doc_id", None), getattr(node, "node_id", None)],
                query,
            )
            score = getattr(item, "score", None)
            hits.append(
                Hit(doc_id, str(text), float(score) if isinstance(score, (int, float)) else None)
            )
        return hits
