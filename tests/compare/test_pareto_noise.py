"""A Pareto front only when asked for, and not from noise (issue 25, item 6).

Runs are made through ``MlflowClient`` in a real SQLite store, with the metrics a run logs
(``retrieval_p50_ms``, ``retrieval_p95_ms``, ``retrieval_max_ms``, ``n_samples``). The
noise bands are worked out here from the formulas of ``harness.compare.noise`` (the
normal quantile from ``statistics``, not from the harness)."""

from __future__ import annotations

import json
import math
import uuid
from statistics import NormalDist
from typing import Any

import pytest

from harness.compare import compare
from harness.compare.noise import front
from harness.core.objectives import Objective, pareto_front

Z95 = NormalDist().inv_cdf(0.975)
TWO = "ndcg_at_10,-retrieval_p95_ms"


def _store(uri: str, runs: dict[str, dict[str, float]], objective: str | None = None,
           params: dict[str, str] | None = None) -> str:
    """An experiment with a sweep parent (tagged with ``objective`` as ``close_parent``
    does) and one finished child per entry; returns the experiment name."""
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    c = MlflowClient(tracking_uri=uri)
    name = f"noise_{uuid.uuid4().hex[:8]}"
    exp = c.create_experiment(name)
    tags = {"harness.sweep": "parent"} | ({"sweep.objective": objective} if objective else {})
    parent = c.create_run(exp, run_name="sweep", tags=tags).info.run_id
    for num, (key, metrics) in enumerate(runs.items()):
        run = c.create_run(exp, run_name=key, tags={
            "mlflow.parentRunId": parent, "hydra.job_num": str(num),
            "dataset.sha256": "d" * 64, "choice.metric": "id_ranked"}).info.run_id
        c.log_batch(run, metrics=[Metric(k, v, 0, 0) for k, v in metrics.items()],
                    params=[Param("retriever.k1", str(num)),
                            *(Param(k, v) for k, v in (params or {}).items())])
        c.set_terminated(run, "FINISHED")
    return name


def _p95_se(p95: float, top: float, n_samples: int) -> float:
    """The p95's standard error: sqrt(p(1-p)/n) / f, f = 0.05 / (max - p95), n calls
    without the first."""
    return math.sqrt(0.05 * 0.95 / (n_samples - 1)) * (top - p95) / 0.05


def _front(uri: str, name: str, **kw: Any) -> list[str]:
    result = compare(name, "ndcg_at_10", tracking_uri=uri, bootstrap=20, log=False,
                     plots=False, **kw)
    assert result["pareto"] is not None
    return [r["run_name"] for r in result["pareto"][0]["front"]]


#: The issue's two runs: 20 queries, p95 0.517 vs 0.637 ms, the slowest calls near 1 ms.
NOISY = {"fast": {"ndcg_at_10": 0.70, "retrieval_p50_ms": 0.40, "retrieval_p95_ms": 0.517,
                  "retrieval_max_ms": 0.90, "n_samples": 20, "mean": 0.70},
         "better": {"ndcg_at_10": 0.75, "retrieval_p50_ms": 0.45, "retrieval_p95_ms": 0.637,
                    "retrieval_max_ms": 1.10, "n_samples": 20, "mean": 0.75}}


@pytest.mark.slow
def test_no_front_unless_asked(mlflow_store: str) -> None:
    one = _store(mlflow_store, NOISY, objective="ndcg_at_10")  # run.objective: one
    result = compare(one, "ndcg_at_10", tracking_uri=mlflow_store, bootstrap=20, log=False,
                     plots=False)
    assert result["pareto"] is None and "Pareto" not in result["table"]
    bare = _store(mlflow_store, NOISY)  # latencies logged, nothing asked
    assert compare(bare, tracking_uri=mlflow_store, bootstrap=20, log=False,
                   plots=False)["pareto"] is None
    # asked: by the sweep's run.objective, by pareto=, or by the runs' own run.objective
    assert _front(mlflow_store, _store(mlflow_store, NOISY, objective=TWO)) == ["better"]
    assert _front(mlflow_store, bare, pareto=TWO) == ["better"]
    logged = _store(mlflow_store, NOISY,
                    params={"run.objective": '["ndcg_at_10", "-retrieval_p95_ms"]'})
    assert _front(mlflow_store, logged) == ["better"]
    off = compare(logged, tracking_uri=mlflow_store, bootstrap=20, log=False, plots=False,
                  pareto="none")
    assert off["pareto"] is None


