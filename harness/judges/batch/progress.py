"""What a batch says on the console (stderr): its progress while the run waits on it, and,
when the run stops before it ends, that it runs on and a rerun resumes it."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness.core.redact import redact
from harness.core.text import one_line

if TYPE_CHECKING:
    from openai.types import Batch

#: Seconds between two progress lines of a batch whose status has not changed.
PROGRESS_S = 30.0


def elapsed(seconds: float) -> str:
    """``"42 s"``, ``"3 m 05 s"``, ``"2 h 07 m"``."""
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} m {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} m"


class Progress:
    """One line per batch at each change of its status, else every ``PROGRESS_S``:
    ``judge batch batch_abc: in_progress, 120/500 lines, 1 m 20 s``."""

    def __init__(self) -> None:
        self.said: dict[str, tuple[str, float]] = {}
        self.lines = 0

    def say(self, batch: Batch, started: float) -> None:
        """``batch`` as just retrieved (``started``: when this run began waiting on it)."""
        now = time.monotonic()
        last = self.said.get(batch.id)
        if last is not None and last[0] == batch.status and now - last[1] < PROGRESS_S:
            return
        self.said[batch.id] = (batch.status, now)
        counts = batch.request_counts
        done = 0 if counts is None else counts.completed + counts.failed
        total = "?" if counts is None else counts.total
        self.lines += 1
        print(one_line(f"judge batch {batch.id}: {batch.status}, {done}/{total} lines, "
                       f"{elapsed(now - started)}", None), file=sys.stderr, flush=True)


def errors(batch: Batch) -> str:
    """Why the provider failed ``batch`` (its ``errors``), in one line."""
    data = batch.errors.data if batch.errors is not None else None
    text = "; ".join(f"{e.code}: {e.message}" for e in data or ()) or "no reason given"
    return one_line(redact(text), 300)


def still_running(ids: Sequence[str], where: str, cache: str) -> None:
    """The line of a run that stops while batches ``ids`` still run."""
    many = len(ids) > 1
    print(f"judge: batch{'es' if many else ''} {', '.join(ids)} still running at {where}, "
          f"recorded in the verdict cache {cache}: run the same command again to resume "
          f"{'them' if many else 'it'} (no request is sent or paid for twice)",
          file=sys.stderr, flush=True)
