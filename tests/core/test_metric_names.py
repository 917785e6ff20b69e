"""One catalogue of logged metric names (harness.core.metric_names): what a run logs is in
it, and run.objective, run.fail_under and compare accept and refuse the same names."""

from __future__ import annotations

import pytest

from harness.compare.noise import is_measured
from harness.compare.pairing import metric_kind
from harness.config.build import check_objective
from harness.core import metric_names
from harness.core.errors import ConfigError
from harness.core.settings import RunSettings
from harness.core.summary import RunSummary
from harness.run.gates import check_fail_under

VARIANTS = ("id_based", "non_llm")


def _objective_accepts(name: str, ks: list[int]) -> bool:
    try:
        check_objective(RunSettings(objective=name, retrieval_ks=ks), VARIANTS)
    except ConfigError as e:
        assert str(e).startswith(f"run.objective: {name!r} is not a metric a run logs")
        return False
    return True


def _gate_accepts(name: str, ks: list[int]) -> bool:
    try:
        check_fail_under(RunSettings(fail_under={name: 0.5}, retrieval_ks=ks), VARIANTS)
    except ConfigError as e:
        assert str(e).startswith(f"run.fail_under: {name!r} is not a metric a run logs")
        return False
    return True


@pytest.mark.parametrize(
    ("name", "logged"),
    [
        ("mean", True), ("n_samples", True), ("duration_s", True), ("success_rate", True),
        ("retrieval_depth", True),  # the gates took it, the objective did not: now both do
        ("ndcg_at_10", True), ("map_at_5", True), ("hit_rate_at_10", True), ("mrr", True),
        ("retrieval_p95_ms", True), ("index_bytes", True), ("judge_s", True),
        ("non_llm/mean", True), ("id_based/success_rate", True),
        ("judge/requests", True), ("retriever/ann_recall", True),
        ("ndcg_at_3", False),  # not one of run.retrieval_ks
        ("retrieval_p59_ms", False), ("llm/mean", False), ("samples_per_s", False),
        ("mean_at_10", False), ("non_llm/duration_s", False), ("Mean", False),
    ],
)
def test_objective_gate_and_catalogue_agree(name: str, logged: bool) -> None:
    ks = [5, 10]
    assert metric_names.is_logged(name, ks, VARIANTS) is logged
    assert _objective_accepts(name, ks) is logged
    assert _gate_accepts(name, ks) is logged


def test_the_refusals_list_the_same_names() -> None:
    run = RunSettings(objective="x", fail_under={"x": 0.5}, retrieval_ks=[10])
    with pytest.raises(ConfigError) as objective:
        check_objective(run)
    with pytest.raises(ConfigError) as gate:
        check_fail_under(run)
    listed = metric_names.logged_names([10])
    said_objective = str(objective.value).split("choose one of ", 1)[1].split(", judge/")[0]
    said_gate = str(gate.value).split("the gates may name ", 1)[1].split(", judge/")[0]
    assert said_objective.split(", ") == sorted(listed)
    assert said_gate.split(", ") == listed
    assert "retrieval_depth" in listed and "precision_at_10" in listed


def test_every_metric_a_summary_logs_is_in_the_catalogue() -> None:
    summary = RunSummary(
        metric="id_based", mean=0.5, n_samples=3, n_scored=2, n_unscored=1, duration_s=1.5,
        success_rate={"value": 0.5},
        variants={v: {"mean": 0.5, "n_scored": 2, "n_unscored": 1, "success_rate": 0.5}
                  for v in VARIANTS},
        retrieval={**{f"{m}_at_{k}": 0.25 for m in metric_names.CUTOFF_METRICS
                      for k in (5, 10)}, "mrr": 0.5, "n_queries": 3},
        retrieval_cutoffs={"depth": 10},
        timing={**{t: 1.0 for t in metric_names.TIMING_METRICS}, "not_a_metric": 2.0},
        judge_stats={"requests": 4.0},
        retriever={"metrics": {"ann_recall": 0.9}},
    )
    logged = summary.metrics()
    assert "n_queries" not in logged and "not_a_metric" not in logged
    unknown = [n for n in logged if not metric_names.is_logged(n, [5, 10], VARIANTS)]
    assert unknown == []
    # and every catalogued name but the open families is one this summary logs
    assert set(metric_names.logged_names([5, 10], VARIANTS)) <= set(logged)


@pytest.mark.parametrize(
    ("name", "retrieval", "measured"),
    [
        ("ndcg_at_10", True, False), ("precision_at_3", True, False), ("mrr", True, False),
        ("retrieval_depth", True, False), ("mean", False, False),
        ("retrieval_p95_ms", False, True), ("duration_s", False, True),
        ("index_bytes", False, False),  # a size: exact
        ("judge_s", False, True), ("non_llm/mean", False, False),
    ],
)
def test_compare_classifies_by_the_catalogue(name: str, retrieval: bool, measured: bool) -> None:
    class Run:
        class data:  # noqa: N801 - the shape of an MLflow run
            tags = {"choice.metric": "[id_based,non_llm]"}

    assert (metric_kind(Run, name) == "retrieval") is retrieval
    assert is_measured(name) is measured
