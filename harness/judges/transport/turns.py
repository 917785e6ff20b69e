"""Which waiting request an endpoint's pacer lets go first.

Requests that wait for a permit are served *critical path first*: a request after which its
sample still makes more judge calls, one after the other, goes before one after which it
makes fewer (contextual precision's verdicts, whose explanation follows, before a pointwise
variant's verdicts); then the earlier sample (a row is written once every variant has scored
it, and a sample's requests, which share all but their chunk, go out one after the other, so
a provider's prefix cache serves what they share); then the earlier request. Two variants
judged at once thus finish about when the slower alone would: the second call of a chain no
longer waits for a whole round of the other's.

The metric says it (``turn``) around a call, and the pacer reads it when the call asks for a
permit: a ``contextvars`` variable, which follows the call through the judge, its verdict
cache and its retries without a parameter on each. Outside ``turn`` every request is equal:
first come, first served.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

#: ``(-calls after it, sample)`` of the request being made; ``(0, 0)`` when none was said.
_TURN: contextvars.ContextVar[tuple[int, int]] = contextvars.ContextVar(
    "harness_judge_turn", default=(0, 0))


def current() -> tuple[int, int]:
    """The order key of the request being made (smaller goes first)."""
    return _TURN.get()


@contextlib.contextmanager
def turn(after: int = 0, sample: int | None = None) -> Iterator[None]:
    """Requests made inside: ``after`` more calls of their sample follow, one after the other;
    ``sample``: the sample's place in its batch (``None``: as said around this)."""
    place = _TURN.get()[1] if sample is None else sample
    token = _TURN.set((-after, place))
    try:
        yield
    finally:
        _TURN.reset(token)
