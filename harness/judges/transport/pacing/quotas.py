"""A server's rate-limit quotas as its headers tell them (OpenAI's ``x-ratelimit-*``), mirrored
on this side so that sends wait for the refill instead of being refused.

Each reply may carry ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}``: the quota, what
is left, and the time until it is full again. From them the mirror knows the refill rate; every
send is counted against it (a request costs 1 request and, in tokens, its prompt and the most
it may generate, ``max_tokens``, as OpenAI counts), a refused one is given back, and a new send
waits until the mirror holds one more request's cost. A header tells the quota as the server
counted it when the request arrived, which may be a whole latency ago: the mirror takes it as
of the request's send time, refilled since, less the sends made since, and only from a request
sent after the one it last took (a slow reply carries old news).

No quota holds sends back longer than ``max_wait`` (``judge.max_wait``): one whose refill
would take longer is not waited for (``beyond`` notes it); the next send goes out, and the
server's refusal, if it refuses, ends the run (``harness.judges.transport.pacing.waits``).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from harness.judges.transport.pacing.retries import (
    MAX_RETRY_AFTER,
    duration,
    number,
    retry_after_told,
    shown,
)

UNITS = ("requests", "tokens")


@dataclass(slots=True)
class Quota:
    """One quota as the headers last told it, refilled at the rate they imply."""

    left: float
    rate: float  # per second
    cap: float
    at: float
    as_of: float = -math.inf  # the send time of the request whose headers told it
    told: str = ""  # the reset header that told it, for messages

    def refill(self, now: float) -> float:
        self.left = min(self.cap, self.left + (now - self.at) * self.rate)
        self.at = now
        return self.left


class Quotas:
    """The quotas of one endpoint, and what one request costs against each."""

    def __init__(self, max_wait: float = MAX_RETRY_AFTER) -> None:
        self.max_wait = max_wait
        self.known: dict[str, Quota] = {}
        #: the longest refill past ``max_wait`` seen, and the header that told it
        self.beyond: tuple[float, str] | None = None
        self._tokens = 0.0  # tokens per answered request (moving average), max_tokens included
        self._sends: deque[float] = deque(maxlen=4096)  # when the recent sends went out

    def cost(self, unit: str) -> float:
        """What one request costs against a quota: 1 request, or its tokens."""
        return 1.0 if unit == "requests" else max(self._tokens, 1.0)

    def need(self, unit: str) -> float:
        """What a quota must hold to send one more (a margin: headers round down, the mirror
        refills continuously)."""
        return self.cost(unit) * 1.02 + 1.0

    def holding(self, now: float) -> tuple[float, str]:
        """When every known quota holds one more request's cost (``-inf``: now), and the
        header of the quota that holds sends back longest; a quota whose refill takes longer
        than ``max_wait`` holds nothing (``beyond``)."""
        until, told = -math.inf, ""
        for unit, quota in self.known.items():
            short = self.need(unit) - quota.refill(now)
            if short <= 0:
                continue
            wait = short / quota.rate
            if wait > self.max_wait:
                self._past(wait, quota.told)
            elif now + wait > until:
                until, told = now + wait, quota.told
        return until, told

    def _past(self, wait: float, told: str) -> None:
        if self.beyond is None or wait > self.beyond[0]:
            self.beyond = (wait, told)

    def charge(self, now: float) -> None:
        """One more request sent: count it against every known quota."""
        self._sends.append(now)
        for unit, quota in self.known.items():
            quota.refill(now)
            quota.left -= self.cost(unit)

    def refund(self, sent_at: float) -> None:
        """The request sent at ``sent_at`` was refused (429): it cost nothing."""
        for i, when in enumerate(self._sends):
            if when >= sent_at:
                del self._sends[i]
                break
        for unit, quota in self.known.items():
            quota.left += self.cost(unit)

    def _sent_since(self, when: float) -> int:
        count = 0
        for sent in reversed(self._sends):
            if sent <= when:
                break
            count += 1
        return count

    def note_tokens(self, tokens: int) -> None:
        """Tokens one answered request used, ``max_tokens`` included."""
        if tokens > 0:
            self._tokens = tokens if not self._tokens else 0.9 * self._tokens + 0.1 * tokens

    def read(
        self, headers: Mapping[str, str], now: float, sent_at: float
    ) -> tuple[bool, tuple[float, str] | None]:
        """Take the headers of the reply to a request sent at ``sent_at`` into the mirror.
        Returns whether a quota is spent, and when to resume (with the header that said so)
        when it is but its refill rate is unknown (``None``: no pause needed)."""
        spent, resume = False, None
        for unit in UNITS:
            left = number(headers.get(f"x-ratelimit-remaining-{unit}"))
            if left is None:
                continue
            need = self.need(unit)
            said = headers.get(f"x-ratelimit-reset-{unit}")
            reset = duration(said)  # to the full quota
            told = shown(f"x-ratelimit-reset-{unit}", said)
            cap = number(headers.get(f"x-ratelimit-limit-{unit}"))
            before = self.known.get(unit)
            if reset and cap and cap > left:  # refilled at an even rate: mirror it
                if before is not None and sent_at < before.as_of:  # older news: keep ours
                    spent = spent or before.refill(now) < need
                    continue
                rate = (cap - left) / reset
                since = min(cap, left + rate * max(0.0, now - sent_at))
                now_left = since - self.cost(unit) * self._sent_since(sent_at)
                self.known[unit] = Quota(now_left, rate, cap, now, sent_at, told)
                spent = spent or now_left < need
                continue
            if left < need:
                said_wait = (reset, told) if reset is not None else retry_after_told(headers)
                if said_wait is not None and 0 < said_wait[0] <= self.max_wait:
                    if resume is None or now + said_wait[0] > resume[0]:
                        resume = (now + said_wait[0], said_wait[1])
                elif said_wait is not None and said_wait[0] > self.max_wait:
                    self._past(*said_wait)
                spent = True
        return spent, resume

    def wait_told(self, headers: Mapping[str, str]) -> tuple[float, str] | None:
        """How long a reply's headers say the spent quotas take to hold one more request
        (at the rate they imply; the reset itself without a limit), and the header."""
        longest: tuple[float, str] | None = None
        for unit in UNITS:
            left = number(headers.get(f"x-ratelimit-remaining-{unit}"))
            said = headers.get(f"x-ratelimit-reset-{unit}")
            reset = duration(said)
            if left is None or reset is None or left >= self.need(unit):
                continue
            cap = number(headers.get(f"x-ratelimit-limit-{unit}"))
            wait = reset
            if cap and cap > left and reset > 0:
                wait = min(reset, (self.need(unit) - left) / ((cap - left) / reset))
            if longest is None or wait > longest[0]:
                longest = (wait, shown(f"x-ratelimit-reset-{unit}", said))
        return longest
