"""Which waiting request an endpoint's pacer lets go first.

Requests that wait for a permit are served *earlier sample first*: a row is written once
every variant has scored its sample, in input order, so serving samples in order puts rows
into ``samples.jsonl.partial`` as they are judged (an interrupted run keeps them), where
serving one kind of call for the whole batch first would leave no sample finished until
late in the batch. Within a sample, *critical path first*: a request after which the sample
still makes more judge calls, one after the other, goes before one after which it makes
fewer (contextual precision's verdicts, whose explanation follows, before a pointwise
variant's verdicts); then the earlier request. The second call of a chain thus goes before
any later sample's calls, and two variants judged at once still finish about when the
slower alone would (one round trip more per batch, the last sample's second call).

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
    """The order key of the request being made, ``(sample, -calls after it)``: smaller
    goes first."""
    after, place = _TURN.get()
    return place, after


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
