"""``retriever=dense``: a bi-encoder (``encoder``) and its exact or FAISS index (``ann``);
``retriever``: the component."""

from harness.retrievers.dense.retriever import Dense

__all__ = ["Dense"]
