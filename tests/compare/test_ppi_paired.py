"""``compare`` of two runs with human labels (issue 33): the paired difference by PPI++
beside the bootstrap one, and the verdict (the gate) decided with it.

Runs are made in a real SQLite MLflow store with a ``samples.jsonl`` each, built here from
seeded synthetic scores (the row layout of ``harness.run.outputs``: ``human_score`` beside
``score``, inside ``variants.<name>`` for a run of several). Expected intervals come from
``ppi_py`` on arrays built here from the same numbers, never from our output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import ppi_py
import pytest

from harness.compare import compare
from harness.compare.ppi_pair import paired_ppi

N, LABELLED = 400, 150


@pytest.fixture(scope="module")
def uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One SQLite MLflow store for the module (each test's runs are named by their ids)."""
    return f"sqlite:///{tmp_path_factory.mktemp('ppi_store') / 'mlflow.db'}"


def systems(seed: int = 7, lenient_on_a: float = 0.2) -> dict[str, dict[str, np.ndarray]]:
    """Two systems people find equally good (independent human scores, one distribution),
    and a judge that is close to people on B but lenient on A's chunks only."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, bias in (("a", lenient_on_a), ("b", 0.0)):
        human = rng.beta(1.3, 1.3, N)
        judge = np.clip(human + bias * rng.random(N) + rng.normal(0, 0.05, N), 0, 1)
        out[name] = {"human": human, "judge": judge}
    return out


def rows_of(scores: dict[str, np.ndarray], labelled: range | None,
            variants: list[str] | None = None) -> list[dict[str, Any]]:
    """samples.jsonl rows: ``score`` by the judge, ``human_score`` on ``labelled`` rows;
    with ``variants``, the first one's entry holds them (the others an unlabelled 0.5)."""
    rows = []
    for i in range(N):
        entry: dict[str, Any] = {"score": float(scores["judge"][i]), "verdicts": [1, 0]}
        if labelled is not None and i in labelled:
            entry.update(human_score=float(scores["human"][i]), human_verdicts=[1, 0])
        row: dict[str, Any] = {"id": f"q{i:03d}", "question": f"question {i}"}
        if variants:
            row.update(score=entry["score"], variants={
                variants[0]: entry, **{v: {"score": 0.5} for v in variants[1:]}})
        else:
            row.update(entry)
        rows.append(row)
    return rows


