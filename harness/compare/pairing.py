"""What may be paired: runs named by ``baseline=``/``candidate=`` (id, name or override
string), the groups a ranking is split into (dataset, metric), and the CI gate."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from harness.core.errors import ConfigError, closest

_RUN_ID = re.compile(r"[0-9a-f]{32}")
#: Metrics whose value does not depend on the context-precision variant.
_RETRIEVAL = ("recall_at_", "ndcg_at_", "precision_at_", "mrr", "retrieval_depth")


def metric_kind(run: Any, metric: str) -> str:
    """What ``metric`` measures in ``run``: the variant (``choice.metric``) for context
    precision's numbers, ``retrieval`` for retrieval metrics (the same for every variant)."""
    if metric.startswith(_RETRIEVAL):
        return "retrieval"
    return str(run.data.tags.get("choice.metric", "?"))


def identity(run: Any, metric: str) -> tuple[str, str]:
    """``(dataset.sha256, metric_kind)``: runs are ranked or paired only within one."""
    return str(run.data.tags.get("dataset.sha256", "?")), metric_kind(run, metric)


def split_overrides(spec: str) -> list[tuple[str, str]]:
    """``a=1,b.c=x,y`` as ``[(a, 1), (b.c, x,y)]`` (a comma starts a new override only
    before ``key=``); ``[]`` when ``spec`` is not an override string."""
    parts = re.split(r",(?=[\w.+~/@-]+=)", spec)
    if not all("=" in p for p in parts):
        return []
    return [(k.lstrip("+~"), v) for k, _, v in (p.partition("=") for p in parts)]


def matches(run: Any, overrides: Sequence[tuple[str, str]]) -> bool:
    """Whether ``run`` was made with ``overrides`` (its params, or ``choice.*`` tags for a
    config group)."""
    p, t = run.data.params, run.data.tags
    return bool(overrides) and all(p.get(k, t.get(f"choice.{k}")) == v for k, v in overrides)


def resolve(runs: Sequence[Any], get_run: Any, spec: str, role: str) -> tuple[Any, str | None]:
    """The run ``role=spec`` names: a run id, else the newest of ``runs`` with that run name,
    else the newest made with those overrides; and a note when several matched.

    Raises:
        ConfigError: No run matches.
    """
    if _RUN_ID.fullmatch(spec):
        try:
            return get_run(spec), None
        except Exception:  # noqa: S110 - not an id of this store: try it as a name
            pass
    found = [r for r in runs if r.info.run_name == spec]
    if not found:
        found = [r for r in runs if matches(r, split_overrides(spec))]
    if not found:
        names = {r.info.run_name for r in runs if r.info.run_name}
        raise ConfigError(
            f"{role}={spec!r}: no finished run has that id, name or overrides"
            f"{closest(spec, names)}; give a run id, a run name or key=value,... overrides"
        )
    found.sort(key=lambda r: r.info.start_time or 0, reverse=True)
    note = (f"{role}: {len(found)} runs match {spec!r}; took the newest, "
            f"{found[0].info.run_id}") if len(found) > 1 else None
    return found[0], note


def check_pair(base: Any, cand: Any, metric: str, force: bool) -> list[str]:
    """Refuse (``ConfigError``, one line) a baseline and candidate that measured different
    things, unless ``force``; then the notes to print about what differs."""
    (bsha, bkind), (csha, ckind) = identity(base, metric), identity(cand, metric)
    problems = []
    if bkind != ckind:
        problems.append(f"metric ({bkind} vs {ckind}: their {metric} are different quantities)")
    if bsha != csha:
        problems.append(f"dataset (dataset.sha256 {bsha[:12]} vs {csha[:12]})")
    if problems and not force:
        raise ConfigError(
            f"baseline and candidate differ in {' and '.join(problems)}; a paired test of "
            "them would mislead: compare runs of one dataset and metric, or pass force=true"
        )
    return [f"forced: baseline and candidate differ in {p}" for p in problems]


def gate(test: dict[str, Any], alpha: float, min_delta: float) -> tuple[bool, str]:
    """``fail_if_worse``: whether the candidate is worse than the baseline (a mean paired
    difference below ``-min_delta`` with p < ``alpha``), and the one line that says so."""
    d, p = test["mean_diff"], test["p_value"]
    worse = d < -min_delta and p < alpha
    floor = f"-{min_delta:g}" if min_delta else "0"
    why = (f"candidate - baseline = {d:+.4f} on {test['n_pairs']} pairs, p = {p:.4g}; "
           f"fails when below {floor} with p < {alpha:g}")
    return worse, f"gate {'FAILED: the candidate is worse' if worse else 'passed'}: {why}"
