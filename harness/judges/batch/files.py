"""The Batch API's JSONL files: the input's request lines, cut at the provider's limits,
and what the output and error files say of each line.

An input line is ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}``
with the chat request's own JSON as its body and the request's verdict-cache key as its
``custom_id`` (unique in a file: a key is asked once at a time). An output line is
``{"custom_id", "response": {"status_code", "body"}, "error"}``: a 200 carries the chat
completion; another status, or a ``null`` response with an ``error`` (``batch_expired``,
``batch_cancelled``), is a line that failed or was not reached.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from harness.core.redact import redact
from harness.core.text import clip
from harness.core.types import Completion
from harness.judges.cache.batches import Meta
from harness.judges.replies import failures
from harness.judges.transport.pacing import should_retry

_HEAD = b'{"custom_id":"'
_MIDDLE = b'","method":"POST","url":"/v1/chat/completions","body":'
#: Codes of lines a batch did not reach: sent again, not counted as failures of the line.
LOST = frozenset({"batch_expired", "batch_cancelled"})


def line(key: str, body: bytes) -> bytes:
    """The input line of a request (``body``: its chat request JSON)."""
    return _HEAD + key.encode() + _MIDDLE + body + b"}\n"


def cut(sizes: Sequence[int], max_requests: int, max_bytes: int) -> list[range]:
    """Lines of the given sizes, in order, as files of at most ``max_requests`` lines and
    ``max_bytes`` bytes (a line larger than ``max_bytes`` alone in its file)."""
    files: list[range] = []
    start, size = 0, 0
    for i, n in enumerate(sizes):
        if i > start and (i - start >= max_requests or size + n > max_bytes):
            files.append(range(start, i))
            start, size = i, 0
        size += n
    if start < len(sizes):
        files.append(range(start, len(sizes)))
    return files


@dataclass(frozen=True)
class Answer:
    """What a batch said of one line: ``body`` (the chat completion's JSON) when it was
    answered; else ``why`` it was not, whether another try may succeed (``retry``), and
    whether the batch never reached it (``lost``: expired, cancelled)."""

    body: bytes | None = None
    why: str = ""
    retry: bool = False
    lost: bool = False


def read(data: bytes) -> Iterator[tuple[str, Answer]]:
    """``(custom_id, Answer)`` of each line of an output or error file (lines without a
    ``custom_id`` are skipped: they name no request)."""
    for text in data.splitlines():
        try:
            entry = json.loads(text)
        except (ValueError, RecursionError):
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("custom_id"), str):
            continue
        yield entry["custom_id"], _answer(entry)


def _answer(entry: dict[str, object]) -> Answer:
    response, error = entry.get("response"), entry.get("error")
    if isinstance(response, dict) and isinstance(response.get("status_code"), int):
        status, body = response["status_code"], response.get("body")
        if status == 200:
            return Answer(body=json.dumps(body, ensure_ascii=False).encode())
        message = body.get("error") if isinstance(body, dict) else body
        if isinstance(message, dict):
            message = message.get("message")
        text = failures.status_text(status, clip(redact(str(message or "")), 200))
        return Answer(why=f"the batch line failed: {text}", retry=should_retry(status, None))
    code = error.get("code") if isinstance(error, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    why = clip(redact(f"{code}: {message}" if message else str(code or "no answer")), 200)
    return Answer(why=f"the batch did not answer the line ({why})", lost=code in LOST,
                  retry=code not in LOST)


#: What a line comes to: its completion, or why it has none.
Outcome = Completion | Answer


@dataclass(eq=False)
class Ask:
    """A request waiting for its line's answer (``batch``: the batch it is in)."""

    key: str
    body: bytes
    meta: Meta
    logprobs: bool
    future: asyncio.Future[Outcome]
    batch: str | None = None
    line: bytes = b""
