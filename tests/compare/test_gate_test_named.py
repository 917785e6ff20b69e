"""``compare ... fail_if_worse=true`` names the one test it decides with (the paired
sign-flip test of the mean difference), prints its verdict first, and Holm-adjusts the
p-values when it decides several comparisons. p-values are recomputed here from their
definitions (every sign pattern; Holm's step-down rule), not taken from our output."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

from harness.cli.compare import main as compare_main
from harness.compare.pairing import gate
from harness.compare.stats import holm

#: Six queries, each with its relevant chunk at rank 2: metric.eps=1 lowers every score.
ROWS = [{"id": f"q{i}", "retrieved_context_ids": [f"x{i}", f"r{i}", f"y{i}"][: 2 + i % 2],
         "reference_context_ids": [f"r{i}"]} for i in range(6)]


def exact_sign_flip_p(diffs: list[float]) -> float:
    """Two-sided: the share of the 2**m sign patterns of the non-zero differences whose
    sum is at least as far from 0 as the observed one."""
    d = [x for x in diffs if x != 0]
    observed = abs(sum(d))
    patterns = list(itertools.product((1, -1), repeat=len(d)))
    return sum(abs(sum(s * x for s, x in zip(p, d, strict=True))) >= observed - 1e-12
               for p in patterns) / len(patterns)


def holm_by_hand(p: list[float]) -> list[float]:
    """Holm (1979): sort ascending, multiply the i-th (from 0) by m - i, take the running
    maximum, cap at 1."""
    order = sorted(range(len(p)), key=lambda i: p[i])
    out, best = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        best = max(best, min(1.0, (len(p) - rank) * p[i]))
        out[i] = best
    return out


@pytest.mark.parametrize("p", [[0.01, 0.04, 0.03, 0.005], [0.5], [0.2, 0.2, 0.01],
                               [0.9, 0.001, 0.02, 0.04, 0.3]])
def test_holm_adjusts_as_defined(p: list[float]) -> None:
    assert holm(p) == pytest.approx(holm_by_hand(p), abs=1e-15)


def test_holm_worked_example() -> None:
    # 0.005*4=0.02, 0.01*3=0.03, 0.03*2=0.06, 0.04*1=0.04 -> running max 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def _test(name: str, diff: float, p: float) -> dict[str, Any]:
    return {"run_a": {"id": name, "name": name}, "mean_diff": diff, "p_value": p,
            "p_method": "exact", "n_pairs": 10}


def test_one_comparison_names_its_test() -> None:
    failed, line = gate(_test("c", -0.1, 0.03), 0.05, 0.0)
    assert failed
    assert line == ("gate FAILED: the candidate is worse: candidate - baseline = -0.1000 on 10 "
                    "pairs, p = 0.03 (paired sign-flip test of the mean difference, exact); "
                    "fails when below 0 with p < 0.05")


def test_several_comparisons_are_holm_adjusted() -> None:
    # raw p 0.03 and 0.04 are each below 0.05, but not after Holm (0.06, 0.06): passes
    failed, text = gate([_test("c1", -0.1, 0.03), _test("c2", -0.2, 0.04)], 0.05, 0.0)
    assert not failed
    lines = text.splitlines()
    assert lines[0] == "gate passed: 0 of 2 candidates worse"
    assert "p = 0.06 (paired sign-flip test of the mean difference, exact; Holm-adjusted " \
           "over 2 comparisons)" in lines[1]
    # 0.001 stays below alpha after Holm (0.002): that candidate fails the gate
    failed, text = gate([_test("c1", -0.1, 0.001), _test("c2", 0.2, 0.04)], 0.05, 0.0)
    assert failed
    assert text.splitlines()[0] == "gate FAILED: the candidate is worse: 1 of 2 candidates worse"
    assert text.splitlines()[1].startswith("  worse: candidate c1 - baseline = -0.1000")
    assert text.splitlines()[2].startswith("  ok: candidate c2 - baseline = +0.2000")


@pytest.mark.slow
def test_the_cli_prints_the_verdict_first_and_names_the_test(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), "utf-8")
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    for eps in (0, 1):
        result = run_cli("dataset=jsonl", f"dataset.path={data}", "metric=id_ranked",
                         f"metric.eps={eps}", "experiment_name=named", cwd=tmp_path,
                         env={"MLFLOW_TRACKING_URI": store})
        assert result.returncode == 0, result.stderr
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=store)
    exp = client.get_experiment_by_name("named")
    ids = {r.data.params["metric.eps"]: r.info.run_id
           for r in client.search_runs([exp.experiment_id])}
    code = 0
    try:
        compare_main([f"baseline={ids['0']}", f"candidate={ids['1']}", f"tracking_uri={store}",
                      "fail_if_worse=true", "bootstrap=2000", "plots=false", "log=false"])
    except SystemExit as e:
        code = int(e.code or 0)
    out = capsys.readouterr().out
    # scores by hand: relevant at rank 2 -> AP = (1/2) / (1 + eps)
    diffs = [0.5 / 2 - 0.5 for _ in ROWS]
    p = exact_sign_flip_p(diffs)
    assert p == pytest.approx(2 / 64)
    first = out.splitlines()[0]
    assert code == 4
    assert first == (f"gate FAILED: the candidate is worse: candidate - baseline = "
                     f"{sum(diffs) / len(diffs):+.4f} on 6 pairs, p = {p:.4g} (paired sign-flip "
                     "test of the mean difference, exact); fails when below 0 with p < 0.05")
    assert "Wilcoxon tests signed ranks, for reference" in out
