"""Several objectives: ``run.objective=[ndcg_at_10,-retrieval_p95_ms]``, the Pareto front on
a sweep's parent run and console summary, and ``python -m harness.compare pareto=...``.

The fronts are worked out by hand from constructed points (and, in the heavy lane, checked
against Optuna's own ``study.best_trials``); the MLflow parts run in process against a real
SQLite store with runs made through ``MlflowClient``.
"""

from __future__ import annotations

import json
import math
import uuid
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, TEST_DATA, run_cli_subprocess

from harness.config.build import check_objective, settings
from harness.core.errors import ConfigError
from harness.core.objectives import (
    Objective,
    directions,
    dominates,
    job_value,
    pareto_front,
    parse,
    register_resolver,
)
from harness.core.settings import RunSettings

MAX_Q, MIN_LAT = Objective("ndcg_at_10", True), Objective("retrieval_p95_ms", False)
TWO = [MAX_Q, MIN_LAT]
NAN = math.nan

#: (ndcg_at_10, retrieval_p95_ms) by name. By hand: b is dominated by a (same quality,
#: slower), f by e (same latency, worse), j by every complete point; c and d are equal
#: (neither dominates: both on the front); g, h, i lack a value (never on the front).
POINTS: dict[str, tuple[float | None, float | None]] = {
    "a": (0.8, 10.0), "b": (0.8, 12.0), "c": (0.9, 20.0), "d": (0.9, 20.0), "e": (0.7, 5.0),
    "f": (0.6, 5.0), "g": (NAN, 1.0), "h": (None, 1.0), "i": (0.95, NAN), "j": (0.5, 30.0),
}
#: The front, best first by ndcg_at_10 (c before its equal d: the earlier one).
FRONT = ["c", "d", "a", "e"]


# --- objectives ------------------------------------------------------------------------


def test_parse_names_lists_and_comma_strings() -> None:
    assert parse("mean") == [Objective("mean", True)]
    assert parse("-retrieval_p95_ms") == [MIN_LAT]
    assert parse(["ndcg_at_10", "-retrieval_p95_ms"]) == TWO
    assert parse("ndcg_at_10, -retrieval_p95_ms") == TWO
    assert [str(o) for o in TWO] == ["ndcg_at_10", "-retrieval_p95_ms"]
    assert directions(["ndcg_at_10", "-retrieval_p95_ms"]) == ["maximize", "minimize"]
    assert directions("-prepare_s") == ["minimize"]


@pytest.mark.parametrize("bad", ["", [], ["-"], ["ndcg_at_10", "ndcg_at_10"], [3], 3,
                                 "--x", "mean,"])
def test_bad_objectives_are_one_line_config_errors(bad: Any) -> None:
    with pytest.raises(ConfigError) as e:
        parse(bad)
    assert str(e.value).startswith("run.objective: ") and "\n" not in str(e.value)


def test_job_value_returns_raw_values_nan_when_missing() -> None:
    metrics = {"ndcg_at_10": 0.625, "retrieval_p95_ms": 3.5, "mean": None}
    assert job_value(metrics, "ndcg_at_10") == 0.625
    assert job_value(metrics, "-retrieval_p95_ms") == 3.5  # never negated
    assert job_value(metrics, ["ndcg_at_10", "-retrieval_p95_ms"]) == (0.625, 3.5)
    both = job_value(metrics, ["mean", "-prepare_s"])
    assert isinstance(both, tuple) and all(math.isnan(v) for v in both)
    assert math.isnan(job_value({"mean": True}, "mean"))  # type: ignore[dict-item, arg-type]


def test_check_objective_knows_timing_judge_and_retriever_metrics() -> None:
    for ok in ("mean", "-retrieval_p95_ms", ["ndcg_at_10", "-index_bytes"],
               ["retriever/ann_recall", "-judge/requests"], "recall_at_10"):
        check_objective(RunSettings(objective=ok))
    with pytest.raises(ConfigError, match=r"run.objective: 'retrieval_p59_ms' is not a metric .*"
                                          r"did you mean 'retrieval_p95_ms'"):
        check_objective(RunSettings(objective=["ndcg_at_10", "-retrieval_p59_ms"]))
    with pytest.raises(ConfigError, match="'ndcg_at_3'"):
        check_objective(RunSettings(objective="ndcg_at_3", retrieval_ks=[10]))


def test_run_block_takes_a_list_objective_and_refuses_a_number() -> None:
    from omegaconf import OmegaConf

    cfg = OmegaConf.create({"run": {"objective": ["ndcg_at_10", "-retrieval_p95_ms"]}})
    assert settings(cfg).objective == ["ndcg_at_10", "-retrieval_p95_ms"]
    with pytest.raises(ConfigError, match="run.objective: expected"):
        settings(OmegaConf.create({"run": {"objective": 3}}))


