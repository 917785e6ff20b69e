"""Text helpers shared by outputs and messages."""

from __future__ import annotations


def clip(text: str, limit: int | None) -> str:
    """``text`` cut to ``limit`` characters, with ``…`` where it was cut (``None``: whole)."""
    return text if limit is None or len(text) <= limit else text[:limit] + "…"