def test_a_latency_gap_inside_the_noise_dominates_nothing(mlflow_store: str) -> None:
    name = _store(mlflow_store, NOISY, objective=TWO)
    result = compare(name, "ndcg_at_10", tracking_uri=mlflow_store, bootstrap=20, log=False,
                     plots=False)
    [group] = result["pareto"]
    # exactly compared, "fast" trades quality for 0.12 ms and is on the front too
    exact = pareto_front([[0.70, 0.517], [0.75, 0.637]],
                         [Objective("ndcg_at_10", True), Objective("retrieval_p95_ms", False)])
    assert exact == [1, 0]
    band = max(Z95 * math.hypot(_p95_se(0.517, 0.90, 20), _p95_se(0.637, 1.10, 20)),
               0.1 * 0.637)
    assert band > 0.637 - 0.517  # a tie on latency: "better" is better, full stop
    assert [r["run_name"] for r in group["front"]] == ["better"]
    assert [r["run_name"] for r in group["dominated"]] == ["fast"]
    own = Z95 * _p95_se(0.637, 1.10, 20)
    assert group["front"][0]["noise"]["retrieval_p95_ms"] == pytest.approx(
        max(own, 0.1 * 0.637))
    assert "1 of 2 run(s) non-dominated" in result["table"]
    assert "0.6370 ±" in result["table"]
    assert "ties: on retrieval_p95_ms a gap inside the noise" in result["table"]


@pytest.mark.parametrize(("n_samples", "top", "tie"), [
    (20, 1.10, True),      # few calls, a long tail: the p95 is uncertain
    (5000, 0.70, False),   # many calls, a short tail: 23 % is more than the 10 % drift
])
def test_the_same_gap_is_real_with_enough_calls(mlflow_store: str, n_samples: int,
                                                top: float, tie: bool) -> None:
    runs = {k: {**v, "n_samples": n_samples, "retrieval_max_ms": top + (k == "better") * 0.1}
            for k, v in NOISY.items()}
    se = [_p95_se(0.517, top, n_samples), _p95_se(0.637, top + 0.1, n_samples)]
    band = max(Z95 * math.hypot(*se), 0.1 * 0.637)
    assert (band > 0.637 - 0.517) is tie
    expected = ["better"] if tie else ["better", "fast"]
    assert _front(mlflow_store, _store(mlflow_store, runs, objective=TWO)) == expected


def test_real_differences_make_a_front(mlflow_store: str) -> None:
    runs = {"dense": {"ndcg_at_10": 0.80, "retrieval_p50_ms": 4.0, "retrieval_p95_ms": 5.0,
                      "retrieval_max_ms": 6.0, "n_samples": 300},
            "bm25": {"ndcg_at_10": 0.70, "retrieval_p50_ms": 0.4, "retrieval_p95_ms": 0.5,
                     "retrieval_max_ms": 0.8, "n_samples": 300},
            "slow_bm25": {"ndcg_at_10": 0.70, "retrieval_p50_ms": 0.5, "retrieval_p95_ms": 0.8,
                          "retrieval_max_ms": 1.0, "n_samples": 300},
            "worse": {"ndcg_at_10": 0.60, "retrieval_p50_ms": 0.45, "retrieval_p95_ms": 0.52,
                      "retrieval_max_ms": 0.9, "n_samples": 300}}
    # bm25 vs slow_bm25: 0.3 ms, beyond z * sqrt(se² + se²) and 10 %: a real loss
    assert max(Z95 * math.hypot(_p95_se(0.5, 0.8, 300), _p95_se(0.8, 1.0, 300)), 0.08) < 0.3
    # bm25 vs worse: 0.02 ms is noise; worse is worse on quality: dominated
    name = _store(mlflow_store, runs, objective=TWO)
    assert _front(mlflow_store, name) == ["dense", "bm25"]
    # one-shot timings (no spread logged): the 10 % drift alone
    shots = {"a": {"ndcg_at_10": 0.7, "prepare_s": 1.00}, "b": {"ndcg_at_10": 0.8,
             "prepare_s": 1.05}, "c": {"ndcg_at_10": 0.6, "prepare_s": 0.50}}
    name = _store(mlflow_store, shots)
    assert _front(mlflow_store, name, pareto="ndcg_at_10,-prepare_s") == ["b", "c"]


def test_front_ties_and_exact_objectives() -> None:
    two = [Objective("ndcg_at_10", True), Objective("retrieval_p95_ms", False)]
    points = [[0.8, 10.0], [0.8, 10.5], [0.9, 30.0], [0.7, 10.2], [math.nan, 1.0]]
    tied = [[[0.0, 1.0] for _ in points] for _ in points]  # 1 ms of noise on latency
    # 0 and 1 tie everywhere: both stay; 3 is worse on quality, tied on latency: dominated
    assert front(points, two, tied) == [2, 0, 1]
    exact = [[[0.0, 0.0] for _ in points] for _ in points]
    assert front(points, two, exact) == pareto_front(points, two) == [2, 0]


def test_a_sweep_objective_no_run_logged_is_a_note(mlflow_store: str) -> None:
    name = _store(mlflow_store, NOISY, objective="ndcg_at_10,-index_bytes")
    result = compare(name, "ndcg_at_10", tracking_uri=mlflow_store, bootstrap=20, log=False,
                     plots=False)
    assert result["pareto"] is None
    assert ("note: no Pareto front: the sweep's run.objective=ndcg_at_10,-index_bytes names "
            "index_bytes, which no run logged") in result["table"]
    saved = json.dumps(result["groups"][0]["notes"])
    assert "index_bytes" in saved
