"""``python -m harness.compare``: the ranked table, intervals, the paired test, artifacts.

Real runs made by the real CLI into the session's SQLite store; every expectation is read
back from MLflow and the runs' samples.jsonl, or computed by hand for small cases.
"""

import json
import math
import os
import subprocess
import sys

import pytest
from conftest import ROOT

from harness.cli.compare import parse
from harness.compare import (
    bootstrap_ci,
    compare,
    paired_test,
    per_query,
    sign_flip_p,
    top_two,
)
from harness.core.errors import ConfigError, TrackingError

pytestmark = pytest.mark.slow


def _env(uri):
    return {**{k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"},
            "MLFLOW_TRACKING_URI": uri}


def _sweep(tmp, uri, experiment, *overrides):
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "-m", "metric=id_ranked", *overrides,
         f"hydra.sweep.dir={tmp}", "run.progress=false", f"experiment_name={experiment}"],
        cwd=tmp.parent, env=_env(uri), capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def _compare_cli(uri, *args, cwd):
    return subprocess.run([sys.executable, "-m", "harness.compare", *args], cwd=cwd,
                          env=_env(uri), capture_output=True, text=True, timeout=120)


def _children(uri, experiment):
    """The sweep's parent run and ``{run_id: (run, {query id: score or None})}``."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    [parent] = [r for r in runs if r.data.tags.get("harness.sweep") == "parent"]
    out = {}
    for r in runs:
        if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id:
            path = client.download_artifacts(r.info.run_id, "samples.jsonl")
            with open(path, encoding="utf-8") as f:
                rows = [json.loads(line) for line in f]
            out[r.info.run_id] = (r, {row["id"]: row["score"] for row in rows})
    return client, parent, out


@pytest.fixture(scope="module")
def grid(tmp_path_factory, mlflow_store):
    """A sweep over retriever.top_k=1..4 in experiment ``cmp_test``."""
    _sweep(tmp_path_factory.mktemp("cmp") / "sweep", mlflow_store, "cmp_test",
           "retriever.top_k=1,2,3,4")
    return mlflow_store


@pytest.fixture(scope="module")
def twins(tmp_path_factory, mlflow_store):
    """Two runs on two files with the same records (one has a trailing blank line): the
    same per-query scores, a different dataset.sha256."""
    tmp = tmp_path_factory.mktemp("twins")
    text = (ROOT / "harness" / "data" / "sample_rag.jsonl").read_text("utf-8")
    (tmp / "a.jsonl").write_text(text, "utf-8")
    (tmp / "b.jsonl").write_text(text + "\n", "utf-8")
    _sweep(tmp / "sweep", mlflow_store, "cmp_twins", "dataset=jsonl",
           f"dataset.path={tmp / 'a.jsonl'},{tmp / 'b.jsonl'}")
    return mlflow_store


def test_cli_prints_the_sweep_ranked_and_logs_to_the_parent(grid, tmp_path):
    proc = _compare_cli(grid, "experiment=cmp_test", "bootstrap=500", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    client, parent, children = _children(grid, "cmp_test")
    assert len(children) == 4

    lines = [line for line in proc.stdout.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header == ["rank", "run", "mean", "95% CI", "n scored", "retriever.top_k"]
    table = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    by_name = {run.info.run_name: run for run, _ in children.values()}
    assert sorted(row[1] for row in table) == sorted(by_name)
    assert [row[0] for row in table] == ["1", "2", "3", "4"]
    means = [by_name[row[1]].data.metrics["mean"] for row in table]
    assert means == sorted(means, reverse=True)
    for row, mean in zip(table, means, strict=True):
        run = by_name[row[1]]
        assert row[2] == f"{mean:.4f}"
        lo, hi = (float(x) for x in row[3].strip("[]").split(","))
        assert lo <= float(row[2]) <= hi
        assert row[4] == str(int(run.data.metrics["n_scored"])) == "30"
        assert row[5] == run.data.params["retriever.top_k"]
    assert f"#1 {table[0][1]} vs #2 {table[1][1]}" in proc.stdout
    assert "n pairs          30" in proc.stdout

    pid = parent.info.run_id
    logged = {a.path for a in client.list_artifacts(pid, "compare")}
    assert logged == {"compare/table.md", "compare/table.json", "compare/metric_vs_top_k.png",
                      "compare/per_query.png"}
    with open(client.download_artifacts(pid, "compare/table.md"), encoding="utf-8") as f:
        assert proc.stdout.startswith(f.read())
    for name in ("metric_vs_top_k.png", "per_query.png"):
        with open(client.download_artifacts(pid, f"compare/{name}"), "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    with open(client.download_artifacts(pid, "compare/table.json"), encoding="utf-8") as f:
        saved = json.load(f)
    assert [r["run_name"] for r in saved["rows"]] == [row[1] for row in table]


def test_function_rows_and_paired_test_match_mlflow_and_samples(grid):
    result = compare("cmp_test", tracking_uri=grid, bootstrap=1000, plots=False, log=False)
    _, parent, children = _children(grid, "cmp_test")
    assert result["parent_run_id"] == parent.info.run_id
    rows = result["rows"]
    assert {r["run_id"] for r in rows} == set(children)
    assert [r["rank"] for r in rows] == [1, 2, 3, 4]
    assert result["varying"] == ["retriever.top_k"]
    for row in rows:
        run, scores = children[row["run_id"]]
        assert row["value"] == run.data.metrics["mean"]
        assert row["value"] == pytest.approx(math.fsum(scores.values()) / len(scores), abs=1e-12)
        assert row["ci"][0] - 1e-12 <= row["value"] <= row["ci"][1] + 1e-12
        assert row["n"] == len(scores) == 30
        assert row["params"] == {"retriever.top_k": run.data.params["retriever.top_k"]}
    assert [r["value"] for r in rows] == sorted((r["value"] for r in rows), reverse=True)

    test = result["test"]
    a, b = children[rows[0]["run_id"]][1], children[rows[1]["run_id"]][1]
    assert (test["run_a"]["id"], test["run_b"]["id"]) == (rows[0]["run_id"], rows[1]["run_id"])
    assert test["n_pairs"] == 30 and test["same_queries"] and test["same_dataset"]
    assert test["mean_diff"] == pytest.approx(math.fsum(a[i] - b[i] for i in a) / 30, abs=1e-12)
    assert test["ci"][0] <= test["mean_diff"] <= test["ci"][1]
    assert 0 <= test["p_value"] <= 1
    assert test["p_wilcoxon"] is None or 0 <= test["p_wilcoxon"] <= 1
    assert result["notes"] == []

    top = compare("cmp_test", tracking_uri=grid, top=2, bootstrap=200, plots=False, log=False)
    assert [r["run_id"] for r in top["rows"]] == [r["run_id"] for r in rows[:2]]
    with pytest.raises(TrackingError, match="did you mean 'cmp_test'"):
        compare("cmp_tset", tracking_uri=grid, log=False)
    with pytest.raises(ConfigError, match="did you mean 'mean'"):
        compare("cmp_test", "maen", tracking_uri=grid, log=False)


def test_identical_per_query_scores_give_no_difference(twins):
    # two datasets (by sha256): one table each, nothing paired across them
    result = compare("cmp_twins", tracking_uri=twins, plots=False, log=False)
    assert [len(g["rows"]) for g in result["groups"]] == [1, 1]
    assert all(g["test"] is None for g in result["groups"])
    _, _, children = _children(twins, "cmp_twins")
    [ra, rb] = result["rows"]
    a, b = children[ra["run_id"]][1], children[rb["run_id"]][1]
    assert a == b and len(a) == 30  # the premise, read back from samples.jsonl
    # paired only when forced, and said so
    result = compare("cmp_twins", tracking_uri=twins, baseline=ra["run_id"],
                     candidate=rb["run_id"], force=True, plots=False, log=False)
    assert result["varying"] == ["dataset.path"]
    test = result["test"]
    assert test["n_pairs"] == 30 and test["same_queries"]
    assert test["mean_diff"] == 0 and test["ci"] == [0, 0]
    assert test["p_value"] == 1
    assert test["p_wilcoxon"] in (None, 1)
    assert not test["same_dataset"]
    assert len(result["notes"]) == 1 and "differ in dataset" in result["notes"][0]
    assert f"note: {result['notes'][0]}" in result["table"]

    # sweep=all without a parent: logged to a new "compare" run, never listed itself
    first = compare("cmp_twins", tracking_uri=twins, sweep="all", bootstrap=100, plots=False)
    again = compare("cmp_twins", tracking_uri=twins, sweep="all", bootstrap=100, plots=False)
    assert len(first["rows"]) == len(again["rows"]) == 2
    from mlflow.tracking import MlflowClient

    run = MlflowClient(tracking_uri=twins).get_run(first["logged_to"])
    assert run.info.run_name == "compare" and run.data.tags["harness.compare"] == "true"
    assert {a.path for a in MlflowClient(tracking_uri=twins).list_artifacts(
        first["logged_to"], "compare")} == {"compare/table.md", "compare/table.json"}


def test_different_query_sets_are_called_out():
    rows = [{"run_id": "r1", "run_name": "one", "value": 0.75, "dataset_sha256": "s"},
            {"run_id": "r2", "run_name": "two", "value": 0.5, "dataset_sha256": "s"}]
    values = {"r1": {"q1": 1.0, "q2": 0.5}, "r2": {"q1": 0.5, "q2": 0.5, "q3": 0.5}}
    notes = []
    test = top_two(rows, values, notes, 2000, 0.95, 0)
    # one non-zero difference (q1: +0.5): 2 sign patterns, both reach |0.5| -> p = 1
    assert (test["n_pairs"], test["mean_diff"], test["p_value"]) == (2, 0.25, 1.0)
    assert not test["same_queries"] and test["same_dataset"]
    assert notes == ["#1 and #2 were scored on different query sets (2 and 3 queries); "
                     "the test uses the 2 in both"]


def test_unknown_key_exits_2_with_a_did_you_mean(tmp_path):
    proc = _compare_cli("sqlite:///unused.db", "experiment=x", "metirc=mean", cwd=tmp_path)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert proc.stderr.startswith("error: unknown key 'metirc' (did you mean 'metric'?)")
    assert not (tmp_path / "unused.db").exists()
    proc = _compare_cli("sqlite:///unused.db", "experiment=x", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith("error: no MLflow store at")
    usage = _compare_cli("", "--help", cwd=tmp_path).stdout
    assert usage.startswith("usage: python -m harness.compare")
    with pytest.raises(ConfigError, match="required"):
        parse(["metric=ndcg@10"])
    assert parse(["experiment=e", "top=3", "plots=false", "confidence=0.9"]) == {
        "experiment": "e", "metric": "headline", "tracking_uri": None, "sweep": "latest", "top": 3,
        "bootstrap": 2000, "confidence": 0.9, "seed": 0, "plots": False, "log": True,
        "baseline": None, "candidate": None, "force": False, "fail_if_worse": False,
        "alpha": 0.05, "min_delta": 0.0, "pareto": None}


def test_statistics_on_hand_computed_cases():
    # d = (1, 1, 1): of the 8 sign patterns only +++ and --- reach |sum| = 3 -> p = 2/8
    t = paired_test({"a": 1.0, "b": 1.0, "c": 1.0}, {"a": 0.0, "b": 0.0, "c": 0.0})
    assert (t["n_pairs"], t["mean_diff"], t["p_value"], t["p_method"]) == (3, 1.0, 0.25, "exact")
    assert t["ci"] == [1.0, 1.0]
    # d = (0.25, -0.25, 0.5), observed |sum| 0.5: patterns reaching it: 6 of 8
    assert sign_flip_p([0.25, -0.25, 0.5], 2000, 0) == (0.75, "exact")
    # zeros carry no sign: (0, 0, 2) has 2 patterns, both |sum| = 2
    assert sign_flip_p([0.0, 0.0, 2.0], 2000, 0) == (1.0, "exact")
    # 2**20 patterns > 100 resamples: random flips; all-equal signs (2 of 2**20) is the only
    # way to reach |sum| = 20, so almost surely no hit and p = (1 + 0) / (1 + 100)
    assert sign_flip_p([1.0] * 20, 100, 0) == (1 / 101, "randomization")
    # different query sets: only shared ids are paired
    t = paired_test({"a": 1.0, "b": 0.5, "x": 0.0}, {"a": 0.0, "b": 0.5, "y": 1.0})
    assert (t["n_pairs"], t["same_queries"], t["mean_diff"]) == (2, False, 0.5)
    assert bootstrap_ci([0.5] * 10, 500, 0.95, 0) == (0.5, 0.5)
    lo, hi = bootstrap_ci([0.0, 1.0] * 50, 2000, 0.95, 0)
    # the mean of 100 fair 0/1 draws: sd 0.05, so the 95% interval is about 0.5 +- 0.098
    assert 0.38 < lo < 0.45 and 0.55 < hi < 0.62


def test_per_query_values_skip_unscored_rows_and_read_retrieval_keys(tmp_path):
    class Store:  # stands in for MlflowClient.download_artifacts
        def download_artifacts(self, run_id, path, dst):
            out = tmp_path / "samples.jsonl"
            rows = [{"id": "a", "score": 0.5, "ndcg@10": 1.0},
                    {"id": "b", "score": None, "ndcg@10": None, "error": "missing field"},
                    {"id": 3, "score": 1, "ndcg@10": 0.25}]
            out.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
            return str(out)

    assert per_query(Store(), "r", "mean", tmp_path) == {"a": 0.5, "3": 1.0}
    assert per_query(Store(), "r", "ndcg@10", tmp_path) == {"a": 1.0, "3": 0.25}
    assert per_query(Store(), "r", "ndcg_at_10", tmp_path) == {"a": 1.0, "3": 0.25}
    assert per_query(Store(), "r", "recall@10", tmp_path) is None
