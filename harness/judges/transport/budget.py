"""One endpoint's pacing budget, shared by the transports that send to it: two judged
variants of one run draw on one limit, one queue of waiting requests (in ``turns`` order) and
one view of the server's rate limits, as they share its capacity; the endpoint is
checked once for all of them, and they send through one HTTP client (one connection pool)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

from harness.judges.transport.pacing import Pacer

T = TypeVar("T")


@dataclass(slots=True)
class Budget:
    """The pacer of a transport's requests, made by ``make`` at the first request (by then
    the preflight may know the server's slots).

    Args:
        make: Builds the pacer from the first transport's settings, counting into its stats.
        key: What must be equal for two transports to share one budget.
        checked: The transport whose preflight checked the endpoint, and what it found
            (``check``).
        http: The HTTP client of the transports drawing on it, and how many use it.
    """

    make: Callable[[], Pacer]
    key: Hashable
    pacer: Pacer | None = None
    checked: tuple[object, Any] | None = None
    http: tuple[Any, int] | None = None

    def get(self) -> Pacer:
        """The pacer, made on first use."""
        if self.pacer is None:
            self.pacer = self.make()
        return self.pacer

    def admits(self, other: Budget) -> bool:
        """Whether ``other``'s transport may draw on this budget instead of its own: the
        same key, and no request sent under its own yet."""
        return other is self or (other.pacer is None and other.key == self.key)

    async def check(self, by: object, ask: Callable[[], Awaitable[T]]) -> T:
        """What ``ask`` (a preflight of the endpoint) finds, asked once for every transport
        drawing on this budget (the key holds the endpoint's address, model and credentials);
        ``by``: the transport asking (its own second preflight asks again)."""
        if self.checked is None or self.checked[0] is by:
            self.checked = (by, await ask())
        found: T = self.checked[1]
        return found

    def client(self, make: Callable[[], T]) -> T:
        """The HTTP client of the transports drawing on this budget (the key holds what they
        send with: address, credentials, time-out), made by ``make`` for the first; each
        user says ``done_with`` it once."""
        client: T = make() if self.http is None else self.http[0]
        self.http = (client, 1 if self.http is None else self.http[1] + 1)
        return client

    def done_with(self, client: object) -> bool:
        """A transport no longer uses ``client``: whether it should close it now (no other
        user left, or a client this budget did not hand out)."""
        if self.http is None or self.http[0] is not client:
            return True
        users = self.http[1] - 1
        self.http = None if users == 0 else (client, users)
        return users == 0
