"""The one catalogue of the metric names a run logs.

``RunSummary.metrics`` logs these (to MLflow, and as a job's values); ``run.objective``
(``harness.config.build``), ``run.fail_under`` (``harness.run.gates``) and compare
(``harness.compare.pairing``, ``harness.compare.noise``) accept and classify names by them,
so an objective, a gate and a compared metric accept and refuse the same names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: The run's own numbers (``summary.json``'s headline; ``retrieval_depth`` with ids).
RUN_METRICS = ("mean", "success_rate", "n_samples", "n_scored", "n_unscored", "duration_s",
               "retrieval_depth")
#: What each variant of a run of several logs, as ``<variant>/<name>``.
VARIANT_METRICS = ("mean", "n_scored", "n_unscored", "success_rate")
#: What a run with human labels logs per variant that has a ``confidence`` block:
#: the PPI++ mean, its interval's bounds and the judge's kappa against the labels; plain for
#: a run of one variant, ``<variant>/<name>`` for several.
CONFIDENCE_METRICS = ("ppi_mean", "ci_low", "ci_high", "kappa")
#: The retrieval metrics logged at each cut-off k of ``run.retrieval_ks``, as
#: ``<name>_at_<k>`` (and ``mrr``, at no cut-off).
CUTOFF_METRICS = ("recall", "ndcg", "precision", "hit_rate", "map")
#: Timing figures logged as MLflow metrics (``summary.timing``), when measured.
TIMING_METRICS = (
    "retrieval_p50_ms", "retrieval_p95_ms", "retrieval_max_ms", "retrieval_mean_ms",
    "retrieval_first_ms", "prepare_s", "index_build_s", "index_bytes", "scoring_s", "judge_s",
)
#: Timing figures that are sizes, not times: exact from run to run.
SIZES = ("index_bytes",)
#: Families of metrics whose names are not known before the run: ``judge/<counter>``,
#: ``retriever/<name>``.
OPEN_PREFIXES = ("judge/", "retriever/")
#: Names of metrics that do not depend on the context-precision variant.
RETRIEVAL_PREFIXES = (*(f"{m}_at_" for m in CUTOFF_METRICS), "mrr", "retrieval_depth")
#: The name that stands for a run's headline, the number to report: its PPI++ mean
#: (``ppi_mean``, or ``<variant>/ppi_mean`` of the first of several) when people labelled
#: samples (``run.human_labels``), else its ``mean``. Not logged itself: ``run.objective``,
#: ``run.fail_under``, compare's ``metric`` and the pytest floors accept it and read the
#: metric it names (``headline_metric``).
HEADLINE = "headline"
#: The tag naming the logged metric that is a run's headline (``ppi_mean`` or ``mean``).
HEADLINE_TAG = "harness.headline"


def retrieval_names(ks: Sequence[int]) -> list[str]:
    """Every retrieval metric a run with cut-offs ``ks`` may log: ``<metric>_at_<k>`` and
    ``mrr``."""
    return [f"{m}_at_{k}" for k in ks for m in CUTOFF_METRICS] + ["mrr"]


def logged_names(ks: Sequence[int], variants: Sequence[str] = (), labelled: bool = False
                 ) -> list[str]:
    """Every metric name a run with cut-offs ``ks`` may log, beside the open families
    (``variants``: those of a run of several, each logging ``<variant>/mean`` and the like;
    ``labelled``: a run with ``run.human_labels``, which logs ``ppi_mean`` and the like),
    and last ``headline``, which names one of them (``headline_metric``)."""
    return [*RUN_METRICS, *(f"{v}/{k}" for v in variants for k in VARIANT_METRICS),
            *retrieval_names(ks), *TIMING_METRICS,
            *(confidence_names(variants) if labelled else ()), HEADLINE]


def confidence_names(variants: Sequence[str] = ()) -> list[str]:
    """The confidence metrics a run with human labels may log: plain for one variant,
    ``<variant>/ppi_mean`` and the like for each of several."""
    if variants:
        return [f"{v}/{k}" for v in variants for k in CONFIDENCE_METRICS]
    return list(CONFIDENCE_METRICS)


def confidence_metrics(block: dict[str, Any] | None, prefix: str = "") -> dict[str, float | None]:
    """The logged numbers of one ``confidence`` block (``{}`` for none)."""
    if not block:
        return {}
    low, high = block["ci"]
    kappa = (block.get("judge_agreement") or {}).get("kappa")
    values = (block["mean"], low, high, kappa)
    return {f"{prefix}{k}": v for k, v in zip(CONFIDENCE_METRICS, values, strict=True)}


def is_logged(name: str, ks: Sequence[int], variants: Sequence[str] = ()) -> bool:
    """Whether a run with cut-offs ``ks`` (and ``variants``) may log ``name`` (with human
    labels: a run without them is told so by ``harness.core.settings.check_labels``)."""
    return name.startswith(OPEN_PREFIXES) or name in logged_names(ks, variants, labelled=True)


def is_retrieval(name: str) -> bool:
    """Whether ``name`` is a retrieval metric (the same for every variant of a run)."""
    return name.startswith(RETRIEVAL_PREFIXES)


def is_measured(name: str) -> bool:
    """Whether ``name`` is a measured time, which drifts from run to run."""
    return name in TIMING_METRICS and name not in SIZES or name == "duration_s"


def headline_metric(variants: Sequence[str] = (), labelled: bool = False) -> str:
    """The logged metric that is a run's headline: ``ppi_mean`` when its (first) variant
    has a ``confidence`` block (``labelled``), ``<variant>/ppi_mean`` for the first of
    several (``variants``), else ``mean``."""
    if not labelled:
        return "mean"
    return f"{variants[0]}/ppi_mean" if variants else "ppi_mean"


def headline_of(metrics: Mapping[str, float | None], tags: Mapping[str, str]) -> str:
    """The logged metric that is the headline of a logged run: the one its
    ``harness.headline`` tag names when it logged it, else (a run logged before the tag)
    ``ppi_mean`` when logged, else ``mean``."""
    named = tags.get(HEADLINE_TAG)
    if named and metrics.get(named) is not None:
        return named
    return "ppi_mean" if metrics.get("ppi_mean") is not None else "mean"


def with_headline(metrics: Mapping[str, float | None], name: str) -> dict[str, float | None]:
    """``metrics`` and ``headline``: the value of ``name``, the run's headline metric (what
    ``run.objective``, ``run.fail_under`` and the floors read by that name)."""
    return {**metrics, HEADLINE: metrics.get(name)}
