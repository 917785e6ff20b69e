"""What may be paired: runs named by ``baseline=``/``candidate=`` (id, name or override
string), the groups a ranking is split into (dataset, metric), and the CI gate."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from harness.core.errors import ConfigError, closest
from harness.core.metric_names import VARIANT_METRICS, is_retrieval

_RUN_ID = re.compile(r"[0-9a-f]{32}")


def variants_of(run: Any) -> list[str]:
    """The variants ``run`` scored, in order (``choice.metric``: ``id_ranked`` or
    ``[id_ranked,non_llm]``); the first is its headline (``mean``, ``score``)."""
    choice = str(run.data.tags.get("choice.metric", "?"))
    if choice.startswith("[") and choice.endswith("]"):
        return [v.strip() for v in choice[1:-1].split(",") if v.strip()]
    return [choice]


def variant_metric(run: Any, metric: str) -> tuple[str, str] | None:
    """``(variant, number)`` when ``metric`` is one listed variant's number of ``run``
    (``non_llm/mean``), else ``None``."""
    variant, _, number = metric.partition("/")
    if number in VARIANT_METRICS and variant in variants_of(run):
        return variant, number
    return None


def logged(run: Any) -> dict[str, float]:
    """The metrics ``run`` logged, and for a run of one variant its numbers also as
    ``<variant>/mean`` etc. (what a run of several logs for each), so either pairs with the
    other."""
    metrics = dict(run.data.metrics)
    names = variants_of(run)
    if len(names) == 1:
        for number in VARIANT_METRICS:
            if number in metrics:
                metrics.setdefault(f"{names[0]}/{number}", metrics[number])
    return metrics


def is_ppi(metric: str) -> bool:
    """Whether ``metric`` is a PPI++ mean (``ppi_mean``, ``<variant>/ppi_mean``): a
    labelled run's headline."""
    return metric.rpartition("/")[2] == "ppi_mean"


def judged_metric(metric: str) -> str:
    """The metric whose per-sample values (the judge's ``score``) a PPI++ mean corrects:
    ``mean`` for ``ppi_mean``, ``<variant>/mean`` for ``<variant>/ppi_mean``; any other
    ``metric`` itself."""
    if not is_ppi(metric):
        return metric
    prefix = metric.rpartition("/")[0]
    return f"{prefix}/mean" if prefix else "mean"


def metric_kind(run: Any, metric: str) -> str:
    """What ``metric`` measures in ``run``: the variant for context precision's numbers
    (the headline, the first listed, for ``mean``; the named one for ``<variant>/mean``),
    ``retrieval`` for retrieval metrics (the same for every variant)."""
    if is_retrieval(metric):
        return "retrieval"
    named = variant_metric(run, judged_metric(metric))
    return named[0] if named else variants_of(run)[0]


def shared_variants(base: Any, cand: Any) -> list[str]:
    """The variants both runs scored, in the baseline's order."""
    theirs = variants_of(cand)
    return [v for v in variants_of(base) if v in theirs]


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
        shared = [v for v in shared_variants(base, cand) if v != "?"]
        both = (f"; both scored {', '.join(shared)}: pair one with "
                f"metric={shared[0]}/{metric if metric in VARIANT_METRICS else 'mean'}"
                if shared else "")
        problems.append(f"metric ({bkind} vs {ckind}: their {metric} are different "
                        f"quantities{both})")
    if bsha != csha:
        problems.append(f"dataset (dataset.sha256 {bsha[:12]} vs {csha[:12]})")
    if problems and not force:
        raise ConfigError(
            f"baseline and candidate differ in {' and '.join(problems)}; a paired test of "
            "them would mislead: compare runs of one dataset and metric, or pass force=true"
        )
    return [f"forced: baseline and candidate differ in {p}" for p in problems]


#: The test the gate decides with, named in its line.
GATE_TEST = "paired sign-flip test of the mean difference"
#: ... and with human labels on the same samples of both runs (``ppi_pair``).
PPI_TEST = "PPI++ test of the mean difference ({}), human labels in both runs"
#: ``test["interval_used"]``: what the verdict decided with.
PPI, BOOTSTRAP = "ppi++", "bootstrap"


def decided(test: Mapping[str, Any]) -> Mapping[str, Any]:
    """What a verdict on ``test`` decides with: its ``ppi`` (``ppi_pair.paired_ppi``) when
    human labels allowed it, else the test itself (the judge's mean difference and the
    sign-flip p-value)."""
    ppi = test.get("ppi")
    return ppi if test.get("interval_used") == PPI and isinstance(ppi, Mapping) else test


def gate(
    tests: dict[str, Any] | Sequence[dict[str, Any]], alpha: float, min_delta: float
) -> tuple[bool, str]:
    """``fail_if_worse``: whether a candidate is worse than the baseline, and the line that
    says so (one per comparison after the first).

    The decision uses one test, the paired sign-flip (permutation) test of the mean
    difference: the mean is the number compare ranks by and ``min_delta`` is in its units,
    and the test assumes only that, with no difference, a pair's sign is a coin flip.
    Wilcoxon's signed-rank test is printed beside it for reference only: it tests ranks,
    and disagrees with the mean when a few large changes outweigh many small ones. A
    candidate is worse when its mean paired difference is below ``-min_delta`` with
    p < ``alpha``; with several comparisons the p-values are Holm-adjusted first. When
    both runs have human labels on the same samples, the PPI++ mean difference and its
    p-value (normal, or the bootstrap's below 50 pairs labelled in both; below ``alpha``
    exactly when its ``1 - alpha`` interval leaves out 0) stand in for the judge's
    (``decided``), and the line says so.
    """
    from harness.compare.stats import holm

    listed = [tests] if isinstance(tests, dict) else list(tests)
    adjusted = holm([decided(t)["p_value"] for t in listed])
    floor = f"-{min_delta:g}" if min_delta else "0"
    holm_note = f"; Holm-adjusted over {len(listed)} comparisons" if len(listed) > 1 else ""
    verdicts = []
    for test, p in zip(listed, adjusted, strict=True):
        used = decided(test)
        d, ppi = used["mean_diff"], used is not test
        worse = d < -min_delta and p < alpha
        who = "candidate" if len(listed) == 1 else f"candidate {test['run_a']['name']}"
        how = (f"{PPI_TEST.format(used['p_method'])}, {used['n_labelled']} of "
               f"{used['n_pairs']} pairs labelled, "
               f"{used['level']:.0%} interval [{used['ci'][0]:+.4f}, {used['ci'][1]:+.4f}]"
               if ppi else f"{GATE_TEST}, {test['p_method']}")
        verdicts.append((worse, f"{who} - baseline = {d:+.4f} on {test['n_pairs']} pairs, "
                                f"p = {p:.4g} ({how}{holm_note}); "
                                f"fails when below {floor} with p < {alpha:g}"))
    failed = any(w for w, _ in verdicts)
    head = "gate FAILED: the candidate is worse" if failed else "gate passed"
    if len(listed) == 1:
        return failed, f"{head}: {verdicts[0][1]}"
    lines = [f"{head}: {sum(w for w, _ in verdicts)} of {len(listed)} candidates worse"]
    lines += [f"  {'worse' if w else 'ok'}: {text}" for w, text in verdicts]
    return failed, "\n".join(lines)