def test_directions_resolver_follows_run_objective() -> None:
    from omegaconf import OmegaConf

    register_resolver()
    register_resolver()  # a second call is harmless
    node = "${harness_directions:${run.objective}}"
    for objective, expected in (("ndcg_at_10", "maximize"), ("-retrieval_p95_ms", "minimize"),
                                (["ndcg_at_10", "-retrieval_p95_ms"], ["maximize", "minimize"]),
                                # bad: no error here (a traceback); each job says what is wrong
                                ([], "maximize"), (["mean", "mean"], "maximize")):
        cfg = OmegaConf.create({"run": {"objective": objective}, "direction": node})
        value = cfg.direction
        assert (list(value) if OmegaConf.is_config(value) else value) == expected


# --- the front --------------------------------------------------------------------------


def test_front_of_constructed_points() -> None:
    names = list(POINTS)
    front = pareto_front(list(POINTS.values()), TWO)
    assert [names[i] for i in front] == FRONT
    assert dominates((0.8, 10.0), (0.8, 12.0), TWO) and not dominates((0.9, 20), (0.9, 20), TWO)
    # every objective maximised: (0.6, 5) now beats (0.6, 4); (0.5, 30) is on the front
    up = [MAX_Q, Objective("retrieval_p95_ms", True)]
    assert pareto_front([(0.6, 5.0), (0.6, 4.0), (0.5, 30.0)], up) == [0, 2]
    # three objectives: c2 trades the third against c1's first
    three = [*TWO, Objective("recall_at_10", True)]
    pts = [(0.9, 20.0, 0.5), (0.8, 20.0, 0.9), (0.8, 25.0, 0.8), (0.7, 5.0, 0.1)]
    assert pareto_front(pts, three) == [0, 1, 3]
    assert pareto_front([], TWO) == [] and pareto_front([(NAN, NAN)], TWO) == []


# --- the sweep parent run and the console summary -----------------------------------------


def _client(uri: str) -> Any:
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri)


def _sweep_in_store(uri: str, points: dict[str, tuple[float | None, float | None]],
                    unscored: dict[str, int] | None = None) -> tuple[str, str, dict[str, str]]:
    """An experiment with a parent run and one finished child per point (job numbers in
    order); returns the experiment name, the parent id and the child ids by name."""
    from mlflow.entities import Metric, Param

    c = _client(uri)
    name = f"pareto_{uuid.uuid4().hex[:8]}"
    exp = c.create_experiment(name)
    parent = c.create_run(exp, run_name="sweep", tags={"harness.sweep": "parent"}).info.run_id
    ids = {}
    for num, (key, (q, lat)) in enumerate(points.items()):
        tags = {"mlflow.parentRunId": parent, "hydra.job_num": str(num),
                "dataset.sha256": "d" * 64, "choice.metric": "id_ranked"}
        run = c.create_run(exp, run_name=f"run_{key}", tags=tags).info.run_id
        values = {"ndcg_at_10": q, "retrieval_p95_ms": lat, "mean": q,
                  "n_unscored": (unscored or {}).get(key, 0)}
        c.log_batch(run, metrics=[Metric(k, float(v), 0, 0) for k, v in values.items()
                                  if v is not None],
                    params=[Param("retriever.k1", str(num)), Param("retriever.top_k", "10")])
        c.set_terminated(run, "FINISHED")
        ids[key] = run
    return name, parent, ids


def test_sweep_parent_ranks_by_a_minimised_objective(mlflow_store: str) -> None:
    from harness.tracking.sweep import close_parent

    _, parent, ids = _sweep_in_store(mlflow_store, POINTS)
    close_parent(mlflow_store, parent, "-retrieval_p95_ms")
    run = _client(mlflow_store).get_run(parent)
    # lowest latency: g and h (1.0, job 6 before 7); i has none
    assert run.data.tags["sweep.best_run_id"] == ids["g"]
    assert run.data.tags["sweep.direction"] == "minimize"
    assert run.data.tags["sweep.objective"] == "-retrieval_p95_ms"
    assert run.data.metrics["best_retrieval_p95_ms"] == 1.0
    assert "sweep.pareto_runs" not in run.data.tags


