"""Retrievers of other libraries: ``factory`` (a trusted factory builds them), ``langchain``,
``llamaindex``."""
