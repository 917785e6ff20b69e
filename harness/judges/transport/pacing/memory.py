"""The limit each endpoint reached, for the rest of the process: sweep jobs and repeated
``harness.evaluate`` calls start where the last pacer with the same key left off."""

from __future__ import annotations

_LEARNED: dict[str, float] = {}


def recall(key: str | None) -> float | None:
    """The limit a pacer with this memory key last reached in this process."""
    return None if key is None else _LEARNED.get(key)


def remember(key: str, limit: float) -> None:
    """Note the limit a pacer with this key reached."""
    _LEARNED[key] = limit


def forget() -> None:
    """Forget every learned limit (the next pacers start cold)."""
    _LEARNED.clear()
