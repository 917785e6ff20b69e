"""``retriever=chroma``: a Chroma vector database server (``client``: its HTTP API;
``retriever``: the component)."""

from harness.retrievers.chroma.retriever import Chroma

__all__ = ["Chroma"]
