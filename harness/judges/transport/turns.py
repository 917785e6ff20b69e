"""Which waiting request an endpoint's pacer lets go first.

Requests that wait for a permit are served *earlier sample first*: a row is written once
every variant has scored its sample, in input order, so serving samples in order puts rows
into ``samples.jsonl.partial`` as they are judged (an interrupted run keeps them), where
serving one kind of call for the whole batch first would leave no sample finished until late
in the batch; a sample's requests, which share all but their chunk, go out one after the
other, so a provider's prefix cache serves what they share. The *critical path* goes a
little ahead: a request after which its sample still makes more judge calls, one after the
other (contextual precision's verdicts, whose explanation follows), waits as if its sample
were ``lead`` samples earlier (half the pacer's permits), so that its second call is back
when its sample's turn comes and the last samples of a batch do not wait a round trip for
their chains; at one sample, the chain's head first; then the earlier request. Two variants
judged at once thus still finish about when the slower alone would, and their rows come
sample by sample from the first.

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


def current(lead: int = 0) -> tuple[int, int]:
    """The order key of the request being made (smaller goes first): ``(sample, -calls after
    it)``, a request that more calls follow counted ``lead`` samples earlier per call, so a
    chain's first call goes out that far ahead of its sample's turn and its second is back
    in time for it (the pacer's lead: half its permits)."""
    after, place = _TURN.get()
    return place + after * lead, after


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
