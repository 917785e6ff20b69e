"""Reading what components describe about themselves (``describe()``): their indexes' build
time and size, and their own numbers (``metrics``), at any depth (a hybrid's parts)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


def index_facts(described: Mapping[str, Any]) -> tuple[float | None, int | None]:
    """Build seconds and bytes summed over every ``index`` mapping in ``described``."""
    build: float | None = None
    size: int | None = None
    for index in _indexes(described):
        seconds = index.get("build_seconds", index.get("seconds"))
        if isinstance(seconds, (int, float)) and not isinstance(seconds, bool):
            build = (build or 0.0) + float(seconds)
        nbytes = index.get("bytes")
        if isinstance(nbytes, int) and not isinstance(nbytes, bool):
            size = (size or 0) + nbytes
    return build, size


def _indexes(node: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "index" and isinstance(value, Mapping):
                yield value
            else:
                yield from _indexes(value)
    elif isinstance(node, list):
        for value in node:
            yield from _indexes(value)


def retriever_metrics(described: Mapping[str, Any]) -> dict[str, float]:
    """The retriever's own numbers (``describe()["metrics"]``) as ``retriever/<name>``; a
    part's (a hybrid's dense part, a rerank stage) as ``retriever/<kind>/<name>``."""
    out: dict[str, float] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, list):
            for value in node:
                walk(value, prefix)
            return
        if not isinstance(node, Mapping):
            return
        if node is not described and isinstance(node.get("kind"), str):
            prefix = f"retriever/{node['kind']}/"
        found = node.get("metrics")
        if isinstance(found, Mapping):
            for k, v in found.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    out[f"{prefix}{k}"] = float(v)
        for key, value in node.items():
            if key != "metrics":
                walk(value, prefix)

    walk(described, "retriever/")
    return out