@pytest.mark.slow
def test_sweep_parent_tags_the_pareto_children(mlflow_store: str) -> None:
    from harness.tracking.sweep import close_parent

    _, parent, ids = _sweep_in_store(mlflow_store, POINTS)
    close_parent(mlflow_store, parent, "ndcg_at_10,-retrieval_p95_ms")
    tags = _client(mlflow_store).get_run(parent).data.tags
    assert tags["sweep.objective"] == "ndcg_at_10,-retrieval_p95_ms"
    assert tags["sweep.direction"] == "maximize,minimize"
    assert tags["sweep.best_run_id"] == ids["i"]  # the highest ndcg, whatever its latency
    assert set(tags["sweep.pareto_runs"].split(",")) == {ids[k] for k in FRONT}
    assert set(tags["sweep.pareto_jobs"].split(",")) == {str(list(POINTS).index(k))
                                                         for k in FRONT}
    # a tie on the first objective goes to the better second (the front), not the earlier job
    tie = {"p": (0.9, 5.0), "q": (0.9, 3.0)}
    for objective, best in (("ndcg_at_10,-retrieval_p95_ms", "q"), ("ndcg_at_10", "p")):
        _, parent, ids = _sweep_in_store(mlflow_store, tie)
        close_parent(mlflow_store, parent, objective)
        assert _client(mlflow_store).get_run(parent).data.tags["sweep.best_run_id"] == ids[best]


def _job_folder(root: Path, num: int, override: str, summary: dict[str, Any] | None) -> None:
    folder = root / str(num)
    (folder / ".hydra").mkdir(parents=True)
    (folder / ".hydra" / "overrides.yaml").write_text(f"- {override}\n")
    (folder / ".hydra" / "hydra.yaml").write_text(f"hydra:\n  job:\n    num: {num}\n")
    if summary is not None:
        (folder / "summary.json").write_text(json.dumps(summary))


def test_console_summary_marks_the_pareto_jobs(tmp_path: Path) -> None:
    from harness.report.console import read_jobs, render

    for num, (key, (q, lat)) in enumerate(POINTS.items()):
        _job_folder(tmp_path, num, f"retriever.k1={key}", {
            "mean": 0.5, "n_unscored": 0, "retrieval": {"ndcg_at_10": q},
            "timing": {"retrieval_p95_ms": lat}})
    _job_folder(tmp_path, 10, "retriever.k1=broken", None)
    jobs = read_jobs(tmp_path, "ndcg_at_10,-retrieval_p95_ms")
    assert [j.overrides[0][-1] for j in jobs if j.pareto] == FRONT
    text = render(jobs, "ndcg_at_10,-retrieval_p95_ms", tmp_path)
    rows = [line.split() for line in text.splitlines() if line[:6].strip().isdigit()]
    assert [r[-1][-1] for r in rows if r[-2] == "*"] == FRONT
    assert "ranked by ndcg_at_10 (highest first" in text
    assert "* on the Pareto front of ndcg_at_10 (max), retrieval_p95_ms (min)" in text
    assert "pareto front  4 job(s): job 2, job 3, job 0, job 4" in text
    assert rows[0][:3] == ["1", "0.9500", "n/a"]  # i: best quality, no latency, not marked

    fast = read_jobs(tmp_path, "-retrieval_p95_ms")
    assert [j.num for j in fast[:3]] == [6, 7, 4]  # 1.0, 1.0 (the earlier job first), 5.0
    assert "ranked by retrieval_p95_ms (lowest first" in render(fast, "-retrieval_p95_ms",
                                                                 tmp_path)


# --- compare ------------------------------------------------------------------------------


@pytest.mark.slow
def test_compare_draws_and_logs_the_front_to_the_parent(mlflow_store: str,
                                                        tmp_path: Path) -> None:
    from harness.compare import compare
    from harness.tracking.sweep import close_parent

    name, parent, ids = _sweep_in_store(mlflow_store, POINTS)
    close_parent(mlflow_store, parent, "ndcg_at_10,-retrieval_p95_ms")  # run.objective=[...]
    result = compare(name, "ndcg_at_10", tracking_uri=mlflow_store, bootstrap=20)
    [group] = result["pareto"]  # by default: the sweep's objectives
    assert group["objectives"] == ["ndcg_at_10", "-retrieval_p95_ms"]
    assert [r["run_name"] for r in group["front"]] == [f"run_{k}" for k in FRONT]
    assert {r["run_name"] for r in group["dominated"]} == {"run_b", "run_f", "run_j"}
    assert {r["run_name"]: r["missing"] for r in group["skipped"]} == {
        "run_g": ["ndcg_at_10"], "run_h": ["ndcg_at_10"], "run_i": ["retrieval_p95_ms"]}
    assert group["front"][0]["values"] == {"ndcg_at_10": 0.9, "retrieval_p95_ms": 20.0}
    assert "4 of 7 run(s) non-dominated" in result["table"]
    assert "skipped: run_i (no retrieval_p95_ms)" in result["table"]
    assert result["logged_to"] == parent
    assert {"compare/pareto.png", "compare/pareto.json"} <= set(result["artifacts"])

    c = _client(mlflow_store)
    logged = {f.path for f in c.list_artifacts(parent, "compare")}
    assert {"compare/pareto.png", "compare/pareto.json"} <= logged
    saved = json.loads(Path(c.download_artifacts(parent, "compare/pareto.json",
                                                 str(tmp_path))).read_text())
    assert [r["run_id"] for r in saved["groups"][0]["front"]] == [ids[k] for k in FRONT]
    from matplotlib.image import imread

    png = imread(c.download_artifacts(parent, "compare/pareto.png", str(tmp_path)))
    assert png.shape[0] > 300 and png.shape[1] > 500


