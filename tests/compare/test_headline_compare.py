"""``harness compare`` ranks by the runs' headline by default (``metric=headline``): with
human labels in every run, by ``ppi_mean``, each row's interval its run's PPI++ interval
(centred on it), the verdict the PPI++ paired difference; runs with and without labels are
ranked by ``mean``, with a note; ``metric=mean`` ranks by the judge alone.

Runs live in a real SQLite MLflow store with a ``samples.jsonl`` each, built from seeded
synthetic scores (``test_ppi_paired``'s layout); expected intervals come from ``ppi_py``
on the same arrays, never from our output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import ppi_py
import pytest
from compare.test_ppi_paired import N, log_run, rows_of

from harness.compare import compare

LABELLED = range(0, 120)


def scores(seed: int, judge_bias: float, true_mean: float) -> dict[str, np.ndarray]:
    """People's scores around ``true_mean`` and a judge ``judge_bias`` above them."""
    rng = np.random.default_rng(seed)
    human = np.clip(rng.normal(true_mean, 0.2, N), 0, 1)
    judge = np.clip(human + judge_bias + rng.normal(0, 0.05, N), 0, 1)
    return {"human": human, "judge": judge}


def ppi(s: dict[str, np.ndarray], level: float = 0.95) -> tuple[float, list[float]]:
    """ppi_py's PPI++ mean and interval of one run labelled on ``LABELLED``."""
    lab = np.array([i in LABELLED for i in range(N)])
    y, yhat, rest = s["human"][lab], s["judge"][lab], s["judge"][~lab]
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, rest, alpha=1 - level, lam=None)
    return (float(ppi_py.ppi_mean_pointestimate(y, yhat, rest, lam=None)[0]),
            [float(lo[0]), float(hi[0])])


def log(uri: str, tmp: Path, experiment: str, name: str, s: dict[str, np.ndarray],
        labelled: bool) -> str:
    """A finished run as the harness logs one: ``mean``, counts, with labels ``ppi_mean``,
    ``ci_low``, ``ci_high`` and the ``harness.headline`` tag; its ``samples.jsonl``."""
    from mlflow.entities import Metric, RunTag
    from mlflow.tracking import MlflowClient

    run = log_run(uri, tmp / experiment, name, rows_of(s, LABELLED if labelled else None),
                  experiment=experiment)
    c = MlflowClient(tracking_uri=uri)
    head = "mean"
    if labelled:
        mean, (lo, hi) = ppi(s)
        c.log_batch(run, metrics=[Metric(k, v, 0, 0) for k, v in
                                  (("ppi_mean", mean), ("ci_low", lo), ("ci_high", hi))])
        head = "ppi_mean"
    c.log_batch(run, tags=[RunTag("harness.headline", head)])
    return run


@pytest.fixture
def uri(mlflow_store: str) -> str:
    """The session's store (each test its own experiment)."""
    return mlflow_store


#: The lenient judge's run has the highest judge mean and the lowest truth.
SYSTEMS = {"lenient": (1, 0.25, 0.45), "fair": (2, 0.0, 0.6), "close": (3, 0.02, 0.55)}


def _runs(uri: str, tmp: Path, experiment: str, labelled: dict[str, bool]
          ) -> dict[str, dict[str, np.ndarray]]:
    made = {name: scores(*SYSTEMS[name]) for name in labelled}
    for name, s in made.items():
        log(uri, tmp, experiment, name, s, labelled[name])
    return made


def run_compare(uri: str, experiment: str, **kw: Any) -> dict[str, Any]:
    return compare(experiment, tracking_uri=uri, sweep="all", plots=False, log=False,
                   bootstrap=200, **kw)


@pytest.mark.slow
def test_labelled_runs_are_ranked_by_their_ppi_mean_with_its_interval(
        uri: str, tmp_path: Path) -> None:
    made = _runs(uri, tmp_path, "all_labelled", dict.fromkeys(SYSTEMS, True))
    result = run_compare(uri, "all_labelled")
    assert result["metric"] == "ppi_mean"
    want = {name: ppi(s) for name, s in made.items()}
    order = sorted(want, key=lambda n: -want[n][0])
    rows = result["rows"]
    assert [r["run_name"] for r in rows] == order == ["fair", "close", "lenient"]
    for row in rows:
        mean, ci = want[row["run_name"]]
        assert row["value"] == pytest.approx(mean, abs=1e-12)
        assert row["ci"] == pytest.approx(ci, abs=1e-12)  # the PPI++ interval, not bootstrap
        assert sum(row["ci"]) / 2 == pytest.approx(row["value"], abs=1e-12)
        assert row["ci_method"] == "ppi++"
    test = result["test"]  # #1 against #2, labelled on the same samples: PPI++ decides
    assert test["interval_used"] == "ppi++"
    assert [test["run_a"]["name"], test["run_b"]["name"]] == ["fair", "close"]
    assert any("ranked by ppi_mean, the runs' headline" in n for n in result["notes"])
    assert result["table"].splitlines()[0].split("|")[3].strip() == "ppi_mean"
    # at another confidence level, the run's interval recomputed at it
    at90 = run_compare(uri, "all_labelled", confidence=0.9)
    for row in at90["rows"]:
        assert row["ci"] == pytest.approx(ppi(made[row["run_name"]], 0.9)[1], abs=1e-12)
    # the judge alone ranks the lenient judge's run first
    judge = run_compare(uri, "all_labelled", metric="mean")
    assert judge["metric"] == "mean" and judge["rows"][0]["run_name"] == "lenient"
    assert judge["rows"][0]["value"] == pytest.approx(made["lenient"]["judge"].mean())


@pytest.mark.slow
def test_runs_with_and_without_labels_are_ranked_by_the_mean(uri: str, tmp_path: Path) -> None:
    made = _runs(uri, tmp_path, "mixed", {"lenient": True, "fair": False})
    result = run_compare(uri, "mixed")
    assert result["metric"] == "mean"
    assert [r["run_name"] for r in result["rows"]] == ["lenient", "fair"]
    assert result["rows"][0]["value"] == pytest.approx(made["lenient"]["judge"].mean())
    assert any("headlines differ (mean, ppi_mean" in n for n in result["notes"])


@pytest.mark.slow
def test_a_baseline_and_candidate_with_labels_are_paired_on_the_headline(
        uri: str, tmp_path: Path) -> None:
    made = _runs(uri, tmp_path, "pair", {"lenient": True, "fair": True})
    result = compare(tracking_uri=uri, baseline="fair", candidate="lenient",
                     experiment="pair", plots=False, log=False, fail_if_worse=True)
    assert result["metric"] == "ppi_mean"
    base, cand = result["rows"]
    assert base["ci"] == pytest.approx(ppi(made["fair"])[1], abs=1e-12)
    assert cand["ci"] == pytest.approx(ppi(made["lenient"])[1], abs=1e-12)
    assert result["test"]["interval_used"] == "ppi++"
    # the judge calls the lenient run better; people, through PPI++, call it worse
    assert result["test"]["mean_diff"] > 0 > result["test"]["ppi"]["mean_diff"]
    assert result["gate"]["failed"] is True
    assert "PPI++ test of the mean difference" in result["gate"]["line"]
