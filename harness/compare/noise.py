"""When two runs differ on a timing objective by more than its measurement noise.

A latency or a duration is measured, not computed: the same run twice gives other numbers,
most of all on a shared machine. So on a timing objective (``retrieval_p95_ms``,
``prepare_s``, ...) two runs differ only when the gap is outside the noise band:

* the sampling error of each run's statistic, from what it logged (per-call latencies are
  not stored): with ``n`` calls (``n_samples / run.retrieval_batch_size``, the first call
  left out as the timing does), the standard error of a p-quantile is
  ``sqrt(p (1 - p) / n) / f`` with the density ``f`` read from the logged spread (p95:
  the 5 % of calls between p95 and the slowest, ``f = 0.05 / (max - p95)``; p50: the 45 %
  between p50 and p95); of the mean, ``sd / sqrt(n)`` with ``sd = (p95 - p50) / 1.645``;
  the two runs' errors combine as ``z * sqrt(se_a² + se_b²)`` at the comparison's
  confidence;
* at least ``drift`` (10 %) of the larger value: the run-to-run drift of wall-clock time
  on a machine shared with other work, which no single run's spread shows (and the only
  band of one-shot figures: ``retrieval_max_ms``, ``prepare_s``, ``index_build_s``, ...).

Inside the band the runs tie on that objective; dominance needs a gap beyond it.
Quality metrics (``ndcg_at_10``, ``mean``) are computed from the same data every time and
compare exactly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import NormalDist

from harness.core.metric_names import is_measured as is_measured  # compared with its band
from harness.core.objectives import Objective, known, sort_key

#: Relative run-to-run drift of a timing on a shared machine: the smallest band.
DRIFT = 0.10


def _calls(metrics: Mapping[str, float], params: Mapping[str, str]) -> float | None:
    """The number of timed calls in the percentiles (the first is left out)."""
    n = metrics.get("n_samples")
    try:
        per = float(params.get("run.retrieval_batch_size", "1") or 1)
    except ValueError:
        per = 1.0
    if n is None or not known(n) or per <= 0:
        return None
    calls = math.ceil(n / per)
    return calls - 1 if calls > 1 else calls


def standard_error(name: str, metrics: Mapping[str, float],
                   params: Mapping[str, str]) -> float:
    """The sampling error of a run's ``name`` from its logged spread (0: not estimable,
    or a one-shot figure whose only band is the drift)."""
    n = _calls(metrics, params)
    p50, p95, top = (metrics.get(k) for k in ("retrieval_p50_ms", "retrieval_p95_ms",
                                              "retrieval_max_ms"))
    if not n or not all(known(x) for x in (p50, p95, top)):
        return 0.0
    assert p50 is not None and p95 is not None and top is not None
    if name == "retrieval_p95_ms":
        return math.sqrt(0.05 * 0.95 / n) * max(top - p95, 0.0) / 0.05
    if name == "retrieval_p50_ms":
        return math.sqrt(0.25 / n) * max(p95 - p50, 0.0) / 0.45
    if name == "retrieval_mean_ms":
        return max(p95 - p50, 0.0) / 1.645 / math.sqrt(n)
    return 0.0


def band(name: str, a: tuple[Mapping[str, float], Mapping[str, str]],
         b: tuple[Mapping[str, float], Mapping[str, str]], confidence: float,
         drift: float = DRIFT) -> float:
    """The half-width within which runs ``a`` and ``b`` (metrics, params) tie on ``name``."""
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    within = z * math.hypot(standard_error(name, *a), standard_error(name, *b))
    va, vb = a[0].get(name, 0.0), b[0].get(name, 0.0)
    return max(within, drift * max(abs(va), abs(vb)))


def half_width(name: str, run: tuple[Mapping[str, float], Mapping[str, str]],
               confidence: float, drift: float = DRIFT) -> float:
    """The noise of one run's ``name``: its ± (``z * se``, at least ``drift`` of it)."""
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    return max(z * standard_error(name, *run), drift * abs(run[0].get(name, 0.0)))


def front(points: Sequence[Sequence[float | None]], objectives: Sequence[Objective],
          bands: Sequence[Sequence[Sequence[float]]]) -> list[int]:
    """Indices of the non-dominated points, best first by the first objective (then the
    next). ``bands[i][j][k]``: the tie band of points ``i`` and ``j`` on objective ``k``
    (0: exact). ``a`` dominates ``b`` when it is no worse beyond the band on every
    objective and better beyond it on one; a point with a missing value is never on it."""
    full = [i for i, p in enumerate(points) if all(known(x) for x in p)]

    def beats(i: int, j: int) -> bool:
        better = False
        for k, o in enumerate(objectives):
            gap = float(points[i][k]) - float(points[j][k])  # type: ignore[arg-type]
            gap = gap if o.maximize else -gap
            if gap < -bands[i][j][k]:
                return False
            better = better or gap > bands[i][j][k]
        return better

    on = [i for i in full if not any(beats(j, i) for j in full if j != i)]
    return sorted(on, key=lambda i: sort_key(points[i], objectives) + (i,))
