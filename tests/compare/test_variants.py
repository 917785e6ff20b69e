"""``harness.compare`` on runs of several variants (``metric=[a,b]``): a run is paired on its
headline (the first listed), ``<variant>/mean`` pairs that variant of each run (a run of it
alone included), and a baseline and candidate of several variants are compared per variant
they both scored, the note saying which were and which were not.

Real runs made by the real CLI (in this process) into a real SQLite MLflow store; the
expected differences come from the rows of single-variant runs."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from conftest import ROOT, run_cli

from harness.compare import compare
from harness.core.errors import ConfigError

pytestmark = pytest.mark.slow  # five runs logged to MLflow

SAMPLE = ROOT / "harness" / "data" / "sample_rag.jsonl"
RUNS = {"ranked": ("metric=id_ranked",), "ranked_eps1": ("metric=id_ranked", "metric.eps=1"),
        "non_llm": ("metric=non_llm", "metric.eps=1"),
        "multi": ("metric=[id_ranked,non_llm]", "metric.eps=1"),
        "other": ("metric=[non_llm,id_based]", "metric.eps=1")}


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    cwd = tmp_path_factory.mktemp("cmp_variants")
    store = f"sqlite:///{cwd / 'mlflow.db'}"
    out: dict[str, Any] = {"store": store}
    for name, args in RUNS.items():
        result = run_cli(*args, "dataset=jsonl", f"dataset.path={SAMPLE}", "run.report=false",
                         "experiment_name=variants", f"hydra.run.dir={cwd / name}", cwd=cwd,
                         env={"MLFLOW_TRACKING_URI": store})
        assert result.returncode == 0, result.stderr[-2000:]
        rows = [json.loads(x) for x in (cwd / name / "samples.jsonl").read_text().splitlines()]
        out[name] = {"rows": rows}
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=store)
    exp = client.get_experiment_by_name("variants")
    found = client.search_runs([exp.experiment_id], order_by=["attributes.start_time ASC"])
    assert [r.data.tags["choice.metric"] for r in found] == [
        a[0].removeprefix("metric=") for a in RUNS.values()]
    for name, run in zip(RUNS, found, strict=True):
        out[name]["id"] = run.info.run_id
    return out


def _scores(run: dict[str, Any], variant: str | None = None) -> dict[str, float]:
    return {r["id"]: (r["variants"][variant] if variant else r)["score"] for r in run["rows"]
            if (r["variants"][variant] if variant else r)["score"] is not None}


def _diff(cand: dict[str, float], base: dict[str, float]) -> float:
    ids = cand.keys() & base.keys()
    return math.fsum(cand[i] - base[i] for i in ids) / len(ids)


def _pair(made: dict[str, Any], base: str, cand: str, **kw: Any) -> dict[str, Any]:
    return compare(None, tracking_uri=made["store"], baseline=made[base]["id"],
                   candidate=made[cand]["id"], plots=False, log=False, bootstrap=200, **kw)


def test_a_single_run_pairs_with_the_headline_of_a_list(made: dict[str, Any]) -> None:
    result = _pair(made, "ranked", "multi")
    expected = _diff(_scores(made["ranked_eps1"]), _scores(made["ranked"]))
    assert expected < 0  # eps=1 lowers every query that has a relevant chunk
    assert result["test"]["mean_diff"] == pytest.approx(expected)
    assert result["test"]["n_pairs"] == len(_scores(made["ranked"]))
    assert set(result["variants"]) == {"id_ranked"}
    assert result["variants"]["id_ranked"]["mean_diff"] == pytest.approx(expected)
    [note] = [n for n in result["notes"] if n.startswith("per variant")]
    assert note.endswith("not compared: non_llm (candidate only)")
    assert f"id_ranked {expected:+.4f} on {result['test']['n_pairs']} pairs" in note


def test_a_listed_variant_pairs_with_its_run_alone(made: dict[str, Any]) -> None:
    result = _pair(made, "non_llm", "multi", metric="non_llm/mean")
    assert result["test"]["mean_diff"] == 0.0  # the same variant, the same scores
    assert result["test"]["n_pairs"] == len(_scores(made["non_llm"])) > 0
    assert _scores(made["multi"], "non_llm") == _scores(made["non_llm"])
    assert [r["value"] for r in result["rows"]] == pytest.approx(
        [math.fsum(s.values()) / len(s) for s in (_scores(made["non_llm"]),) * 2])


def test_two_lists_with_different_headlines_pair_on_a_variant_both_have(
    made: dict[str, Any]
) -> None:
    with pytest.raises(ConfigError, match=r"id_ranked vs non_llm: their mean are different "
                       r"quantities; both scored non_llm: pair one with metric=non_llm/mean"):
        _pair(made, "multi", "other")
    result = _pair(made, "multi", "other", metric="non_llm/mean")
    assert result["test"]["mean_diff"] == 0.0
    assert result["test"]["n_pairs"] == len(_scores(made["non_llm"]))


@pytest.mark.parametrize(("base", "cand", "what"), [
    ("ranked", "non_llm", "id_ranked vs non_llm"),
    ("non_llm", "multi", "non_llm vs id_ranked"),
])
def test_different_headlines_are_still_refused(made: dict[str, Any], base: str, cand: str,
                                                what: str) -> None:
    with pytest.raises(ConfigError, match=f"{what}: their mean are different quantities"):
        _pair(made, base, cand)
