"""``harness.compare`` naming a baseline and a candidate, refusing pairs that measured
different things, pairing on common ids, the tie rule, ``sweep=all`` grouping; the CI gates
(``fail_if_worse``, ``run.fail_under``, exit 4); retrieval cut-offs above the retrieval depth.

Real runs made by the real CLI (in this process) into a real SQLite MLflow store; expected
values come from the input files by hand, never from our own output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli
from helpers.cli import compare_cli

from harness.compare import compare
from harness.core.errors import ConfigError
from harness.core.types import RagSample
from harness.metrics.retrieval import recall_at_k, sample_grades

#: sweeps into a store the module shares, and compare on them: seconds each
pytestmark = pytest.mark.slow
SAMPLE = ROOT / "harness" / "data" / "sample_rag.jsonl"
#: id_based scores by hand (|set(retrieved) & reference| / |set(retrieved)|): q1 1/2, q2 2/2,
#: q3 unscored (no reference ids), q4 1/2. So run.limit=2: mean 0.75, 0 unscored;
#: run.limit=3: 0.75, 1 unscored; run.limit=4: 2/3, 1 unscored.
TIE_ROWS = [
    {"id": "q1", "retrieved_context_ids": ["a", "b"], "reference_context_ids": ["a"]},
    {"id": "q2", "retrieved_context_ids": ["c", "d"], "reference_context_ids": ["c", "d"]},
    {"id": "q3", "retrieved_context_ids": ["e"]},
    {"id": "q4", "retrieved_context_ids": ["f", "g"], "reference_context_ids": ["g"]},
]
TIE_MEAN = {2: 0.75, 3: 0.75, 4: 2 / 3}
TIE_UNSCORED = {2: 0, 3: 1, 4: 1}


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path



@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('gates_store') / 'mlflow.db'}"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, store: str) -> dict[str, Any]:
    """Runs in experiment ``gates``, from two sweeps (one process, so fast): id_ranked with
    metric.eps=0,1 on the sample and on its first 20 records, and id_based on the sample.
    ``base``: eps 0 on the sample; ``worse``: eps 1 (every query with a relevant chunk
    scores lower); ``other_data``: eps 0 on the 20; ``other_metric``: id_based. Cut-offs
    above the retrieval depth dropped (``run.retrieval_beyond_depth=false``)."""
    cwd = tmp_path_factory.mktemp("gates")
    first20 = _write_jsonl(cwd / "first20.jsonl", [
        json.loads(line) for line in SAMPLE.read_text("utf-8").splitlines()[:20]])
    env = {"MLFLOW_TRACKING_URI": store}
    sweeps = {"s1": ["metric=id_ranked", "metric.eps=0,1", f"dataset.path={SAMPLE},{first20}"],
              "s2": ["metric=id_based", f"dataset.path={SAMPLE}"]}
    for name, args in sweeps.items():
        result = run_cli("-m", *args, "dataset=jsonl", "experiment_name=gates",
                         "run.retrieval_beyond_depth=false",
                         f"hydra.sweep.dir={cwd / name}", cwd=cwd, env=env)
        assert result.returncode == 0, result.stderr[-2000:]
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=store)
    exp = client.get_experiment_by_name("gates")
    made: dict[str, Any] = {}
    for run in client.search_runs([exp.experiment_id]):
        p = run.data.params
        key = {("id_ranked", "0", str(SAMPLE)): "base", ("id_ranked", "1", str(SAMPLE)): "worse",
               ("id_ranked", "0", str(first20)): "other_data",
               ("id_based", None, str(SAMPLE)): "other_metric"}.get(
            (p.get("metric.name"), p.get("metric.eps") if p.get("metric.name") == "id_ranked"
             else None, p.get("dataset.path")))
        if key:
            folder = Path(run.data.tags["hydra.sweep_dir"]) / run.data.tags["hydra.job_num"]
            rows = [json.loads(x) for x in (folder / "samples.jsonl").read_text().splitlines()]
            summary = json.loads((folder / "summary.json").read_text("utf-8"))
            made[key] = {"id": run.info.run_id, "run": run, "rows": rows, "summary": summary}
    assert {"base", "worse", "other_data", "other_metric"} <= made.keys()
    return made


def _scores(run: dict[str, Any]) -> dict[str, float]:
    return {r["id"]: r["score"] for r in run["rows"] if r["score"] is not None}


def test_baseline_and_candidate_by_id_name_and_overrides_and_the_gate(
        runs: dict[str, Any], store: str, capsys: pytest.CaptureFixture[str]) -> None:
    base, worse = runs["base"], runs["worse"]
    name = base["run"].info.run_name
    overrides = f"metric=id_ranked,metric.eps=1,dataset.path={SAMPLE}"
    a = compare(baseline=base["id"], candidate=overrides,
                tracking_uri=store, bootstrap=200, plots=False, log=False)
    b = compare("gates", baseline=name, candidate=worse["id"], tracking_uri=store,
                bootstrap=200, plots=False, log=False)
    for result in (a, b):
        assert [r["run_id"] for r in result["rows"]] == [base["id"], worse["id"]]
        assert [r["rank"] for r in result["rows"]] == ["baseline", "candidate"]
    sb, sw = _scores(base), _scores(worse)
    assert sb.keys() == sw.keys() and len(sb) == 30
    diffs = [sw[i] - sb[i] for i in sb]
    assert all(d <= 0 for d in diffs) and sum(d < 0 for d in diffs) > 10  # eps=1 lowers them
    test = a["test"]
    assert test["n_pairs"] == 30 and test["dropped_a"] == test["dropped_b"] == 0
    assert test["mean_diff"] == pytest.approx(sum(diffs) / 30, abs=1e-12)
    # more non-zero differences than 2**n <= 200 allows: random flips, none reach the
    # observed sum (all signs equal), so p = 1 / (1 + 200)
    assert test["p_value"] == pytest.approx(1 / 201)

    code, out, err = compare_cli(capsys, f"baseline={base['id']}", f"candidate={worse['id']}",
                                  f"tracking_uri={store}", "fail_if_worse=true",
                                  "bootstrap=200", "plots=false", "log=false")
    assert code == 4, err
    assert out.splitlines()[-1].startswith("gate FAILED: the candidate is worse: "
                                           f"candidate - baseline = {sum(diffs) / 30:+.4f}")
    # the other way round it is better; and a tolerance larger than the loss passes
    for args in ([f"baseline={worse['id']}", f"candidate={base['id']}"],
                 [f"baseline={base['id']}", f"candidate={worse['id']}", "min_delta=0.5"]):
        code, out, err = compare_cli(capsys, *args, f"tracking_uri={store}", "fail_if_worse=true",
                                      "bootstrap=200", "plots=false", "log=false")
        assert code == 0, err
        assert out.splitlines()[-1].startswith("gate passed: ")
    with pytest.raises(ConfigError, match="needs baseline=RUN and candidate=RUN"):
        compare("gates", tracking_uri=store, fail_if_worse=True, log=False)
    with pytest.raises(ConfigError, match="no finished run has that id, name or overrides"):
        compare(baseline=base["id"], candidate="metric=id_ranked,metric.eps=7",
                tracking_uri=store, log=False)


def test_refuses_other_metric_or_dataset_unless_forced_and_pairs_common_ids(
        runs: dict[str, Any], store: str, capsys: pytest.CaptureFixture[str]) -> None:
    base = runs["base"]["id"]
    for other, what in (("other_metric", "differ in metric (id_ranked vs id_based"),
                        ("other_data", "differ in dataset (dataset.sha256 ")):
        code, out, err = compare_cli(capsys, f"baseline={base}", f"candidate={runs[other]['id']}",
                                      f"tracking_uri={store}", "plots=false", "log=false")
        assert code == 2 and out == ""
        assert len(err.strip().splitlines()) == 1 and what in err and "force=true" in err
    forced = compare(baseline=base, candidate=runs["other_data"]["id"], force=True,
                     tracking_uri=store, bootstrap=200, plots=False, log=False)
    test = forced["test"]
    # the candidate scored the first 20 of the baseline's 30 queries
    assert (test["n_pairs"], test["dropped_a"], test["dropped_b"]) == (20, 0, 10)
    assert any(n.startswith("forced: baseline and candidate differ in dataset")
               for n in forced["notes"])
    assert "dropped 0 scored only by candidate, 10 only by baseline" in forced["table"]


def test_sweep_all_groups_by_dataset_and_metric(runs: dict[str, Any], store: str) -> None:
    result = compare("gates", sweep="all", tracking_uri=store, bootstrap=100, plots=False,
                     log=False)
    groups = [{r["run_id"] for r in g["rows"]} for g in result["groups"]]
    assert len(groups) == 3 and len(set().union(*groups)) == 5
    assert {runs["base"]["id"], runs["worse"]["id"]} in groups
    assert {runs["other_metric"]["id"]} in groups
    assert any(runs["other_data"]["id"] in g and len(g) == 2 for g in groups)
    assert result["table"].count("### dataset ") == 3
    # each group of two is tested within itself; nothing is paired across groups
    for g, ids in zip(result["groups"], groups, strict=True):
        t = g["test"]
        assert t is None if len(ids) == 1 else {t["run_a"]["id"], t["run_b"]["id"]} == ids
    # a retrieval metric is the same for every variant: grouped by dataset only
    mrr = compare("gates", "mrr", sweep="all", tracking_uri=store, bootstrap=100,
                  plots=False, log=False)
    assert sorted(len(g["rows"]) for g in mrr["groups"]) == [2, 3]


def test_the_tie_rule_and_fail_under_in_a_sweep(
        tmp_path: Path, store: str, capsys: pytest.CaptureFixture[str]) -> None:
    data = _write_jsonl(tmp_path / "tie.jsonl", TIE_ROWS)
    result = run_cli("-m", "metric=id_based", "dataset=jsonl", f"dataset.path={data}",
                     "run.limit=3,2,4", "run.seed=0,1", "run.fail_under=0.7",
                     "experiment_name=gates_tie", f"hydra.sweep.dir={tmp_path / 'sweep'}",
                     cwd=tmp_path, env={"MLFLOW_TRACKING_URI": store})
    # the two run.limit=4 jobs (mean 2/3) fail the gate, the others pass: exit 4
    assert result.returncode == 4, result.stderr[-2000:]
    assert result.stderr.count("error: gate failed: mean 0.6667 is below run.fail_under=0.7") == 2

    ranked = compare("gates_tie", tracking_uri=store, bootstrap=100, plots=False, log=False)
    rows = ranked["rows"]
    assert len(rows) == 6 and len(ranked["groups"]) == 1
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=store)
    nums = {r["run_id"]: int(client.get_run(r["run_id"]).data.tags["hydra.job_num"])
            for r in rows}
    limit = {r["run_id"]: int(client.get_run(r["run_id"]).data.params["run.limit"]) for r in rows}
    for r in rows:
        assert r["value"] == pytest.approx(TIE_MEAN[limit[r["run_id"]]], abs=1e-12)
    # highest mean; ties: fewer unscored, then the earlier job
    expected = sorted(nums, key=lambda i: (-TIE_MEAN[limit[i]], TIE_UNSCORED[limit[i]], nums[i]))
    assert [r["run_id"] for r in rows] == expected
    assert [limit[i] for i in expected] == [2, 2, 3, 3, 4, 4]
    parent = client.get_run(ranked["parent_run_id"])
    assert parent.data.tags["sweep.best_run_id"] == expected[0]  # the same rule as the parent
    # limit=3 scored q1, q2 of the ids limit=2 scored: paired on both, nothing dropped
    assert ranked["test"]["n_pairs"] == 2


def test_fail_under_exits_4_with_one_line(tmp_path: Path) -> None:
    data = _write_jsonl(tmp_path / "tie.jsonl", TIE_ROWS)
    args = ("metric=id_based", "dataset=jsonl", f"dataset.path={data}", "tracking=none")
    failed = run_cli(*args, "run.fail_under=0.67", cwd=tmp_path)
    assert failed.returncode == 4
    assert failed.stderr.strip().splitlines() == [
        f"error: gate failed: mean 0.6667 is below run.fail_under=0.67 ({failed.out_dir})"]
    assert failed.summary()["gate"] == {"fail_under": 0.67, "passed": False}
    assert failed.summary()["mean"] == pytest.approx(2 / 3, abs=1e-12)  # outputs kept
    passed = run_cli(*args, "run.fail_under=0.66", cwd=tmp_path)
    assert passed.returncode == 0 and passed.summary()["gate"]["passed"] is True
    assert "gate" not in run_cli(*args, cwd=tmp_path).summary()
    bad = run_cli(*args, "run.fail_under=1.5", cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "error: run.fail_under: expected finite float in [0, 1] or mapping or null, got 1.5"]


def test_cutoffs_above_the_retrieval_depth_are_dropped_or_flagged(
        runs: dict[str, Any], tmp_path: Path) -> None:
    samples = [json.loads(line) for line in SAMPLE.read_text("utf-8").splitlines()]
    depth = max(len(s["retrieved_context_ids"]) for s in samples)
    assert depth < 10  # the premise: the default cut-off 10 is never reached
    base = runs["base"]
    summary = base["summary"]
    assert summary["retrieval_cutoffs"] == {
        "depth": depth, "above_depth": [10],
        "dropped": [f"{m}_at_10" for m in ("recall", "ndcg", "precision", "hit_rate", "map")],
        "logged": []}
    # the default cut-off 5 is reached: logged as computed
    assert set(summary["retrieval"]) == {"recall_at_5", "ndcg_at_5", "precision_at_5",
                                         "hit_rate_at_5", "map_at_5", "mrr", "n_queries"}
    metrics, tags = base["run"].data.metrics, base["run"].data.tags
    assert "recall_at_10" not in metrics and "ndcg_at_10" not in metrics
    assert metrics["retrieval_depth"] == depth
    assert tags["retrieval.above_depth.dropped"] == (
        "recall_at_10,ndcg_at_10,precision_at_10,hit_rate_at_10,map_at_10")
    assert all("recall_at_10" not in row for row in base["rows"])

    # a cut-off below the depth is logged as computed; run.objective's is kept, flagged
    args = ("metric=id_ranked", "tracking=none", "run.retrieval_ks=[2,10]")
    run = run_cli(*args, "run.objective=ndcg_at_10", "run.retrieval_beyond_depth=false",
                  cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    s = run.summary()
    assert s["retrieval_cutoffs"]["dropped"] == [
        "recall_at_10", "precision_at_10", "hit_rate_at_10", "map_at_10"]
    assert s["retrieval_cutoffs"]["logged"] == ["ndcg_at_10"]
    assert (f"recall_at_10, precision_at_10, hit_rate_at_10, map_at_10 not logged: above "
            f"the retrieval depth {depth}") in run.stdout
    assert f"ndcg_at_10 above the retrieval depth {depth}: scored as if padded" in run.stdout
    rag = [RagSample(id=x["id"], retrieved_context_ids=tuple(x["retrieved_context_ids"]),
                     reference_context_ids=tuple(x["reference_context_ids"])) for x in samples]
    hand = sum(recall_at_k(x.retrieved_context_ids or [], sample_grades(x), 2) for x in rag)
    assert s["retrieval"]["recall_at_2"] == pytest.approx(hand / len(rag), abs=1e-12)
    assert "ndcg_at_10" in s["retrieval"] and "recall_at_10" not in s["retrieval"]
    # by default (run.retrieval_beyond_depth=true) all of them are kept, as trec_eval does
    default = run_cli(*args, cwd=tmp_path)
    assert "not logged" not in default.stdout
    kept = default.summary()
    explicit = run_cli(*args, "run.retrieval_beyond_depth=true", cwd=tmp_path).summary()
    for key in ("retrieval", "retrieval_cutoffs"):
        assert kept[key] == explicit[key]
    assert kept["retrieval_cutoffs"]["dropped"] == []
    assert kept["retrieval_cutoffs"]["logged"] == [
        "recall_at_10", "ndcg_at_10", "precision_at_10", "hit_rate_at_10", "map_at_10"]
    assert kept["retrieval"]["recall_at_10"] == pytest.approx(
        sum(recall_at_k(x.retrieved_context_ids or [], sample_grades(x), 10) for x in rag)
        / len(rag), abs=1e-12)
