"""Floors on a run's numbers, the worst samples of a failing one, and what a test session
checked (for the plugin's end-of-session summary).

Imports only the standard library at module level: the pytest plugin imports this module in
every session of anyone who installs the package.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.api import EvaluationResult

#: Samples a failure prints, by default.
WORST = 5


class FloorError(AssertionError):
    """A run's number is below the floor a test set (pytest shows it as a failure)."""


@dataclass
class Check:
    """One floor check of a test session.

    Attributes:
        label: The test that made it (or the caller's label).
        metric: The variant that scored.
        summary: ``summary.json`` of the run.
        floors: The floors asked for.
        failed: ``name: value < floor`` for each floor missed.
    """

    label: str
    metric: str
    summary: dict[str, Any]
    floors: dict[str, float]
    failed: list[str] = field(default_factory=list)

    def line(self) -> str:
        """One line for the session summary."""
        values = floor_values(self.summary)
        parts = ["{}={} (floor {})".format(shown_name(self.summary, name),
                                           *_apart(values.get(name), floor))
                 for name, floor in self.floors.items()]
        lead = headline_part(self.summary)
        if lead and "headline" not in self.floors:
            parts.insert(0, lead)
        judge = self.summary.get("judge")
        if isinstance(judge, dict):
            parts.append(f"judge requests={judge.get('requests')} "
                         f"cache hits={judge.get('cache_hits')}")
        verdict = "FAIL" if self.failed else "PASS"
        return (f"{verdict} {self.label} {self.metric} n={self.summary.get('n_samples')} "
                + " ".join(parts))


#: The checks made and not yet reported, per running pytest session, innermost last
#: (pytester runs sessions inside a session); checks made outside a session go to the bottom.
_SESSIONS: list[list[Check]] = [[]]


def begin_session() -> None:
    """A test session starts: its checks are collected apart from any outer session's."""
    _SESSIONS.append([])


def end_session() -> None:
    """The session ends: forget what it did not report."""
    if len(_SESSIONS) > 1:
        _SESSIONS.pop()


def take() -> list[Check]:
    """The checks made since the last ``take`` (the plugin puts them on the test's report,
    so that the summary sees them whichever process ran the test)."""
    made = list(_SESSIONS[-1])
    _SESSIONS[-1].clear()
    return made


def current_test() -> str:
    """The node id of the running pytest test (pytest's ``PYTEST_CURRENT_TEST``), else ``""``."""
    return os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]


def checked_floors(floors: Any, where: str = "floors") -> dict[str, float]:
    """``floors`` as ``{name: number}``; a ``ConfigError`` naming the bad entry."""
    from harness.core.errors import ConfigError

    if not isinstance(floors, Mapping) or not floors:
        raise ConfigError(f"{where}: expected a mapping of metric name to its lowest accepted "
                          f"value, e.g. {{'mean': 0.6}}, got {floors!r}")
    out = {}
    for name, value in floors.items():
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{where}: a metric name must be a non-empty string, got {name!r}")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            raise ConfigError(f"{where}[{name!r}]: expected a number, got {value!r}")
        out[name] = float(value)
    return out


def observed(summary: Mapping[str, Any]) -> dict[str, float | None]:
    """The numbers a floor may name: ``mean``, ``success_rate`` (contextual_precision) and
    the retrieval metrics (``mrr``, ``recall_at_k``, ``ndcg_at_k``, ...); ``floor_values``
    adds the headline's."""
    values: dict[str, float | None] = {"mean": summary.get("mean")}
    if "success_rate" in summary:
        values["success_rate"] = summary["success_rate"]
    retrieval = summary.get("retrieval") or {}
    values.update({k: v for k, v in retrieval.items() if k != "n_queries"})
    return values


def floor_values(summary: Mapping[str, Any]) -> dict[str, float | None]:
    """Every number a floor may name: ``observed``'s, ``headline`` (the run's headline:
    with human labels its PPI++ mean, else its mean; ``mean`` is then the judge alone)
    and, with human labels, ``ppi_mean``, ``ci_low`` and ``ci_high``."""
    head = summary.get("headline")
    values = observed(summary)
    values["headline"] = head.get("value") if isinstance(head, Mapping) else values["mean"]
    block = labelled_block(summary)
    if block is not None:
        low, high = block.get("ci") or (None, None)
        values.update(ppi_mean=block.get("mean"), ci_low=low, ci_high=high)
    return values


