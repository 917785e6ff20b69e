"""Retries: the server's ``Retry-After``, back-off with jitter, which statuses are worth another
try, and the durations of rate-limit headers.

Every wait a server's header asks for is bounded by ``max_wait`` (``judge.max_wait``, by
default ``MAX_RETRY_AFTER``): a longer ``Retry-After`` is not waited out (see
``harness.judges.transport.pacing.waits`` for what happens instead)."""

from __future__ import annotations

import contextlib
import math
import random
import re
import time
from collections.abc import Mapping
from datetime import datetime, timezone

from harness.core.text import one_line

#: Longest server-directed pause honoured by default, in seconds (``judge.max_wait``).
MAX_RETRY_AFTER = 60.0
#: A bare number of seconds at least this large is a Unix time, not a duration (2001-09-09:
#: as a duration it would be 31 years).
EPOCH_AFTER = 1e9


def number(value: str | None) -> float | None:
    """A header's finite number, or ``None``."""
    if value is None:
        return None
    try:
        parsed = float(value)
    except ValueError:
        return None
    return parsed if math.isfinite(parsed) else None


_DURATION = re.compile(r"(\d+(?:\.\d*)?)(ms|h|m|s)")


def duration(value: str | None, now: float | None = None) -> float | None:
    """Seconds until a rate-limit reset header's time: a duration (``"1s"``, ``"6m0s"``,
    ``"20ms"``, ``"1.5"``), a Unix time (a number past ``EPOCH_AFTER``), or a date (RFC 3339
    as Anthropic sends, or an HTTP date); ``now``: the wall clock (``time.time()``)."""
    if value is None:
        return None
    value = value.strip()
    seconds = number(value)
    if seconds is not None:
        if seconds >= EPOCH_AFTER:
            return max(0.0, seconds - (time.time() if now is None else now))
        return seconds
    parts = _DURATION.findall(value)
    if parts and "".join(n + u for n, u in parts) == value:
        scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
        return sum(float(n) * scale[u] for n, u in parts)
    return until_date(value, now)


def until_date(value: str, now: float | None = None) -> float | None:
    """Seconds from ``now`` to an RFC 3339 or HTTP date (0 when past), or ``None``."""
    import email.utils

    when: datetime | None = None
    with contextlib.suppress(ValueError):
        when = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    if when is None:
        with contextlib.suppress(TypeError, ValueError, OverflowError, IndexError):
            when = email.utils.parsedate_to_datetime(value)
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    with contextlib.suppress(OverflowError, OSError, ValueError):
        return max(0.0, when.timestamp() - (time.time() if now is None else now))
    return None


def shown(name: str, value: str | None) -> str:
    """``"name: value"`` of a server's header for a message: one line, at most 40
    characters of the value."""
    return f"{name}: {one_line(value or '', 40)}"


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms``, then ``retry-after`` in seconds
    or as an HTTP date), or ``None``."""
    told = retry_after_told(headers)
    return None if told is None else told[0]


def retry_after_told(headers: Mapping[str, str] | None) -> tuple[float, str] | None:
    """``retry_after`` and the header that told it (``"retry-after: 30"``), for messages."""
    if not headers:
        return None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            continue
        return (seconds if math.isfinite(seconds) else math.inf), shown(name, value)
    value = headers.get("retry-after")
    if value:
        until = until_date(value.strip())
        if until is not None:
            return until, shown("retry-after", value)
    return None


def backoff(retry: int, hint: float | None = None, cap: float = MAX_RETRY_AFTER) -> float:
    """Seconds before retry number ``retry`` (1, 2, ...): the server's hint when it gave one
    (up to ``cap``), else 0.5 s doubling up to 8 s, less up to a quarter at random (jitter)."""
    if hint is not None and 0 < hint <= cap:
        return hint
    return min(0.5 * 2.0 ** (retry - 1), 8.0) * (1 - 0.25 * random.random())


def should_retry(
    status: int, headers: Mapping[str, str] | None, cap: float = MAX_RETRY_AFTER
) -> bool:
    """Whether a status is worth another try (as the openai SDK decides: 408, 409, 429,
    5xx, unless ``x-should-retry: false`` or a ``Retry-After`` past ``cap``)."""
    hint = retry_after(headers)
    if hint is not None and hint > cap:
        return False
    told = (headers or {}).get("x-should-retry")
    if told in ("true", "false"):
        return told == "true"
    return status in (408, 409, 429) or status >= 500
