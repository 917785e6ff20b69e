"""Adaptive pacing's decisions: what each epoch's goodput says about the limit.

An epoch is about one round trip of sends at one limit (``Epoch``); when enough of its
answers are in, ``Control.judge`` moves the limit: startup growth while goodput follows the
concurrency, the knee when it stops, probes up (recovery) and down (draining a queue), the
time-out bound, and halving on overload with regrowth to just below where it struck.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

#: The starting limit when the server's slot count is unknown.
INITIAL = 16
#: Startup multiplies the limit by this per epoch while goodput keeps up (regrowth: 2).
GROWTH, REGROWTH = 4.0, 2.0
#: Counted sends per epoch at least (the statistics of fewer answers are noise).
MIN_EPOCH = 16
#: Share of an epoch's counted sends whose answers make its statistics (the slowest quarter
#: of a heavy tail would make every epoch wait for its worst reply).
QUORUM = 0.75
#: Startup goes on while goodput grows this many times when concurrency grew ``CONC_GREW``.
GAIN_GREW, CONC_GREW = 1.25, 1.5
#: The knee: the least concurrency whose goodput reached this share of the best.
KNEE = 0.9
#: A probe moves the limit by this factor (up, or down to drain a queue) for one epoch.
PROBE = 1.25
#: Steady epochs between upward probes (below the ceiling).
PROBE_EVERY = 2
#: An upward probe is kept when goodput rose this many times; a downward one when it held
#: this share.
GAIN_PROBE, HELD = 1.1, 0.97
#: An epoch whose mean latency is this many times the lowest epoch's triggers a drain probe.
DRAIN = 2.0
#: After an overload the limit grows back to this share of the limit it struck at.
BELOW_OVERLOAD = 0.8
#: Halvings less than this many latencies apart are one overload episode.
EPISODE = 4.0
#: Epochs whose latency the drain test remembers.
MEMORY_EPOCHS = 16
#: Goodput x timeout x this bounds the limit (a queue drains in half a time-out).
SAFETY = 0.5


@dataclass(slots=True)
class Epoch:
    """About one round trip of sends at one limit, and what their answers showed."""

    limit: int
    quota: int
    probe: str = ""  # "", "up" or "down"
    skip: int = 0  # sends not counted first (the queue settling at a new limit)
    started: float = 0.0
    delivered: int = 0  # answers of any epoch when it started
    sent: int = 0
    done: int = 0  # counted sends finished, answered or not
    answers: int = 0
    latency: float = 0.0  # summed over the answers
    load: float = 0.0  # summed mean in flight during each answer's flight

    @property
    def need(self) -> int:
        """Counted sends that must finish before the epoch is judged."""
        return max(1, math.ceil(self.quota * QUORUM))

    def judged(self) -> bool:
        """Enough of its counted sends are done, half of them answered."""
        return self.done >= self.need and 2 * self.answers >= self.need


@dataclass(slots=True)
class Measured:
    """An epoch's mean in flight, mean latency and goodput (Little's law: their ratio)."""

    load: float
    latency: float
    goodput: float


class Control:
    """The limit of adaptive pacing, and the decisions that move it."""

    def __init__(self, ceiling: int, start: float, *, timeout: float | None, warm: bool):
        self.ceiling, self.timeout = ceiling, timeout
        self.limit = start
        self.growing = start < ceiling and not warm
        self.growth = GROWTH
        self.bound = math.inf  # goodput x timeout x SAFETY
        self.latency = 0.0  # the last epoch's mean latency
        self.overload = math.inf  # the limit when the server was last overloaded
        self.halved_at = -math.inf
        self.startup: list[Measured] = []  # this growth phase's epochs
        self.steady: list[Measured] = []  # epochs at the current limit
        self.latencies: deque[float] = deque(maxlen=MEMORY_EPOCHS)
        self.since_probe = PROBE_EVERY if warm else 0  # a warm start probes up at once
        self.before_probe = start  # the limit to restore after a probe

    def permits(self) -> int:
        """Requests allowed in flight."""
        return max(1, int(min(self.limit, self.bound)))

    def set(self, limit: float) -> None:
        self.limit = min(max(limit, 1.0), float(self.ceiling))

    def judge(self, epoch: Epoch, delivered: int, elapsed: float) -> str:
        """An epoch's answers are in (``delivered``: answers of any epoch during its
        ``elapsed`` seconds): move the limit; return the probe the next epoch is."""
        load, latency = epoch.load / epoch.answers, epoch.latency / epoch.answers
        seen = Measured(load, latency, load / latency)
        self.latency = latency
        if self.timeout and elapsed > 0:  # answers counted over the epoch: never optimistic
            self.bound = max(1.0, delivered / elapsed * self.timeout * SAFETY)
        if load < 0.5 * epoch.limit:  # the limit was not what held the sends back
            if epoch.probe:
                self.set(self.before_probe)
            return ""
        self.latencies.append(latency)
        if epoch.probe:
            return self._after_probe(epoch.probe, seen)
        if self.growing:
            return self._grow(seen)
        return self._cruise(seen)

    def _grow(self, seen: Measured) -> str:
        last = self.startup[-1] if self.startup else None
        self.startup.append(seen)
        if last is None or (
            seen.load >= CONC_GREW * last.load and seen.goodput >= GAIN_GREW * last.goodput
        ):
            # after an overload, grow back to just below where it struck (TCP CUBIC's W_max)
            cap = min(float(self.ceiling), self.bound, BELOW_OVERLOAD * self.overload)
            if self.limit >= cap:
                self._settle(self.limit)
            else:
                self.set(min(self.limit * self.growth, cap))
        elif seen.load < CONC_GREW * last.load:  # held back (the bound, the ceiling)
            self._settle(self.limit)
        else:  # more in flight bought no goodput: the server is saturated
            best = max(m.goodput for m in self.startup)
            self._settle(min(m.load for m in self.startup if m.goodput >= KNEE * best))
        return ""

    def _settle(self, limit: float) -> None:
        self.growing = False
        self.startup.clear()
        self.steady.clear()
        self.since_probe = 0
        self.set(math.ceil(limit))

    def _cruise(self, seen: Measured) -> str:
        self.steady.append(seen)
        self.since_probe += 1
        if self.since_probe >= PROBE_EVERY and self.permits() < self.ceiling:
            self.before_probe = self.limit
            self.set(max(self.limit + 1, self.limit * PROBE))
            return "up"
        if (
            len(self.steady) >= 2 and self.limit > 1
            and seen.latency >= DRAIN * min(self.latencies)
        ):
            self.before_probe = self.limit
            self.set(max(1.0, self.limit / PROBE))
            return "down"
        return ""

    def _after_probe(self, probe: str, seen: Measured) -> str:
        recent = self.steady[-3:]
        reference = sum(m.goodput for m in recent) / len(recent) if recent else 0.0
        self.since_probe = 0
        if probe == "up" and seen.goodput >= GAIN_PROBE * reference:
            self.growing, self.growth = True, REGROWTH  # more room than we used: grow again
            if self.limit >= BELOW_OVERLOAD * self.overload:
                self.overload = math.inf  # past where it struck: the overload is over
            self.startup[:] = [*recent[-1:], seen]
            self.steady.clear()
            self.set(self.limit * self.growth)
        elif probe == "down" and seen.goodput >= HELD * reference:
            self.steady[:] = [seen]  # a queue drained: keep the lower limit
        else:
            self.set(self.before_probe)
        return ""

    def halve(self, now: float, sent_at: float) -> bool:
        """The server is overloaded: halve the limit once per round trip (for a request sent
        after the last halving, an ordinary latency later: errors answered at once would
        halve it many times a round trip), then grow back. Returns whether it halved."""
        if sent_at <= self.halved_at or now - self.halved_at < self.latency:
            return False
        if now - self.halved_at > EPISODE * self.latency:  # a new overload episode
            self.overload = float(self.permits())
        self.halved_at = now
        self.startup.clear()
        self.steady.clear()
        self.since_probe = 0
        self.growing, self.growth = True, REGROWTH
        self.set(self.permits() * 0.5)
        return True