def labelled_block(summary: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``confidence`` block of the run's headline (its first variant's), or ``None``
    (no human labels)."""
    variants = summary.get("variants")
    if isinstance(variants, Mapping) and variants:
        first = next(iter(variants.values()))
        block = first.get("confidence") if isinstance(first, Mapping) else None
    else:
        block = summary.get("confidence")
    return block if isinstance(block, Mapping) else None


def shown_name(summary: Mapping[str, Any], name: str) -> str:
    """``name`` as a floor's line says it: with human labels ``mean`` is the judge alone and
    ``headline`` the PPI++ mean, and the line says so."""
    if labelled_block(summary) is None:
        return name
    return {"mean": "mean (judge alone)", "headline": "headline (PPI++ mean)"}.get(name, name)


def missed(summary: Mapping[str, Any], floors: Mapping[str, float]) -> list[str]:
    """``name value < floor`` for each floor the run missed; a ``ConfigError`` for a floor
    on a number the run did not compute."""
    from harness.core.errors import ConfigError, closest

    values = floor_values(summary)
    dropped = (summary.get("retrieval_cutoffs") or {}).get("dropped") or []
    out = []
    for name, floor in floors.items():
        if name in dropped:
            depth = summary["retrieval_cutoffs"].get("depth")
            raise ConfigError(
                f"floors[{name!r}]: not computed: its cut-off is above the longest retrieved "
                f"list ({depth} chunks); lower the cut-off or set run.retrieval_beyond_depth=true"
            )
        if name not in values:
            raise ConfigError(f"floors[{name!r}]: this run has no such number"
                              f"{closest(name, values)}; it has {', '.join(sorted(values))}")
        value = values[name]
        if value is None or not isinstance(value, (int, float)) or math.isnan(value) \
                or value < floor:  # NaN compares false: it passes no floor
            shown, low = _apart(value, floor)
            out.append(f"{shown_name(summary, name)} {shown}"
                       f"{' (not a number)' if shown == 'nan' else ''} < {low}")
    return out


def headline_part(summary: Mapping[str, Any]) -> str | None:
    """The session line's first figure for a run with human labels: its headline, the
    PPI++ mean and interval (``headline ppi_mean=0.6425 [0.4480, 0.8370]``); ``None``
    otherwise (the floors' figures lead)."""
    head = summary.get("headline")
    if labelled_block(summary) is None or not isinstance(head, Mapping):
        return None
    value, ci = head.get("value"), head.get("interval")
    if not isinstance(value, float) or not ci:
        return None
    return f"headline {head.get('name')}={value:.4f} [{ci[0]:.4f}, {ci[1]:.4f}]"


def worst_rows(rows: Sequence[Mapping[str, Any]], n: int = WORST) -> list[Mapping[str, Any]]:
    """The ``n`` worst rows: unscored first, then by score, ties in input order."""
    order = sorted(range(len(rows)), key=lambda i: (rows[i].get("score") is not None,
                                                    rows[i].get("score") or 0.0, i))
    return [rows[i] for i in order[:max(n, 0)]]


def failure_text(result: EvaluationResult, metric: str, failed: list[str], n: int) -> str:
    """What a failing check prints: the floors missed, then the worst samples, each read
    out chunk by chunk and then as its ``samples.jsonl`` row."""
    s = result.summary
    lines = [f"harness {metric}: below the floor: {'; '.join(failed)} "
             f"({s.get('n_samples')} samples, {s.get('n_unscored')} unscored)"]
    worst = worst_rows(result.rows, n)
    if worst:
        lines.append(f"the {len(worst)} worst samples (rows of samples.jsonl):")
    for row in worst:
        lines.append(f"- sample {row.get('id')}: score {_num(row.get('score'))}"
                     + (f", unscored: {row['error']}" if row.get("error") else "")
                     + (f"; question: {row['question']!r}" if row.get("question") else ""))
        for rank, chunk in enumerate(row.get("chunks") or [], 1):
            reason = f" ({chunk['reason']})" if chunk.get("reason") else ""
            lines.append(f"    {rank}. verdict {chunk.get('verdict')} [{chunk.get('id')}] "
                         f"{str(chunk.get('text', ''))[:80]!r}{reason}")
        lines.append("  " + json.dumps(row, ensure_ascii=False, default=str))
    return "\n".join(lines)


def record(check: Check) -> None:
    """Keep ``check`` for the running session's summary."""
    _SESSIONS[-1].append(check)


def judge(result: EvaluationResult, metric: str, floors: Mapping[str, float], label: str | None,
          worst: int) -> None:
    """Record the check; raise ``FloorError`` with the worst samples when a floor is missed."""
    __tracebackhide__ = True
    failed = missed(result.summary, floors)
    record(Check(label or current_test() or metric, metric, result.summary, dict(floors),
                 failed))
    if failed:
        raise FloorError(failure_text(result, metric, failed, worst))


def _num(value: Any) -> str:
    return "none" if value is None else f"{value:.4g}" if isinstance(value, float) else str(value)


def _apart(value: Any, floor: float) -> tuple[str, str]:
    """``value`` and ``floor`` with as many digits as tell them apart (4 at least):
    ``0.9999999999`` below a floor of 1 is not ``1 < 1``."""
    if not isinstance(value, float) or value == floor or math.isnan(value):
        return _num(value), _num(floor)
    for digits in range(4, 18):
        shown = f"{value:.{digits}g}", f"{floor:.{digits}g}"
        if shown[0] != shown[1]:
            return shown
    return repr(value), repr(floor)
