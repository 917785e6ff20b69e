"""Judging through a provider's Batch API (``judge.batch``): ``api`` (its calls),
``files`` (the JSONL lines in and out), ``batcher`` (requests collected into batches,
followed, resumed), ``progress`` (what it says on the console)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harness.judges.batch.api import BatchCalls
from harness.judges.batch.batcher import Batcher

if TYPE_CHECKING:
    from harness.judges.transport.chat import ChatTransport

__all__ = ["Batcher", "of"]


def of(transport: ChatTransport, on_hit: Callable[[Any], None], *, poll: float,
       max_requests: int, max_bytes: int, retry: str) -> Batcher:
    """The batcher of a judge's ``transport`` (its client, stats, retry settings)."""
    calls = BatchCalls(transport._ensure_client, lambda: transport.endpoint, transport.max_retries,
                       transport.max_wait)
    return Batcher(calls, lambda raw, logprobs: transport.take(raw, logprobs, batch=True),
                   transport.stats, on_hit, poll=poll, max_requests=max_requests,
                   max_bytes=max_bytes, max_retries=transport.max_retries, retry=retry)

