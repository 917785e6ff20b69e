"""``run.objective``: the logged metrics a job returns to a sweeper, each maximised or
minimised, and the Pareto front of several.

``run.objective=ndcg_at_10`` maximises one metric; ``run.objective=-retrieval_p95_ms``
minimises one; ``run.objective=[ndcg_at_10,-retrieval_p95_ms]`` trades one off against the
other (a multi-objective study, and a Pareto front on the sweep's parent run).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from harness.core.errors import ConfigError
from harness.core.metric_names import HEADLINE

#: The OmegaConf resolver that turns ``run.objective`` into the Optuna sweeper's direction.
RESOLVER = "harness_directions"

Spec = str | Sequence[str]
T = TypeVar("T")
#: What ranks a job: its objective value, its number of unscored samples, its job number
#: (``None`` or NaN where unknown).
RankFields = tuple[float | None, float | None, int | None]


@dataclass(frozen=True)
class Objective:
    """One logged metric and which way is better.

    Args:
        name: The MLflow metric (``ndcg_at_10``, ``retrieval_p95_ms``, ``judge/requests``).
        maximize: Higher is better (a bare name); ``False`` for a ``-name``.
    """

    name: str
    maximize: bool = True

    @property
    def direction(self) -> str:
        """``maximize`` or ``minimize`` (Optuna's words)."""
        return "maximize" if self.maximize else "minimize"

    def __str__(self) -> str:
        return self.name if self.maximize else f"-{self.name}"

    def better(self, a: float, b: float) -> bool:
        """Whether value ``a`` is strictly better than ``b``."""
        return a > b if self.maximize else a < b


def parse(value: Spec, where: str = "run.objective") -> list[Objective]:
    """``ndcg_at_10``, ``-retrieval_p95_ms``, ``[ndcg_at_10,-retrieval_p95_ms]`` or the
    same comma-separated (``ndcg_at_10,-retrieval_p95_ms``) as objectives, in order.

    Raises:
        ConfigError: An empty value, a name that is not a string, ``-`` alone or a name
            given twice (one line, naming ``where``).
    """
    example = "e.g. ndcg_at_10 or [ndcg_at_10,-retrieval_p95_ms] (a leading - minimises)"
    if isinstance(value, str):
        items: list[object] = list(value.split(",")) if value.strip() else []
    elif isinstance(value, Sequence):
        items = list(value)
    else:
        raise ConfigError(f"{where}: expected a metric name or a list of them, got {value!r}; "
                          f"{example}")
    objectives: list[Objective] = []
    for item in items:
        if not isinstance(item, str):
            raise ConfigError(f"{where}: expected metric names, got {item!r}; {example}")
        text = item.strip()
        name = text.removeprefix("-").strip()
        if not name or name.startswith("-"):
            raise ConfigError(f"{where}: bad objective {item!r} in {value!r}; {example}")
        if name in {o.name for o in objectives}:
            raise ConfigError(f"{where}: {name!r} is named twice; name each metric once")
        objectives.append(Objective(name, not text.startswith("-")))
    if not objectives:
        raise ConfigError(f"{where}: no objective; name a logged metric, {example}")
    return objectives


def spec(value: Spec) -> str:
    """The objectives as one comma-separated string (``ndcg_at_10,-retrieval_p95_ms``)."""
    return ",".join(str(o) for o in parse(value))


def with_headline(value: Spec, headlines: Iterable[str]) -> str:
    """``value`` with ``headline`` replaced by the metric that is the headline of every run
    ranked (``headlines``: each run's, e.g. ``ppi_mean`` when all have human labels); by
    ``mean`` when they differ (runs with and without labels: one quantity ranks them all).
    A name that the replacement repeats is kept once."""
    found = set(headlines)
    concrete = found.pop() if len(found) == 1 else "mean"
    out: list[Objective] = []
    for o in parse(value):
        named = Objective(concrete if o.name == HEADLINE else o.name, o.maximize)
        if named.name not in {x.name for x in out}:
            out.append(named)
    return ",".join(str(o) for o in out)


def directions(value: Spec) -> list[str]:
    """Each objective's direction, ``maximize`` or ``minimize``, in order."""
    return [o.direction for o in parse(value)]


def _number(value: object) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return math.nan


def job_value(metrics: Mapping[str, float | None], value: Spec) -> float | tuple[float, ...]:
    """What a job returns to the sweeper: the raw value of each objective's metric (NaN
    when missing); one float for a single objective, a tuple for several. The sign is
    never flipped: the sweeper's direction says which way is better."""
    found = tuple(_number(metrics.get(o.name)) for o in parse(value))
    return found[0] if len(found) == 1 else found


def known(x: float | None) -> bool:
    """Whether ``x`` is a number (not missing, not NaN)."""
    return x is not None and not math.isnan(x)


def dominates(a: Sequence[float], b: Sequence[float], objectives: Sequence[Objective]) -> bool:
    """Whether point ``a`` is at least as good as ``b`` in every objective and strictly
    better in one."""
    pairs = list(zip(objectives, a, b, strict=True))
    return all(not o.better(y, x) for o, x, y in pairs) and any(o.better(x, y)
                                                                 for o, x, y in pairs)


def pareto_front(points: Sequence[Sequence[float | None]],
                 objectives: Sequence[Objective]) -> list[int]:
    """Indices of the non-dominated points, best first by the first objective (then the
    next). A point with a missing or NaN value is never on the front; equal points are
    both on it (neither dominates the other)."""
    full = [i for i, p in enumerate(points) if len(p) == len(objectives)
            and all(known(x) for x in p)]
    front = [i for i in full
             if not any(dominates(_floats(points[j]), _floats(points[i]), objectives)
                        for j in full if j != i)]
    return sorted(front, key=lambda i: sort_key(points[i], objectives) + (i,))


def sort_key(point: Sequence[float | None],
             objectives: Sequence[Objective]) -> tuple[float, ...]:
    """Sort key of a point, best first by each objective in turn (a missing or NaN value
    after any number)."""
    return tuple(math.inf if x is None or math.isnan(x) else -x if o.maximize else x
                 for o, x in zip(objectives, point, strict=True))


def _floats(point: Sequence[float | None]) -> list[float]:
    return [math.nan if x is None else float(x) for x in point]


def rank_key(value: float | None, n_unscored: float | None, job_num: int | None,
             maximize: bool = True, then: tuple[float, ...] = ()) -> tuple[float, ...]:
    """Sort key, best first: the best objective (the highest, or with ``maximize=False``
    the lowest; a missing or NaN one last), then the further objectives' ``then`` (see
    ``harness.core.objectives.sort_key``: with several, a tie on the first goes to the Pareto
    front), then fewer unscored samples, then the earlier job number. The one tie rule of
    the sweep's best child, its console summary and ``harness.compare``."""
    return (
        float(not known(value)),
        (-value if maximize else value) if value is not None and known(value) else 0.0,
        *then,
        n_unscored if n_unscored is not None and known(n_unscored) else math.inf,
        float(job_num) if job_num is not None else math.inf,
    )


def ranked(items: Iterable[T], fields: Callable[[T], RankFields], maximize: bool = True,
           then: Callable[[T], tuple[float, ...]] | None = None) -> list[T]:
    """``items`` best first by ``rank_key`` of ``fields(item)`` (and ``then(item)``)."""
    return sorted(items, key=lambda item: rank_key(*fields(item), maximize,
                                                   then(item) if then else ()))


def best_job(items: Iterable[T], fields: Callable[[T], RankFields], maximize: bool = True,
             then: Callable[[T], tuple[float, ...]] | None = None) -> T | None:
    """The best of ``items`` by ``rank_key`` (``None`` when none has an objective value)."""
    order = ranked(items, fields, maximize, then)
    return order[0] if order and known(fields(order[0])[0]) else None


def _directions_resolver(value: object) -> str | list[str]:
    """``${harness_directions:${run.objective}}``: ``maximize`` or ``minimize`` for one
    objective (a single-objective study), a list for several. A bad ``run.objective``
    gives ``maximize``: each job then says what is wrong in one line (``check_objective``),
    where an error here would be a traceback from the sweeper's instantiation."""
    names = value if isinstance(value, str) else [
        str(v) for v in (value if isinstance(value, Sequence) else [value])]
    try:
        found = directions(names)
    except ConfigError:
        return "maximize"
    return found[0] if len(found) == 1 else found


def register_resolver() -> None:
    """Register ``harness_directions`` with OmegaConf (once; later calls do nothing), for
    the sweeper configs' ``direction: ${harness_directions:${run.objective}}``."""
    from omegaconf import OmegaConf

    if not OmegaConf.has_resolver(RESOLVER):
        OmegaConf.register_resolver(RESOLVER, _directions_resolver)