@pytest.mark.slow
def test_compare_pareto_key_choices_and_errors(mlflow_store: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from harness.cli.compare import main
    from harness.compare import compare

    name, _, _ = _sweep_in_store(mlflow_store, {k: POINTS[k] for k in "abce"})
    off = compare(name, tracking_uri=mlflow_store, bootstrap=20, log=False, pareto="none")
    assert off["pareto"] is None and "Pareto" not in off["table"]
    # all maximised: now a's latency 10 is beaten by c's 20 at a higher quality
    up = compare(name, tracking_uri=mlflow_store, bootstrap=20, log=False, plots=False,
                 pareto=["mean", "retrieval_p95_ms"])
    assert [r["run_name"] for r in up["pareto"][0]["front"]] == ["run_c"]
    for bad, message in (("ndcg_at_10", "pareto: a front needs two or more objectives"),
                         ("ndcg_at_10,-retrieval_p59_ms",
                          "did you mean 'retrieval_p95_ms'"),
                         ("ndcg_at_10,-", "pareto: bad objective")):
        with pytest.raises(ConfigError, match=message):
            compare(name, tracking_uri=mlflow_store, log=False, pareto=bad)
    main([f"experiment={name}", f"tracking_uri={mlflow_store}", "bootstrap=20", "log=false",
          "plots=false", "metric=ndcg_at_10", "pareto=ndcg_at_10,-retrieval_p95_ms,-mean"])
    out = capsys.readouterr().out
    # three objectives, a lower mean better too (mean = ndcg here): only b, as slow as a
    # at the same quality and mean, is dominated
    assert "Pareto front: ndcg_at_10 (max) vs retrieval_p95_ms (min) vs mean (min): " \
           "3 of 4 run(s) non-dominated" in out


# --- Optuna, through the CLI (heavy) ---------------------------------------------------


@pytest.mark.heavy
def test_sweeper_configs_follow_run_objective() -> None:
    from hydra import compose, initialize_config_dir

    register_resolver()
    cases = [(["experiment=scifact_bm25_optuna"], "maximize"),
             (["experiment=scifact_bm25_optuna", "run.objective=-retrieval_p95_ms"],
              "minimize"),
             (["hydra/sweeper=optuna_nsga2", "run.objective=[ndcg_at_10,-retrieval_p95_ms]"],
              ["maximize", "minimize"])]
    for overrides, expected in cases:
        with initialize_config_dir(config_dir=str(ROOT / "conf")):
            cfg = compose("config", overrides=overrides, return_hydra_config=True)
        value = cfg.hydra.sweeper.direction
        assert (list(value) if not isinstance(value, str) else value) == expected, overrides


@pytest.mark.heavy
@pytest.mark.slow
def test_optuna_multi_objective_sweep(tmp_path: Path) -> None:
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    args = ["-m", "hydra/sweeper=optuna_nsga2", "hydra.sweeper.n_trials=4",
            "experiment_name=pareto_cli", "dataset=beir",
            f"dataset.path={TEST_DATA / 'beir_tiny'}", "retriever=bm25",
            "metric=id_ranked", "run.objective=[ndcg_at_10,-retrieval_p95_ms]",
            "retriever.k1=interval(0.2,3.0)", "retriever.top_k=range(1,6)",
            f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    result = run_cli_subprocess(*args, cwd=tmp_path, timeout=300,
                                env={"MLFLOW_TRACKING_URI": uri})
    assert result.returncode == 0, result.stderr[-3000:]
    import optuna

    study = optuna.load_study(study_name="pareto_cli", storage=f"sqlite:///{tmp_path}/optuna.db")
    assert [d.name for d in study.directions] == ["MAXIMIZE", "MINIMIZE"]
    done = [t for t in study.trials if t.values is not None]
    assert len(done) == 4 and all(len(t.values) == 2 for t in done)
    assert all(t.values[1] > 0 for t in done)  # a latency, not negated
    parent = next(r for r in _client(uri).search_runs(
        [_client(uri).get_experiment_by_name("pareto_cli").experiment_id])
        if r.data.tags.get("harness.sweep") == "parent")
    # Optuna's own front (study.best_trials) is the parent's (trial number = job number)
    assert set(parent.data.tags["sweep.pareto_jobs"].split(",")) == {
        str(t.number) for t in study.best_trials}
    assert "pareto front" in result.stdout
