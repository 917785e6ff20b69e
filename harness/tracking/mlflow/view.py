"""What a run shows in MLflow's runs list (checked against MLflow 3.17 at 1,400 px).

The link the console prints opens the experiment's *Evaluation runs* table
(``#/experiments/ID/evaluation-runs``): it shows every logged metric as a column without a
saved view, so no "You're viewing a shared view" banner (that banner comes with any link
that carries ``viewStateShareKey``). Its metric columns follow the order the runs logged
them in (the first listed run's first), so the harness logs the key metrics first: the
run's headline (``harness.headline``: with human labels its PPI++ mean and interval,
``ppi_mean``, ``ci_low``, ``ci_high``, which then come before ``mean``, the judge alone),
``KEY_METRICS``, then the run's objective, then the rest. Its run-name column is narrow,
so a run's name starts with what sets it apart from the experiment's latest runs
(``distinguishing_first``), and a run whose mean covers few of its samples says so first
(``coverage_marks``: a name prefix, a tag, a line atop its description).

Logged values are never changed: only their order, names and tags. Importing this module
imports nothing from MLflow.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from harness.core.metric_names import HEADLINE
from harness.tracking.names import SEP

#: Logged first, in this order: the answer and how many samples it covers.
KEY_METRICS = ("mean", "n_scored", "n_unscored", "n_samples")
#: A run's mean covers less than this share of its samples: it is marked low-coverage.
LOW_COVERAGE = 0.9
LOW_TAG = "harness.low_coverage"
NOTE_TAG = "mlflow.note.content"
#: The mark a low-coverage run's name starts with.
WARN = "⚠"
#: How many of the experiment's latest runs a new run's name is compared with.
RECENT_RUNS = 20


def _objectives(objective: str) -> list[str]:
    """The metric names of a ``run.objective`` value (``[a,-b]``, ``a,-b``, ``a``)."""
    text = objective.strip().strip("[]")
    return [p.strip().strip("'\" ").lstrip("-") for p in text.split(",") if p.strip()]


def headline_columns(headline: str) -> tuple[str, ...]:
    """The columns that show the headline ``headline`` (a logged metric): a PPI++ mean
    with its interval's bounds beside it (``ppi_mean``, ``ci_low``, ``ci_high``, or the
    same under ``<variant>/``); ``mean`` alone."""
    prefix, _, name = headline.rpartition("/")
    if name != "ppi_mean":
        return (headline,)
    lead = f"{prefix}/" if prefix else ""
    return (headline, f"{lead}ci_low", f"{lead}ci_high")


def metric_order(metrics: Iterable[str], objective: str = "", headline: str = "mean"
                 ) -> list[str]:
    """``metrics`` with the headline first (``headline_columns``), then ``KEY_METRICS``,
    then the objective's metrics (``headline`` among them stands for the headline), then
    the rest in their own order."""
    names = list(dict.fromkeys(metrics))
    wanted = [headline if m == HEADLINE else m for m in _objectives(objective)]
    first = [m for m in (*headline_columns(headline), *KEY_METRICS, *wanted) if m in names]
    first = list(dict.fromkeys(first))
    return first + [m for m in names if m not in first]


def coverage_marks(metrics: Mapping[str, float], tags: Mapping[str, str]) -> tuple[
        dict[str, str], str]:
    """For a run whose mean covers fewer than ``LOW_COVERAGE`` of its samples: its tags
    (``harness.low_coverage``, its description with a first line saying so) and its name's
    prefix (``⚠ 7/32·``); ``({}, "")`` for any other run."""
    scored, total = metrics.get("n_scored"), metrics.get("n_samples")
    if scored is None or not total or scored >= LOW_COVERAGE * total:
        return {}, ""
    share = f"{int(scored)}/{int(total)}"
    line = (f"**Low coverage: the mean covers {int(scored)} of {int(total)} samples** "
            f"(less than {LOW_COVERAGE:.0%}); the unscored rows and why are in samples.jsonl.")
    note = tags.get(NOTE_TAG, "")
    marks = {LOW_TAG: f"{share} samples scored", NOTE_TAG: f"{line}\n\n{note}" if note else line}
    return marks, f"{WARN} {share}{SEP}"


def distinguishing_first(name: str, others: Iterable[str]) -> str:
    """``name``'s parts (``·``-separated) reordered for a narrow column: first those that
    not every one of ``others`` (the experiment's latest run names) shares, the rarer
    among them first, then the shared ones, each in its own order otherwise; ``name``
    unchanged when there are no others or nothing to move."""
    seen = [set(other.split(SEP)) for other in others]
    mine = name.split(SEP)
    count = {p: sum(p in parts for parts in seen) for p in mine}
    own = sorted((p for p in mine if count[p] < len(seen)), key=count.__getitem__)
    if not seen or not own or len(own) == len(mine):
        return name
    return SEP.join(own + [p for p in mine if count[p] == len(seen)])
