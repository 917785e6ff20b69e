"""One endpoint's pacing budget, shared by the transports that send to it: two judged
variants of one run draw on one limit, one queue of waiting requests and one view of the
server's rate limits, as they share its capacity (issue 34)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

from harness.judges.transport.pacing import Pacer


@dataclass(slots=True)
class Budget:
    """The pacer of a transport's requests, made by ``make`` at the first request (by then
    the preflight may know the server's slots).

    Args:
        make: Builds the pacer from the first transport's settings, counting into its stats.
        key: What must be equal for two transports to share one budget.
    """

    make: Callable[[], Pacer]
    key: Hashable
    pacer: Pacer | None = None

    def get(self) -> Pacer:
        """The pacer, made on first use."""
        if self.pacer is None:
            self.pacer = self.make()
        return self.pacer

    def admits(self, other: Budget) -> bool:
        """Whether ``other``'s transport may draw on this budget instead of its own: the
        same key, and no request sent under its own yet."""
        return other is self or (other.pacer is None and other.key == self.key)
