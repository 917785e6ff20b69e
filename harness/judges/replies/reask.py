"""Asking until a reply can be used: a re-ask after an unusable reply
(``judge.parse_retries``), with a note on what was wrong appended to the last user message.

Resending the same request to a deterministic model tends to return the same reply; the
note changes only the end, so a cached prefix still applies. A reply the token limit cut is
not re-asked (the same limit would cut it again): ``JudgeReplyCut``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from harness.core.errors import JudgeParseError, JudgeReplyCut
from harness.core.redact import redact
from harness.core.text import clip
from harness.core.types import Completion, JudgeStats
from harness.judges.replies.read import reply_cut

T = TypeVar("T")


async def usable(
    send: Callable[[list[dict[str, str]]], Awaitable[Completion]],
    parse: Callable[[Completion], T],
    messages: list[dict[str, str]],
    retries: int,
    stats: JudgeStats,
    max_tokens: int | None,
) -> tuple[T, Completion]:
    """``parse``'s value of the first usable reply to ``messages`` (sent by ``send``), and
    that reply; ``JudgeParseError`` after ``retries`` re-asks, ``JudgeReplyCut`` at once
    for a reply the token limit (``max_tokens``) cut."""
    attempt_messages = messages
    error: JudgeParseError | None = None
    for _ in range(retries + 1):
        completion: Completion | None = None
        try:
            completion = await send(attempt_messages)
            value = parse(completion)
        except (JudgeParseError, JudgeReplyCut) as e:
            stats.parse_failures += 1
            cut = completion is not None and completion.finish_reason == "length"
            if isinstance(e, JudgeReplyCut) or cut:  # the same limit would cut it again
                stats.failures += 1
                raise reply_cut(max_tokens, not cut) from None
            error = e
        else:
            return value, completion
        last = messages[-1]
        note = (f"\n\nYour previous reply could not be used ({clip(str(error), 300)}). "
                "Reply with only the JSON object described above.")
        attempt_messages = [*messages[:-1], {"role": last["role"],
                                             "content": last["content"] + note}]
    stats.failures += 1
    attempts = retries + 1
    raise JudgeParseError(redact(
        f"unusable judge reply after {attempts} attempt{'s' if attempts > 1 else ''}: {error}"
    ))
