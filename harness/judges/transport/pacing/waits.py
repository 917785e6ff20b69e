"""Waits a server's headers ask for: bounded by ``judge.max_wait`` and said on the console.

A ``Retry-After`` (or ``retry-after-ms``) and the ``x-ratelimit-reset-*`` of a spent quota
are honoured up to ``max_wait`` seconds. A wait of ``SAY_AFTER`` seconds or more is one
``warning:`` line naming the header (one line per stretch of waiting, not per request). A
longer wait is never taken:

* a refusal (429, 503, 504) whose own headers ask for more than ``max_wait`` ends the run:
  ``refused_past`` gives the wait and the header, and the transport raises
  ``JudgeUnavailable`` (exit 2, finished rows kept, the verdict cache resumes a rerun);
* an answered request whose headers say a quota is spent for longer holds nothing back:
  one ``warning:`` line says so, and the next request goes out (a server whose headers say
  more than it enforces keeps working; one that enforces them refuses, and the run ends).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping

from harness.core.redact import redact
from harness.core.text import one_line
from harness.judges.transport.pacing.quotas import Quotas
from harness.judges.transport.pacing.retries import retry_after_told

#: A wait at least this many seconds long is said on the console.
SAY_AFTER = 5.0


def human(seconds: float) -> str:
    """``"90 s"``, ``"61200 s (17.0 h)"``, ``"1000000 s (11.6 days)"``."""
    if not math.isfinite(seconds):
        return "forever"
    text = f"{seconds:.0f} s"
    if seconds >= 2 * 86400:
        return f"{text} ({seconds / 86400:.1f} days)"
    if seconds >= 3600:
        return f"{text} ({seconds / 3600:.1f} h)"
    return text


def told_by(headers: Mapping[str, str] | None) -> str:
    """The header a ``Retry-After`` came from (``"retry-after: 30"``), for the console."""
    told = retry_after_told(headers)
    return "" if told is None else told[1]


class Waits:
    """What one endpoint's headers made the sends wait, said once per stretch of waiting."""

    def __init__(self, max_wait: float, where: str | None) -> None:
        self.max_wait = max_wait
        self.where = where or "the judge endpoint"
        self.said_until = -math.inf
        self.warned_beyond = False
        self.lines = 0  # lines printed (for tests and the summary's reader)

    def _print(self, text: str) -> None:
        self.lines += 1
        print(one_line(redact(f"warning: {text}"), None), file=sys.stderr, flush=True)

    def say(self, now: float, until: float, told: str) -> None:
        """Sends wait until ``until`` because of the header ``told``: one line when that is
        ``SAY_AFTER`` or more and ends past the last wait said."""
        if until - now < SAY_AFTER or until <= self.said_until + SAY_AFTER:
            return
        self.said_until = until
        self._print(f"judge endpoint {self.where} is rate-limited: waiting "
                    f"{human(until - now)} ({told or 'its rate limit'}; at most "
                    f"judge.max_wait={self.max_wait:g} s)")

    def beyond(self, quotas: Quotas) -> None:
        """Once: a quota the headers say is spent past ``max_wait`` is not waited for."""
        if quotas.beyond is None or self.warned_beyond:
            return
        self.warned_beyond = True
        wait, told = quotas.beyond
        self._print(f"judge endpoint {self.where} says a rate-limit quota is spent ({told}): "
                    f"the next request would wait {human(wait)}, longer than "
                    f"judge.max_wait={self.max_wait:g} s; not waiting for it (if the endpoint "
                    "refuses requests for it, the run stops)")

    def refused_past(
        self, headers: Mapping[str, str] | None, quotas: Quotas
    ) -> tuple[float, str] | None:
        """The wait a refusal's headers ask for (``Retry-After``, else the reset of its spent
        quotas) and the header, when it is longer than ``max_wait``; else ``None``."""
        if not headers:
            return None
        told = retry_after_told(headers) or quotas.wait_told(headers)
        if told is None or told[0] <= self.max_wait:
            return None
        return told

    def refused_message(self, status: int, wait: float, told: str) -> str:
        """The run-ending line for a refusal that asks for ``wait`` seconds (``told``)."""
        return (f"judge endpoint {self.where} refused a request (HTTP {status}) and asks to "
                f"wait {human(wait)} ({told}), longer than judge.max_wait={self.max_wait:g} "
                "s; rerun once its rate limit has reset (finished rows are kept and the "
                "verdict cache resumes them), or raise judge.max_wait")
