"""An endpoint that accepts connections and never answers: the run stops, as when it refuses
them.

Each time-out halves the pacing limit, and each request is retried ``judge.max_retries``
times: against a server that hangs (or drips its reply slower than ``judge.timeout``) every
judgement would take ``(max_retries + 1) x timeout`` one at a time, 100 judgements about
ten hours with ``judge.timeout=60``. ``Silence`` watches the answers instead: after
``judge.max_timeouts_in_a_row`` time-outs in a row, with no answer of any kind (an error
status is an answer) in between nor for ``QUIET_ROUNDS`` time-outs' length, the endpoint is
not answering and the run ends with one line (``JudgeUnavailable``: exit 2, the finished
rows kept in ``samples.jsonl.partial``, a rerun resumes from the verdict cache). A busy
server that answers anything now and then is never stopped for it; its slow requests stay
time-outs of their own judgements.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from harness.core.errors import JudgeUnavailable

#: The silence must last this many ``judge.timeout`` (the retries of the first requests
#: timed out too, not only a burst of requests that were all queued together).
QUIET_ROUNDS = 2.0


class Silence:
    """Time-outs in a row and the last answer of one endpoint (``limit`` ``None``: never
    stop for time-outs)."""

    def __init__(
        self, limit: int | None, timeout: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.limit, self.timeout, self._clock = limit, timeout, clock
        self.in_a_row = 0
        self.since: float | None = None  # the last answer, else the first send
        self.answers = 0
        self.stopped: str | None = None  # the run-ending line, once said

    def sending(self) -> None:
        """A request goes out (the silence is counted from the first one)."""
        if self.stopped is not None:
            raise JudgeUnavailable(self.stopped)
        if self.since is None:
            self.since = self._clock()

    def end(self, message: str) -> JudgeUnavailable:
        """The run ends for this endpoint (silent, or asking for a wait of hours): every
        later send raises the same line instead of going out."""
        if self.stopped is None:
            self.stopped = message
        return JudgeUnavailable(self.stopped)

    def answered(self) -> None:
        """The endpoint answered (any status)."""
        self.in_a_row, self.answers, self.since = 0, self.answers + 1, self._clock()

    def timed_out(self, where: str) -> JudgeUnavailable | None:
        """A request got no answer within ``timeout``: the error that ends the run when the
        endpoint has gone silent, else ``None``."""
        self.in_a_row += 1
        if self.stopped is not None:
            return JudgeUnavailable(self.stopped)
        quiet = self._clock() - (self.since if self.since is not None else self._clock())
        if self.limit is None or self.in_a_row < self.limit or quiet < QUIET_ROUNDS * self.timeout:
            return None
        when = (f"in the {quiet:.0f} s since the first request" if self.answers == 0
                else f"for {quiet:.0f} s")
        return self.end(
            f"judge endpoint {where} accepts connections but answered none of the last "
            f"{self.in_a_row} requests within judge.timeout={self.timeout:g} s (nothing "
            f"answered {when}); check that the server is up and its model loaded, raise "
            "judge.timeout if it is only slow, or set judge.max_timeouts_in_a_row=null to keep "
            "waiting; finished rows are kept, rerun to resume from the cache"
        )
