"""The name ``headline``: what ``run.objective`` (its default), ``run.fail_under``, compare
and the floors read by it, the metric it stands for in a logged run, and the order MLflow's
runs view shows a run's metrics in. Golden values are written by hand from the rule: the
PPI++ mean when people labelled the run (the first variant's, of several), else ``mean``."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config.build import check_objective
from harness.core import metric_names
from harness.core.errors import ConfigError
from harness.core.objectives import job_value, with_headline
from harness.core.settings import RunSettings
from harness.core.summary import RunSummary
from harness.report.console import JobResult, read_jobs, render
from harness.run.gates import check_fail_under, fail_under
from harness.tracking.mlflow import view

BLOCK = {"method": "ppi++", "level": 0.9, "mean": 0.61, "ci": [0.55, 0.67], "n_labelled": 40,
         "n": 300, "judge_agreement": {"kappa": 0.4}}


def test_the_default_objective_is_the_headline_and_every_check_takes_it() -> None:
    assert RunSettings().objective == "headline"
    check_objective(RunSettings())  # no labels: it stands for mean
    check_fail_under(RunSettings(fail_under={"headline": 0.5}))
    assert metric_names.is_logged("headline", [10])
    with pytest.raises(ConfigError, match="'headlines' is not a metric a run logs "
                                          r"\(did you mean 'headline'\?\)"):
        check_objective(RunSettings(objective="headlines"))


@pytest.mark.parametrize(("summary", "name", "value"), [
    (RunSummary(metric="id_ranked", mean=0.7), "mean", 0.7),
    (RunSummary(metric="llm", mean=0.7, confidence=BLOCK), "ppi_mean", 0.61),
    (RunSummary(metric="[llm,id_ranked]", mean=0.7, variants={
        "llm": {"mean": 0.7, "confidence": BLOCK}, "id_ranked": {"mean": 0.5}}),
     "llm/ppi_mean", 0.61),
    (RunSummary(metric="[id_ranked,llm]", mean=0.5, variants={
        "id_ranked": {"mean": 0.5}, "llm": {"mean": 0.7, "confidence": BLOCK}}), "mean", 0.5),
])
def test_the_headline_of_a_summary(summary: RunSummary, name: str, value: float) -> None:
    head = summary.headline()
    assert (head["name"], head["value"]) == (name, value)
    metrics = summary.metrics()
    assert metrics["headline"] == value and metrics["mean"] == summary.mean
    assert summary.tags()["harness.headline"] == name
    assert job_value(metrics, "headline") == value
    assert job_value(metrics, ["headline", "mean"]) == (value, summary.mean)
    assert fail_under(metrics, {"headline": value + 0.01}, Path("out")) is not None
    assert fail_under(metrics, {"headline": value}, Path("out")) is None
    if name != "mean":  # labelled: the interval, centred on the value
        assert head["interval"] == [0.55, 0.67] and head["level"] == 0.9
        assert head["method"] == "ppi++"
    else:
        assert head["interval"] is None and head["level"] is None
    assert RunSummary.from_json(summary.as_json()).as_json() == summary.as_json()


@pytest.mark.parametrize(("spec", "heads", "out"), [
    ("headline", ["ppi_mean", "ppi_mean"], "ppi_mean"),
    ("headline", ["mean", "mean"], "mean"),
    ("headline", ["ppi_mean", "mean"], "mean"),  # some labelled, some not: one quantity
    ("headline", [], "mean"),
    (["headline", "-retrieval_p95_ms"], ["ppi_mean"], "ppi_mean,-retrieval_p95_ms"),
    ("headline,mean", ["mean"], "mean"),  # named once
    ("ndcg_at_10", ["ppi_mean"], "ndcg_at_10"),
])
def test_with_headline(spec: str | list[str], heads: list[str], out: str) -> None:
    assert with_headline(spec, heads) == out


@pytest.mark.parametrize(("metrics", "tags", "name"), [
    ({"mean": 0.7, "ppi_mean": 0.6}, {"harness.headline": "ppi_mean"}, "ppi_mean"),
    ({"mean": 0.7, "a/ppi_mean": 0.6}, {"harness.headline": "a/ppi_mean"}, "a/ppi_mean"),
    ({"mean": 0.7, "ppi_mean": 0.6}, {}, "ppi_mean"),  # logged before the tag existed
    ({"mean": 0.7}, {}, "mean"),
    ({"mean": 0.7}, {"harness.headline": "ppi_mean"}, "mean"),  # named but not logged
])
def test_the_headline_of_a_logged_run(metrics: dict[str, float], tags: dict[str, str],
                                      name: str) -> None:
    assert metric_names.headline_of(metrics, tags) == name


METRICS = ["mean", "n_samples", "n_scored", "n_unscored", "duration_s", "ppi_mean", "ci_low",
           "ci_high", "kappa", "judge/requests", "ndcg_at_10"]


@pytest.mark.parametrize(("headline", "objective", "first"), [
    ("mean", "headline", ["mean", "n_scored", "n_unscored", "n_samples", "duration_s"]),
    ("ppi_mean", "headline", ["ppi_mean", "ci_low", "ci_high", "mean", "n_scored",
                              "n_unscored", "n_samples", "duration_s"]),
    ("ppi_mean", "ndcg_at_10", ["ppi_mean", "ci_low", "ci_high", "mean", "n_scored",
                                "n_unscored", "n_samples", "ndcg_at_10", "duration_s"]),
])
def test_the_runs_view_opens_on_the_headline(headline: str, objective: str,
                                             first: list[str]) -> None:
    order = view.metric_order(METRICS, objective, headline)
    assert order[: len(first)] == first
    assert sorted(order) == sorted(METRICS)
    several = ["mean", "n_scored", "llm/mean", "llm/ppi_mean", "llm/ci_low", "llm/ci_high"]
    assert view.metric_order(several, "headline", "llm/ppi_mean")[:5] == [
        "llm/ppi_mean", "llm/ci_low", "llm/ci_high", "mean", "n_scored"]


def _job(folder: Path, num: int, summary: RunSummary) -> None:
    import json

    (folder / str(num) / ".hydra").mkdir(parents=True)
    (folder / str(num) / ".hydra" / "overrides.yaml").write_text(f"- x={num}\n", "utf-8")
    (folder / str(num) / ".hydra" / "hydra.yaml").write_text(
        f"hydra:\n  job:\n    num: {num}\n", "utf-8")
    (folder / str(num) / "summary.json").write_text(json.dumps(summary.as_json()), "utf-8")


def test_a_sweep_ranks_by_the_headline_and_says_when_jobs_differ(tmp_path: Path) -> None:
    labelled = {0: RunSummary(metric="llm", mean=0.9, confidence={**BLOCK, "mean": 0.5}),
                1: RunSummary(metric="llm", mean=0.7, confidence={**BLOCK, "mean": 0.6})}
    both = tmp_path / "both"
    for num, summary in labelled.items():
        _job(both, num, summary)
    jobs = read_jobs(both, "headline")
    assert [(j.num, j.value, j.headline) for j in jobs] == [(1, 0.6, "ppi_mean"),
                                                           (0, 0.5, "ppi_mean")]
    out = render(jobs, "headline", both)
    assert "ranked by ppi_mean (highest first" in out and "headlines differ" not in out
    assert "(ppi_mean 0.6000)" in out
    mixed = tmp_path / "mixed"
    _job(mixed, 0, labelled[0])
    _job(mixed, 1, RunSummary(metric="llm", mean=0.7))
    jobs = read_jobs(mixed, "headline")
    assert [(j.num, j.value) for j in jobs] == [(0, 0.9), (1, 0.7)]  # the judge's means
    out = render(jobs, "headline", mixed)
    assert "ranked by mean" in out
    assert "the jobs' headlines differ (mean, ppi_mean: not every job has human labels)" in out
    assert render([JobResult(0, [], mixed, 0.5)], "mean", mixed).startswith(
        "sweep         1 job(s)")
