"""Evenly spaced samples of a stream whose length is not known in advance."""

from __future__ import annotations

from typing import Generic, TypeVar

T = TypeVar("T")


class Evenly(Generic[T]):
    """Keeps every ``stride``-th item of a stream, at most ``2 * n`` of them: when full, every
    other kept item is dropped and the stride doubles, so what is kept always spans the
    whole stream evenly. ``pick()`` returns ``n`` of them (all, when fewer were seen)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.stride = 1
        self.seen = 0
        self.items: list[tuple[int, T]] = []

    def wants(self) -> bool:
        """Whether the next item will be kept (so the caller can skip building it)."""
        return self.n > 0 and self.seen % self.stride == 0

    def add(self, item: T | None, at: int | None = None) -> None:
        """Count the next item of the stream; keep it, with its position ``at`` (default:
        its position in this stream), if ``wants()`` said so."""
        if item is not None and self.wants():
            self.items.append((self.seen if at is None else at, item))
            if len(self.items) >= 2 * self.n:
                self.items = self.items[::2]
                self.stride *= 2
        self.seen += 1

    def pick(self) -> list[tuple[int, T]]:
        """At most ``n`` kept items, evenly spaced, with their positions."""
        kept = self.items
        if len(kept) <= self.n:
            return list(kept)
        return [kept[i * len(kept) // self.n] for i in range(self.n)]
