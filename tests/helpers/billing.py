"""What the test judge bills, the way a provider does: OpenAI's prompt caching and prices.

Tokens are 4 characters each (rounded up), as the test judge counts them everywhere.

Prompt caching, as OpenAI documents it: a prompt's *cached tokens* are the longest prefix it
shares with any prompt the server saw before (over its messages serialized in order, roles
included: the same text under another role is not shared), counted only from ``min_tokens``
(1,024) shared tokens on, in steps of ``step`` (128) tokens, rounded down. The shared
tokens are the message content within that prefix, 4 characters a token, as the prompt's
tokens are (a role and the marks between messages are compared, not counted).
``PrefixCache`` keeps every prompt seen in a sorted list: the
longest common prefix of a string with a set of strings is the longer of its common prefixes
with its two neighbours in sorted order, so one lookup is a ``bisect`` and two comparisons.

The bill: USD per million tokens for input, cached input and output (1.00 / 0.10 / 4.00 by
default), and a factor for lines answered through the Batch API (0.5: half price). Tests and
benchmarks read what the server billed (``Stats.billed_*``), never a client's own estimate.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: Characters per token.
TOKEN_CHARS = 4
#: OpenAI: prompts share cached tokens from 1,024 tokens on, in steps of 128.
MIN_CACHED_TOKENS, CACHE_STEP = 1024, 128


def tokens(chars: int) -> int:
    """Tokens of a text of ``chars`` characters (4 a token, rounded up)."""
    return math.ceil(chars / TOKEN_CHARS)


def serialized(roles: Sequence[Any], texts: Sequence[str]) -> str:
    """A request's messages as one string, in order (what prompt caching compares)."""
    return "".join(f"{role}\x1f{text}\x1e" for role, text in zip(roles, texts, strict=True))


def content_chars(roles: Sequence[Any], texts: Sequence[str], chars: int) -> int:
    """The characters of message content within the first ``chars`` of ``serialized(roles,
    texts)`` (its roles and marks left out)."""
    n, at = 0, 0
    for role, text in zip(roles, texts, strict=True):
        start = at + len(f"{role}\x1f")
        if chars <= start:
            break
        n += min(len(text), chars - start)
        at = start + len(text) + 1
    return n


def common_prefix(a: str, b: str) -> int:
    """Length of the common prefix of ``a`` and ``b`` (a binary search of slice
    comparisons: each runs in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


class PrefixCache:
    """Every prompt the server saw, sorted, answering "how many of this prompt's tokens are
    cached" (``cached``) as OpenAI bills them."""

    def __init__(self) -> None:
        self._seen: list[str] = []
        self._lock = threading.Lock()

    def shared(self, prompt: str) -> int:
        """The characters ``prompt`` shares with the closest earlier prompt (its longest
        common prefix with any), then remember it for the prompts after it."""
        with self._lock:
            seen = self._seen
            at = bisect.bisect_left(seen, prompt)
            shared = max(common_prefix(prompt, seen[at - 1]) if at > 0 else 0,
                         common_prefix(prompt, seen[at]) if at < len(seen) else 0)
            if at == len(seen) or seen[at] != prompt:
                seen.insert(at, prompt)
        return shared

    def cached(self, prompt: str, prompt_tokens: int, min_tokens: int = MIN_CACHED_TOKENS,
               step: int = CACHE_STEP, roles: Sequence[Any] | None = None,
               texts: Sequence[str] | None = None) -> int:
        """The cached tokens of ``prompt`` (of ``prompt_tokens`` tokens; a ``serialized``
        request of ``roles`` and ``texts`` when given: its content counted), then remember
        it: the tokens it shares with the closest earlier prompt, none below
        ``min_tokens``, rounded down to a multiple of ``step``."""
        shared = self.shared(prompt)
        if roles is not None and texts is not None:
            shared = content_chars(roles, texts, shared)
        shared_tokens = min(shared // TOKEN_CHARS, prompt_tokens)
        if shared_tokens < min_tokens or shared_tokens <= 0:
            return 0
        return shared_tokens // step * step

    def clear(self) -> None:
        """Forget every prompt (the next ones have nothing cached)."""
        with self._lock:
            self._seen.clear()

    def __len__(self) -> int:
        return len(self._seen)


@dataclass(frozen=True)
class Prices:
    """USD per million tokens, and the factor of Batch API lines (0.5: half price)."""

    input: float = 1.00
    cached_input: float = 0.10
    output: float = 4.00
    batch: float = 0.5

    def usd(self, prompt: int, cached: int, completion: int, batch: bool) -> float:
        """What one reply costs."""
        usd = ((prompt - cached) * self.input + cached * self.cached_input
               + completion * self.output) / 1e6
        return usd * self.batch if batch else usd
