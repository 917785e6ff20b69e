"""The paired difference of two runs with human labels, by PPI++.

The bootstrap interval and the sign-flip test of ``compare`` take the judge's scores as
the truth: a judge lenient on one run's chunks only makes a difference that people would
not see. When both runs have human labels on the same samples (``human_score`` beside the
compared variant's ``score`` in ``samples.jsonl``), the difference is estimated as a PPI++
mean (``harness.confidence.ppi.ppi_mean_ci``, power-tuned): per sample ``d = score_a -
score_b`` by the judge on every sample both scored, and by people on those labelled in
both; the interval is valid whatever the judge's error. Then the verdict (and the gate)
uses it, and says so; with labels on different samples it falls back to the bootstrap
interval with a note.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from statistics import NormalDist
from typing import Any

from harness.compare.pairing import (
    BOOTSTRAP,
    PPI,
    is_ppi,
    judged_metric,
    metric_kind,
    variant_metric,
)
from harness.compare.store import per_query


def scores_compared(run: Any, metric: str) -> bool:
    """Whether ``metric`` of ``run`` is a variant's mean of per-sample scores (``mean``,
    ``<variant>/mean``, or a PPI++ mean of them): the number human labels can score too."""
    metric = judged_metric(metric)
    named = variant_metric(run, metric)
    return metric == "mean" or (named is not None and named[1] == "mean")


def headline_metric(runs: Sequence[Any], notes: list[str]) -> str:
    """What ``metric=headline`` (compare's default) ranks and pairs ``runs`` by: the metric
    that is every run's headline (``ppi_mean`` when all have human labels, said in a note);
    ``mean`` when their headlines differ (a note says so)."""
    from harness.core.metric_names import headline_of

    heads = sorted({headline_of(r.data.metrics, r.data.tags) for r in runs})
    if len(heads) == 1:
        if is_ppi(heads[0]):
            notes.append(f"ranked by {heads[0]}, the runs' headline: the PPI++ mean, human "
                         "labels correcting the judge, with its PPI++ interval; metric=mean "
                         "ranks by the judge alone")
        return heads[0]
    notes.append(f"the runs' headlines differ ({', '.join(heads)}: not every run has human "
                 "labels), so mean, the judge alone, ranks them all")
    return "mean"


def ppi_intervals(rows: Sequence[dict[str, Any]], c: Any, runs: Sequence[Any],
                  values: Mapping[str, Any], metric: str, out: Path, level: float,
                  notes: list[str]) -> None:
    """Set each row's ``ci`` to its run's PPI++ interval at ``level`` when ``metric`` is a
    PPI++ mean (the interval of the row's value, never the bootstrap interval of the
    judge's scores): the run's own (``ci_low``, ``ci_high``: its bootstrap below 50 labels,
    its stratified interval with ``run.strata``) when it was made at ``level``, else from
    the judge's ``score`` and the people's ``human_score`` in its ``samples.jsonl``, as
    the run computes it from 50 labels; ``ci_method`` says which."""
    from harness.confidence.ppi import ppi_mean_ci

    if not is_ppi(metric):
        return
    by_id = {r.info.run_id: r for r in runs}
    without = []
    for row in rows:
        run = by_id[row["run_id"]]
        row["ci"], row["ci_method"] = None, PPI
        own = logged_interval(run, metric, level)
        if own is not None:
            row["ci"] = own
            continue
        judged, human = values.get(row["run_id"]) or {}, human_values(c, run, metric, out)
        labelled = [i for i in (human or {}) if i in judged]
        rest = [v for i, v in judged.items() if i not in (human or {})]
        if human is None or len(labelled) < 2:
            without.append(row["run_name"])
        elif len(rest) < 2:  # all labelled (or all but one): the labels' own interval
            from harness.confidence.ppi import classical_ci

            row["ci"] = classical_ci([human[i] for i in labelled], level)
        else:
            row["ci"] = ppi_mean_ci([human[i] for i in labelled],
                                    [judged[i] for i in labelled], rest, level)[1]
    if without:
        notes.append(f"no human_score in samples.jsonl of {', '.join(without)}: no PPI++ "
                     f"interval for {metric}")


def logged_interval(run: Any, metric: str, level: float) -> list[float] | None:
    """The interval ``run`` logged beside the PPI++ mean ``metric`` (``ci_low``,
    ``ci_high``, or ``<variant>/ci_low`` ...) when its ``run.confidence_level`` is
    ``level``; None otherwise."""
    lead = metric[: -len("ppi_mean")]
    logged = run.data.metrics
    try:
        made_at = float(run.data.params.get("run.confidence_level", "nan"))
    except ValueError:
        return None
    low, high = logged.get(f"{lead}ci_low"), logged.get(f"{lead}ci_high")
    if low is None or high is None or not math.isclose(made_at, level):
        return None
    return [float(low), float(high)]


def human_values(c: Any, run: Any, metric: str, out: Path) -> dict[str, float] | None:
    """``{id: human_score}`` of the compared variant in ``run``'s ``samples.jsonl`` (the
    row's own for a run of one variant, ``variants.<name>`` for several); ``None``: none."""
    return per_query(c, run.info.run_id, "human_score", out,
                     metric_kind(run, judged_metric(metric)))


def normal_p(mean: float, ci: Sequence[float], level: float) -> float:
    """Two-sided p-value of ``mean == 0`` from a normal interval ``ci`` at ``level``
    (``ppi_py``'s intervals are ``mean ± z·se``): below ``1 - level`` exactly when the
    interval leaves out 0."""
    z = NormalDist().inv_cdf(0.5 + level / 2)
    se = (ci[1] - ci[0]) / (2 * z)
    if se <= 1e-12:  # no spread (people saw the same chunks in both runs): no rounding noise
        return 1.0 if abs(mean) <= 1e-12 else 0.0
    return 2 * (1 - NormalDist().cdf(abs(mean) / se))


def paired_ppi(
    judge_a: Mapping[str, float], judge_b: Mapping[str, float],
    human_a: Mapping[str, float], human_b: Mapping[str, float], level: float = 0.95,
    seed: int = 0,
) -> dict[str, Any] | None:
    """The PPI++ mean of ``a - b`` and its interval on the ids both judged, the human
    differences on the ids labelled in both; ``None`` when fewer than 2 are.

    With fewer than ``BOOTSTRAP_BELOW`` pairs labelled in both, the intervals and the
    p-value come from the BCa bootstrap a run uses there (``confidence.bootstrap``, seeded
    with ``seed``), since the central-limit ones cover less often than they say."""
    from harness.confidence import bootstrap
    from harness.confidence.ppi import classical_ci, ppi_mean_ci

    ids = sorted(judge_a.keys() & judge_b.keys())
    both = [i for i in ids if i in human_a and i in human_b]
    if len(both) < 2:
        return None
    labelled = set(both)
    y = [human_a[i] - human_b[i] for i in both]
    yhat = [judge_a[i] - judge_b[i] for i in both]
    rest = [judge_a[i] - judge_b[i] for i in ids if i not in labelled]
    small = len(y) < bootstrap.BOOTSTRAP_BELOW
    note = None
    if small:
        labels_ci, labels_p = bootstrap.bca_test(y, yhat, rest, level, seed, judge_weight=False)
    else:
        labels_ci = classical_ci(y, level)
    if len(rest) < 2:  # nothing (or one sample) for the judge to add
        mean, ci = math.fsum(y) / len(y), labels_ci
        p = labels_p if small else normal_p(mean, ci, level)
        note = "every paired sample (or all but one) is labelled: the interval is the labels'"
    else:
        mean, ci = ppi_mean_ci(y, yhat, rest, level)
        if small:
            ci, p = bootstrap.bca_test(y, yhat, rest, level, seed)
        else:
            p = normal_p(mean, ci, level)
    judged = yhat + rest
    return {
        "method": PPI, "level": level, "mean_diff": mean, "ci": ci,
        "p_value": p, "p_method": "bootstrap" if small else "normal",
        "interval_method": "bootstrap" if small else "clt",
        "n_labelled": len(both), "n_pairs": len(ids),
        "labelled_a_only": sum(1 for i in ids if i in human_a and i not in labelled),
        "labelled_b_only": sum(1 for i in ids if i in human_b and i not in labelled),
        "labels_only_mean_diff": math.fsum(y) / len(y), "labels_only_ci": labels_ci,
        "judge_mean_diff": math.fsum(judged) / len(judged), "note": note,
    }


def attach(
    test: dict[str, Any], c: Any, runs: Sequence[Any], values: Mapping[str, Any], metric: str,
    out: Path, level: float, notes: list[str], seed: int = 0,
) -> None:
    """Add ``ppi`` (``paired_ppi``) and ``interval_used`` to a paired ``test`` when its
    runs' samples have human labels; a note when they have some that cannot be used."""
    test["interval_used"] = BOOTSTRAP
    by_id = {r.info.run_id: r for r in runs}
    a, b = by_id.get(test["run_a"]["id"]), by_id.get(test["run_b"]["id"])
    if a is None or b is None or not all(scores_compared(r, metric) for r in (a, b)):
        return
    ha, hb = (human_values(c, r, metric, out) for r in (a, b))
    if not ha and not hb:
        return
    la, lb = test.get("labels", ["#1", "#2"])
    fallback = ("the verdict uses the bootstrap interval and the sign-flip test, which take "
                "the judge as right")
    if not (ha and hb):
        has = la if ha else lb
        notes.append(f"only {has} has human labels (human_score): a PPI++ difference needs "
                     f"labels on the same samples of both runs; {fallback}")
        return
    ppi = paired_ppi(values[a.info.run_id] or {}, values[b.info.run_id] or {}, ha, hb, level,
                     seed)
    if ppi is None:
        both = len(ha.keys() & hb.keys())
        notes.append(f"human labels on different samples ({len(ha)} in {la}, {len(hb)} in "
                     f"{lb}, {both} in both and scored by both): no PPI++ difference; "
                     f"{fallback}")
        return
    test.update(ppi=ppi, interval_used=PPI)
    if ppi["labelled_a_only"] or ppi["labelled_b_only"]:
        notes.append(f"PPI++ uses the {ppi['n_labelled']} samples labelled in both runs; "
                     f"{ppi['labelled_a_only']} labelled in {la} only and "
                     f"{ppi['labelled_b_only']} in {lb} only count as unlabelled")
    if ppi["note"]:
        notes.append(f"PPI++: {ppi['note']}")


def ppi_lines(test: Mapping[str, Any], pct: str) -> list[str]:
    """The lines ``render`` prints under the bootstrap one: the PPI++ difference and which
    interval the verdict uses (none when no run had usable labels)."""
    ppi = test.get("ppi")
    if test.get("interval_used") != PPI or not isinstance(ppi, Mapping):
        return []
    a, b = test.get("labels", ["#1", "#2"])
    lo, hi = ppi["ci"]
    lab_lo, lab_hi = ppi["labels_only_ci"]
    return [
        f"  PPI++ difference {ppi['mean_diff']:+.4f} ({a} - {b})  {pct} [{lo:+.4f}, {hi:+.4f}]"
        f"  p ({ppi['p_method']}) {ppi['p_value']:.4f}  on {ppi['n_labelled']} of "
        f"{ppi['n_pairs']} pairs labelled in both",
        f"  labels only      {ppi['labels_only_mean_diff']:+.4f}  {pct} [{lab_lo:+.4f}, "
        f"{lab_hi:+.4f}]",
        "  the verdict uses the PPI++ interval: human labels correct the judge's difference "
        "(the bootstrap interval above takes the judge as right)",
    ]
