"""Retries: the server's ``Retry-After``, back-off with jitter, which statuses are worth another
try, and the durations of rate-limit headers."""

from __future__ import annotations

import contextlib
import math
import random
import re
import time
from collections.abc import Mapping

#: Longest server-directed pause honoured, in seconds (a longer ``Retry-After`` is refused).
MAX_RETRY_AFTER = 60.0


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


def duration(value: str | None) -> float | None:
    """Seconds in a rate-limit reset header: ``"1s"``, ``"6m0s"``, ``"20ms"``, ``"1.5"``."""
    if value is None:
        return None
    value = value.strip()
    seconds = number(value)
    if seconds is not None:
        return seconds
    parts = _DURATION.findall(value)
    if not parts or "".join(n + u for n, u in parts) != value:
        return None
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(n) * scale[u] for n, u in parts)


def retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms``, then ``retry-after`` in seconds
    or as an HTTP date), or ``None``."""
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
        return seconds if math.isfinite(seconds) else MAX_RETRY_AFTER + 1
    value = headers.get("retry-after")
    if value:
        import email.utils

        with contextlib.suppress(TypeError, ValueError, OverflowError):
            when = email.utils.parsedate_to_datetime(value)
            return when.timestamp() - time.time()
    return None


def backoff(retry: int, hint: float | None = None) -> float:
    """Seconds before retry number ``retry`` (1, 2, ...): the server's hint when it gave one,
    else 0.5 s doubling up to 8 s, less up to a quarter at random (jitter)."""
    if hint is not None and 0 < hint <= MAX_RETRY_AFTER:
        return hint
    return min(0.5 * 2.0 ** (retry - 1), 8.0) * (1 - 0.25 * random.random())


def should_retry(status: int, headers: Mapping[str, str] | None) -> bool:
    """Whether a status is worth another try (as the openai SDK decides: 408, 409, 429,
    5xx, unless ``x-should-retry: false`` or a ``Retry-After`` past ``MAX_RETRY_AFTER``)."""
    hint = retry_after(headers)
    if hint is not None and hint > MAX_RETRY_AFTER:
        return False
    told = (headers or {}).get("x-should-retry")
    if told in ("true", "false"):
        return told == "true"
    return status in (408, 409, 429) or status >= 500
