"""How many judge requests to keep in flight: a limit that finds the server's capacity.

``Pacer`` hands out permits (one per HTTP request) up to a limit. ``fixed`` pacing is a plain
limit of ``max_concurrency``. ``adaptive`` pacing (the default) follows the server, judging
by **goodput**, never by single latencies (one lucky fast reply must not make every ordinary
one look like a queue):

* *Epochs.* Sends are grouped into epochs of about one round trip (``max(MIN_EPOCH, limit)``
  counted sends at one limit). By Little's law an epoch's goodput is ``X = n / l``: the mean
  number in flight *during* its requests' flights (from the integral of the in-flight count
  over time) over their mean latency, taken over the first ``QUORUM`` of its answers.
* *Startup.* The limit starts at ``INITIAL`` (or at the server's slot count when known) and
  is multiplied by ``GROWTH`` per epoch while goodput grows at least ``GAIN_GREW`` times when
  the concurrency grew ``CONC_GREW`` times (TCP BBR's full-pipe test). When it does not, the
  server is saturated: the limit becomes the least concurrency that reached ``KNEE`` of the
  best goodput seen (the knee of the curve; about one server queue's worth above its slots).
* *Steady.* Every ``PROBE_EVERY`` epochs below the ceiling an epoch runs ``PROBE`` higher; it
  is kept, and growth resumes, only when goodput rose ``GAIN_PROBE`` times (so a fallen limit
  recovers). When an epoch's latency has inflated ``DRAIN`` times over the lowest epoch's,
  an epoch runs ``PROBE`` lower; it is kept when goodput held (a queue drained).
* *Time-outs.* The limit never exceeds goodput x ``timeout`` x ``SAFETY``: a server queue of
  that depth drains within a fraction of the time-out, whatever the limit found.
* *Overload.* A time-out, a dropped connection, 503 or 504 halves the limit, once per round
  trip, ``Retry-After`` pauses new sends, and the limit grows back to just below where the
  overload struck (TCP CUBIC's W_max), then probes.
* *Rate limits.* A 429 is a rate limit: waiting helps, fewer in flight would not, so the
  limit stays. Only its own request waits (its ``Retry-After``), unless 429s are
  ``RATE_LIMITED`` of the recent outcomes or the headers say the quota is spent: then every
  send waits. The ``x-ratelimit-*`` headers of every reply are mirrored (``quotas``): sends
  wait for a spent quota's refill instead of being refused. Random 429s at a few percent
  leave everything alone, as a fixed limit would.

The parts: ``pacer`` (permits, epochs, overload and rate limits), ``control`` (the
decisions), ``quotas`` (the rate-limit headers' mirror), ``retries`` (``Retry-After``,
back-off), ``memory`` (limits learned in this process).

The limit never exceeds the ceiling: ``max_concurrency``, or the server's slot count when
known. A pacer given a ``memory`` key (endpoint, model and setting) starts at the limit the
last one with that key reached in this process (sweep jobs and repeated ``harness.evaluate``
calls do not ramp up again), never below the cold start (a collapsed limit is not carried
over), and probes upward at once when below the ceiling.
"""

from harness.judges.transport.pacing.control import INITIAL
from harness.judges.transport.pacing.memory import forget, recall
from harness.judges.transport.pacing.pacer import CONGESTED, OVERLOADED, Pacer, Ticket
from harness.judges.transport.pacing.retries import (
    MAX_RETRY_AFTER,
    backoff,
    duration,
    retry_after,
    should_retry,
)

__all__ = [
    "CONGESTED", "INITIAL", "MAX_RETRY_AFTER", "OVERLOADED", "Pacer", "Ticket", "backoff",
    "duration", "forget", "recall", "retry_after", "should_retry",
]
