"""``run.fail_under`` on any logged metric: a mapping of metric to floor (``-name``: a ceiling)
exits 4 with the verdict first and one line per failing metric; a number gates the headline
(the mean; the PPI++ mean with human labels); a name no run logs is a config error before
any work."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import run_cli
from helpers.errors import fails

#: Two samples whose metrics are worked out by hand below.
ROWS = [
    {"id": "s1", "retrieved_context_ids": ["a", "b", "c"], "reference_context_ids": ["b"]},
    {"id": "s2", "retrieved_context_ids": ["x", "y"], "reference_context_ids": ["x", "z"]},
]
L3 = 1 / math.log2(3)  # the discount at rank 2
#: By hand: s1 finds its one relevant id at rank 2, s2 one of its two at rank 1.
NDCG_3 = (L3 / 1 + 1 / (1 + L3)) / 2
AP_MEAN = (1 / 2 + 1 / 1) / 2  # id_ranked: precision at each relevant rank, over the found
PRECISION_3 = (1 / 3 + 1 / 3) / 2
HIT_1 = (0 + 1) / 2


def data(tmp_path: Path) -> tuple[str, ...]:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), "utf-8")
    return ("dataset=jsonl", f"dataset.path={path}", "metric=id_ranked", "tracking=none",
            "run.retrieval_ks=[1,3,10]")


def err_lines(stderr: str) -> list[str]:
    return [x for x in stderr.splitlines() if x.strip()]


def test_the_logged_values_are_the_hand_computed_ones(tmp_path: Path) -> None:
    result = run_cli(*data(tmp_path), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    s = result.summary()
    assert s["mean"] == pytest.approx(AP_MEAN, abs=1e-12)
    assert s["retrieval"]["ndcg_at_3"] == pytest.approx(NDCG_3, abs=1e-12)
    assert s["retrieval"]["precision_at_3"] == pytest.approx(PRECISION_3, abs=1e-12)
    assert s["retrieval"]["hit_rate_at_1"] == pytest.approx(HIT_1, abs=1e-12)


def test_a_floor_on_ndcg_fails_with_the_verdict_first(tmp_path: Path) -> None:
    result = run_cli(*data(tmp_path), "run.fail_under={ndcg_at_3: 0.7, mean: 0.5, "
                     "precision_at_3: 0.3}", cwd=tmp_path)
    assert result.returncode == 4, result.stderr
    assert err_lines(result.stderr) == [
        f"error: gate failed: 1 of 3 gates of run.fail_under failed ({result.out_dir})",
        f"  ndcg_at_3 {NDCG_3:.4f} is below its floor 0.7",
    ]
    s = result.summary()  # outputs kept
    assert s["gate"]["passed"] is False
    assert s["gate"]["fail_under"] == {"ndcg_at_3": 0.7, "mean": 0.5, "precision_at_3": 0.3}


def test_every_failing_metric_has_its_line(tmp_path: Path) -> None:
    result = run_cli(*data(tmp_path), "run.fail_under={mean: 0.8, ndcg_at_3: 0.5, "
                     "-hit_rate_at_1: 0.4, recall_at_10: 0.1}",
                     "run.retrieval_beyond_depth=false", cwd=tmp_path)
    assert result.returncode == 4
    lines = err_lines(result.stderr)
    verdict = f"error: gate failed: 3 of 4 gates of run.fail_under failed ({result.out_dir})"
    assert lines[0] == verdict
    assert lines[1:] == [
        f"  mean {AP_MEAN:.4f} is below its floor 0.8",
        f"  hit_rate_at_1 {HIT_1:.4f} is above its ceiling 0.4",
        "  recall_at_10: not logged by this run (its cut-off is above the retrieval depth 3; "
        "run.retrieval_beyond_depth=true logs it)",
    ]


def test_gates_that_hold_pass(tmp_path: Path) -> None:
    result = run_cli(*data(tmp_path), "run.fail_under={ndcg_at_3: 0.62, mean: 0.75, "
                     "-hit_rate_at_1: 0.5, map_at_3: 0.5}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr  # each value equals or beats its bound
    assert result.summary()["gate"]["passed"] is True


def test_a_number_still_gates_the_mean(tmp_path: Path) -> None:
    failed = run_cli(*data(tmp_path), "run.fail_under=0.76", cwd=tmp_path)
    assert failed.returncode == 4
    assert err_lines(failed.stderr) == [
        f"error: gate failed: mean {AP_MEAN:.4f} is below run.fail_under=0.76 ({failed.out_dir})"]
    assert run_cli(*data(tmp_path), "run.fail_under=0.75", cwd=tmp_path).returncode == 0


@pytest.mark.parametrize(("setting", "fragments"), [
    ("{ncdg_at_3: 0.5}", ["run.fail_under: 'ncdg_at_3' is not a metric a run logs",
                          "did you mean 'ndcg_at_3'?"]),
    ("{ndcg_at_5: 0.5}", ["'ndcg_at_5' is not a metric a run logs",
                          "the cut-offs are run.retrieval_ks=[1, 3, 10]"]),
    ("{mean: high}", ["run.fail_under.mean: expected a finite number, got 'high'"]),
    ("{mean: true}", ["run.fail_under.mean: expected a finite number, got True"]),
    ("{}", ["run.fail_under: an empty mapping gates nothing"]),
    ("1.5", ["run.fail_under: expected finite float in [0, 1]", "got 1.5"]),
])
def test_a_bad_gate_is_a_config_error_before_work(tmp_path: Path, setting: str,
                                                   fragments: list[str]) -> None:
    fails(run_cli(*data(tmp_path), f"run.fail_under={setting}", cwd=tmp_path), *fragments)


def test_open_families_are_accepted(tmp_path: Path) -> None:
    # judge/<counter> and retriever/<name> are known only after the run: not logged here
    result = run_cli(*data(tmp_path), "run.fail_under={retriever/coverage: 0.5}", cwd=tmp_path)
    assert result.returncode == 4
    assert err_lines(result.stderr)[1] == ("  retriever/coverage: not logged by this run (this "
                                           "run logs no retriever/<name>: its retriever "
                                           "reports none)")


def test_the_new_retrieval_metrics_are_objectives_too(tmp_path: Path) -> None:
    # run.objective names what a run logs: precision, hit rate and MAP at each cut-off too
    result = run_cli(*data(tmp_path), "run.objective=map_at_3", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.summary()["retrieval"]["map_at_3"] == pytest.approx((1 / 2 + 1 / 2) / 2)


def test_a_number_gates_the_headline_the_ppi_mean_with_labels(tmp_path: Path) -> None:
    """With human labels the bare ``run.fail_under=X`` holds the headline (the PPI++ mean),
    not the judge's mean: a floor between the two passes or fails as the PPI++ mean says."""
    labelled = ("metric=id_ranked", "tracking=none", "run.human_labels=qrels",
                "run.human_label_samples=10")
    first = run_cli(*labelled, cwd=tmp_path).summary()
    ppi, judge = first["confidence"]["mean"], first["mean"]
    assert ppi != judge
    between = (ppi + judge) / 2
    result = run_cli(*labelled, f"run.fail_under={between}", cwd=tmp_path)
    if ppi > judge:  # the headline clears the floor the judge's mean would miss
        assert result.returncode == 0, result.stderr
        assert result.summary()["gate"]["passed"] is True
    else:
        assert result.returncode == 4, result.stderr
        assert f"ppi_mean (the headline: the PPI++ mean) {ppi:.4g}" in result.stderr
    above = run_cli(*labelled, f"run.fail_under={max(ppi, judge) + 0.01}", cwd=tmp_path)
    assert above.returncode == 4, above.stderr
    [line] = err_lines(above.stderr)
    assert line.startswith("error: gate failed: ppi_mean (the headline: the PPI++ mean) "), line