def log_run(uri: str, tmp: Path, name: str, rows: list[dict[str, Any]],
            experiment: str = "ppi", metric: str = "llm_with_reference") -> str:
    """A finished run of ``experiment`` with ``rows`` as its samples.jsonl."""
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    c = MlflowClient(tracking_uri=uri)
    exp = c.get_experiment_by_name(experiment)
    exp_id = exp.experiment_id if exp else c.create_experiment(experiment)
    tags = {"choice.metric": metric, "dataset.sha256": "d" * 64}
    run = c.create_run(exp_id, run_name=name, tags=tags).info.run_id
    scores = [r["score"] for r in rows if r.get("score") is not None]
    c.log_batch(run, metrics=[Metric("mean", float(np.mean(scores)), 0, 0),
                              Metric("n_scored", float(len(scores)), 0, 0),
                              Metric("n_unscored", 0.0, 0, 0)])
    folder = tmp / name
    folder.mkdir(parents=True)
    (folder / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    c.log_artifact(run, str(folder / "samples.jsonl"))
    c.set_terminated(run, "FINISHED")
    return run


def run_compare(uri: str, base: str, cand: str, **kw: Any) -> dict[str, Any]:
    return compare(tracking_uri=uri, baseline=base, candidate=cand, plots=False, log=False,
                   fail_if_worse=True, bootstrap=2000, **kw)


def expected(s: dict[str, dict[str, np.ndarray]], both: range,
             level: float = 0.95) -> tuple[list[float], float]:
    """ppi_py's interval and p-value of candidate (b) - baseline (a), labels on ``both``."""
    judge_d = s["b"]["judge"] - s["a"]["judge"]
    human_d = s["b"]["human"] - s["a"]["human"]
    lab = np.array([i in both for i in range(N)])
    lo, hi = ppi_py.ppi_mean_ci(human_d[lab], judge_d[lab], judge_d[~lab], alpha=1 - level,
                                lam=None)
    p = ppi_py.ppi_mean_pval(human_d[lab], judge_d[lab], judge_d[~lab], lam=None)
    return [float(np.ravel(lo)[0]), float(np.ravel(hi)[0])], float(np.ravel(p)[0])


def test_paired_ppi_equals_ppi_py_on_the_same_arrays() -> None:
    s = systems(seed=3)
    ids = [f"q{i}" for i in range(N)]
    judge_a, judge_b = (dict(zip(ids, s[k]["judge"].tolist(), strict=True)) for k in "ab")
    human_a = {ids[i]: float(s["a"]["human"][i]) for i in range(0, 200)}
    human_b = {ids[i]: float(s["b"]["human"][i]) for i in range(50, 250)}  # 150 in both
    for level in (0.95, 0.9):
        got = paired_ppi(judge_b, judge_a, human_b, human_a, level)
        assert got is not None
        ci, p = expected(s, range(50, 200), level)
        assert got["ci"] == pytest.approx(ci, abs=1e-12)
        assert got["mean_diff"] == pytest.approx(sum(ci) / 2, abs=1e-12)
        assert got["p_value"] == pytest.approx(p, rel=1e-6)
        assert (got["n_labelled"], got["n_pairs"]) == (150, N)
        assert (got["labelled_a_only"], got["labelled_b_only"]) == (50, 50)
        human_d = s["b"]["human"][50:200] - s["a"]["human"][50:200]
        lo, hi = ppi_py.classical_mean_ci(human_d, alpha=1 - level)
        assert got["labels_only_ci"] == pytest.approx([lo, hi], abs=1e-12)
        assert (got["interval_method"], got["p_method"]) == ("clt", "normal")
    assert paired_ppi(judge_b, judge_a, {"q1": 0.0}, {"q1": 1.0}) is None  # one in both


@pytest.mark.slow
def test_the_verdict_flips_when_the_judges_difference_is_an_artefact(
        tmp_path: Path, uri: str) -> None:
    """The judge is lenient on the baseline's chunks only: by the judge the candidate is
    worse (gate fails); people find no difference, and with their labels on the same 150
    samples of both runs the PPI++ interval covers 0 and the gate passes, saying so."""
    s = systems()
    # without labels: the judge's difference decides, and it says the candidate is worse
    plain = run_compare(uri, log_run(uri, tmp_path, "a0", rows_of(s["a"], None)),
                        log_run(uri, tmp_path, "b0", rows_of(s["b"], None)))
    assert plain["gate"]["failed"] and plain["test"]["interval_used"] == "bootstrap"
    assert plain["test"]["mean_diff"] < -0.05 and plain["test"]["ci"][1] < 0
    assert "PPI++" not in plain["table"]

    base = log_run(uri, tmp_path, "a", rows_of(s["a"], range(LABELLED)))
    cand = log_run(uri, tmp_path, "b", rows_of(s["b"], range(LABELLED)))
    result = run_compare(uri, base, cand)
    test = result["test"]
    ci, p = expected(s, range(LABELLED))
    assert test["interval_used"] == "ppi++"
    assert test["ppi"]["ci"] == pytest.approx(ci, abs=1e-12) and ci[0] < 0 < ci[1]
    assert test["ppi"]["p_value"] == pytest.approx(p, rel=1e-6) and p > 0.05
    # the judge's own numbers are still there, and still say "worse"
    assert test["mean_diff"] == pytest.approx(plain["test"]["mean_diff"], abs=1e-12)
    assert test["ci"][1] < 0 and test["p_value"] < 0.05
    assert not result["gate"]["failed"]
    line = result["gate"]["line"]
    assert line.startswith(f"gate passed: candidate - baseline = {test['ppi']['mean_diff']:+.4f}")
    assert "PPI++ test of the mean difference" in line and "150 of 400 pairs labelled" in line
    assert f"[{ci[0]:+.4f}, {ci[1]:+.4f}]" in line
    table = result["table"]
    assert f"PPI++ difference {test['ppi']['mean_diff']:+.4f} (candidate - baseline)" in table
    assert "the verdict uses the PPI++ interval" in table
    saved = json.loads(json.dumps(result["groups"][0]["test"]))  # as table.json holds it
    assert saved["interval_used"] == "ppi++" and saved["ppi"]["method"] == "ppi++"

    # ranking a sweep's runs: the test of #1 (a, the judge's favourite) against #2 (b)
    for name in ("a", "b"):
        log_run(uri, tmp_path / "ranked", name, rows_of(s[name], range(LABELLED)), "ranked")
    ranked = compare("ranked", tracking_uri=uri, sweep="all", plots=False, log=False)
    assert [r["run_name"] for r in ranked["rows"]] == ["a", "b"]
    assert ranked["test"]["interval_used"] == "ppi++"
    assert ranked["test"]["ppi"]["ci"] == pytest.approx([-ci[1], -ci[0]], abs=1e-12)


@pytest.mark.slow
def test_labels_on_different_samples_fall_back_with_a_note(tmp_path: Path, uri: str) -> None:
    s = systems()
    base = log_run(uri, tmp_path, "a", rows_of(s["a"], range(0, 150)))
    cand = log_run(uri, tmp_path, "b", rows_of(s["b"], range(200, 350)))
    result = run_compare(uri, base, cand)
    assert result["test"]["interval_used"] == "bootstrap" and "ppi" not in result["test"]
    assert result["gate"]["failed"]  # the judge's difference decides, as without labels
    [note] = [n for n in result["notes"] if "human labels" in n]
    assert note.startswith("human labels on different samples (150 in candidate, 150 in "
                           "baseline, 0 in both")
    assert "the verdict uses the bootstrap interval" in note
    assert f"note: {note}" in result["table"]

    only = log_run(uri, tmp_path, "b_plain", rows_of(s["b"], None))
    result = run_compare(uri, base, only)
    assert result["test"]["interval_used"] == "bootstrap"
    assert any(n.startswith("only baseline has human labels") for n in result["notes"])


@pytest.mark.slow
def test_runs_of_several_variants_read_the_compared_variants_labels(
        tmp_path: Path, uri: str) -> None:
    """Labels inside ``variants.<name>``: ``mean`` pairs the headline (first) variant, and
    ``<variant>/mean`` of an unlabelled variant has no PPI++ difference."""
    s = systems(seed=11)
    listed = ["llm_with_reference", "non_llm"]
    metric = f"[{','.join(listed)}]"
    base = log_run(uri, tmp_path, "a", rows_of(s["a"], range(100, 250), listed), metric=metric)
    cand = log_run(uri, tmp_path, "b", rows_of(s["b"], range(100, 250), listed), metric=metric)
    result = run_compare(uri, base, cand)
    ci, _ = expected(s, range(100, 250))
    assert result["test"]["interval_used"] == "ppi++"
    assert result["test"]["ppi"]["ci"] == pytest.approx(ci, abs=1e-12)
    # each variant's own test: the labelled one by PPI++ too, the other by the judge only
    first, second = (result["variants"][v] for v in listed)
    assert first["interval_used"] == "ppi++" and second["interval_used"] == "bootstrap"
    assert first["ppi"]["ci"] == pytest.approx(ci, abs=1e-12) and "ppi" not in second
    [note] = [n for n in result["notes"] if n.startswith("per variant")]
    assert (f"(by the judge; PPI++ {first['ppi']['mean_diff']:+.4f} [{ci[0]:+.4f}, "
            f"{ci[1]:+.4f}] on 150 labelled in both)") in note
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    c = MlflowClient(tracking_uri=uri)
    for run in (base, cand):
        c.log_batch(run, metrics=[Metric("non_llm/mean", 0.5, 0, 0)])
    other = compare(tracking_uri=uri, baseline=base, candidate=cand, plots=False, log=False,
                    metric="non_llm/mean")
    assert other["test"]["interval_used"] == "bootstrap" and "ppi" not in other["test"]


@pytest.mark.slow
def test_real_runs_with_labels_from_the_cli(tmp_path: Path, uri: str) -> None:
    """Two runs by the CLI on one dataset with one labels file (run.human_labels), the judge
    lenient in the baseline only: the same chunks, so people see no difference at all; the
    PPI++ interval is ppi_py's on the rows' own scores and the verdict flips to "passed"."""
    from conftest import run_cli
    from helpers.labelled_run import (
        judge_verdicts,
        label_rows,
        truth,
        write_dataset,
        write_judge,
        write_labels,
    )

    human = truth(120)
    data = write_dataset(tmp_path, human)
    labels = write_labels(tmp_path, label_rows(human, sorted(human)[::3]))  # 40 samples
    rows, ids = {}, {}
    for name, lenient in (("base", 0.4), ("cand", 0.0)):
        folder = tmp_path / name
        folder.mkdir()
        judge = write_judge(folder, judge_verdicts(human, lenient))
        result = run_cli("dataset=jsonl", f"dataset.path={data}", "metric=llm_with_reference",
                         "judge=fixture", f"judge.labels={judge}", f"run.human_labels={labels}",
                         "run.report=false", "experiment_name=cli", cwd=folder,
                         env={"MLFLOW_TRACKING_URI": uri})
        assert result.returncode == 0, result.stderr[-2000:]
        rows[name], ids[name] = result.rows(), f"judge.labels={judge}"  # by its override
    result = run_compare(uri, ids["base"], ids["cand"])
    assert result["test"]["mean_diff"] < -0.05 and result["test"]["p_value"] < 0.05
    judge_d = np.array([c["score"] - b["score"] for b, c in zip(*rows.values(), strict=True)])
    human_d = np.array([c.get("human_score", np.nan) - b.get("human_score", np.nan)
                        for b, c in zip(*rows.values(), strict=True)])
    lab = ~np.isnan(human_d)
    assert lab.sum() == 40 and not human_d[lab].any()  # the same chunks: no difference
    lo, hi = ppi_py.ppi_mean_ci(human_d[lab], judge_d[lab], judge_d[~lab], alpha=0.05, lam=None)
    ppi = result["test"]["ppi"]
    # 40 labelled in both (below 50: the bootstrap); no human difference and a judge that
    # is no use on them (lambda 0): every resample and ppi_py's interval are [0, 0]
    assert ppi["ci"] == pytest.approx([lo[0], hi[0]], abs=1e-12) and ppi["ci"] == [0.0, 0.0]
    assert ppi["interval_method"] == "bootstrap" and ppi["p_value"] == 1.0
    assert result["test"]["interval_used"] == "ppi++" and not result["gate"]["failed"]
    assert "PPI++ test of the mean difference (bootstrap)" in result["gate"]["line"]


def test_below_50_pairs_labelled_in_both_the_difference_uses_the_bootstrap() -> None:
    """30 pairs labelled in both: the intervals and the p-value are the seeded BCa bootstrap
    the run's own block uses below 50 labels (on the differences, in id order), not the
    central-limit ones, and the p-value agrees with the interval."""
    from harness.confidence.bootstrap import bca_test

    s = systems(seed=5)
    ids = [f"q{i:03d}" for i in range(N)]
    judge_a, judge_b = (dict(zip(ids, s[k]["judge"].tolist(), strict=True)) for k in "ab")
    human_a, human_b = ({ids[i]: float(s[k]["human"][i]) for i in range(100, 130)}
                        for k in "ab")
    got = paired_ppi(judge_b, judge_a, human_b, human_a, 0.95, seed=4)
    assert got is not None and got["n_labelled"] == 30
    judge_d, human_d = (s["b"][k] - s["a"][k] for k in ("judge", "human"))
    lab = np.zeros(N, dtype=bool)
    lab[100:130] = True
    ci, p = bca_test(human_d[lab], judge_d[lab], judge_d[~lab], 0.95, 4)
    labels_ci, _ = bca_test(human_d[lab], judge_d[lab], judge_d[~lab], 0.95, 4,
                            judge_weight=False)
    assert (got["interval_method"], got["p_method"]) == ("bootstrap", "bootstrap")
    assert got["ci"] == pytest.approx(ci, abs=1e-12) and got["p_value"] == pytest.approx(p)
    assert got["labels_only_ci"] == pytest.approx(labels_ci, abs=1e-12)
    clt, _ = expected(s, range(100, 130))
    assert got["ci"] != pytest.approx(clt, abs=1e-6)
    point = ppi_py.ppi_mean_pointestimate(human_d[lab], judge_d[lab], judge_d[~lab], lam=None)
    assert got["mean_diff"] == pytest.approx(float(np.ravel(point)[0]), abs=1e-12)
    assert (got["p_value"] < 0.05) == (not got["ci"][0] <= 0 <= got["ci"][1])
    assert got == paired_ppi(judge_b, judge_a, human_b, human_a, 0.95, seed=4)  # seeded


@pytest.mark.slow
def test_the_difference_covers_at_30_labels_in_both() -> None:
    """40 draws of two systems people find equally good, a judge lenient on A's chunks
    only, 30 of 400 samples labelled in both runs: the PPI++ difference's interval (the
    bootstrap) covers the true difference (the 400 samples' human mean difference) at
    least 34 times, and the judge's own difference is off it in most draws."""
    covers = judge_off = 0
    ids = [f"q{i:03d}" for i in range(N)]
    for draw in range(40):
        s = systems(seed=500 + draw)
        labelled = np.random.default_rng(draw).choice(N, 30, replace=False)
        judge_a, judge_b = (dict(zip(ids, s[k]["judge"].tolist(), strict=True)) for k in "ab")
        human_a, human_b = ({ids[i]: float(s[k]["human"][i]) for i in labelled} for k in "ab")
        got = paired_ppi(judge_b, judge_a, human_b, human_a, 0.95, seed=draw)
        assert got is not None and got["interval_method"] == "bootstrap"
        truth = float(np.mean(s["b"]["human"] - s["a"]["human"]))
        covers += got["ci"][0] <= truth <= got["ci"][1]
        judge_off += abs(got["judge_mean_diff"] - truth) > 0.05
    assert covers >= 34, covers
    assert judge_off >= 30, judge_off
