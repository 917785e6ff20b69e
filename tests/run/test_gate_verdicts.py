"""The console's gate verdict and the exit code agree, for every gate.

``run.fail_under`` prints ``passed`` (exit 0) or ``FAILED`` (exit 4); a run that broke a
limit (exit 3: nothing scored, more unscored than ``run.max_unscored_frac``, too few human
labels for the interval a ``ci_low`` gate reads) prints ``not decided``: its numbers decide
no gate. It used to print ``FAILED`` and exit 3, even when its mean cleared the floor.
``summary.json``'s ``gate`` says ``passed: false`` and ``decided: false`` for such a run
(the MLflow tag ``gate.fail_under=undecided``). A gate on a name no value was logged for
says what the run logs instead.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import run_cli
from helpers.labelled_run import (
    judge_verdicts,
    label_rows,
    truth,
    write_dataset,
    write_judge,
    write_labels,
)

from harness.core.summary import RunSummary

#: The console's gate row, and the exit code each verdict goes with.
VERDICTS = {"passed": 0, "FAILED": 4, "not decided": 3}


def rows_file(tmp_path: Path, scored: int, unscored: int) -> Path:
    """``scored`` samples whose relevant id is ranked 2nd (id_based: 1/2 each, by hand)
    and ``unscored`` ones without reference ids."""
    rows = [{"id": f"s{i}", "retrieved_context_ids": ["x", "y"], "reference_context_ids": ["y"]}
            for i in range(scored)]
    rows += [{"id": f"u{i}", "retrieved_context_ids": ["x"]} for i in range(unscored)]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def verdict(result: object) -> str:
    """The verdict word of the console's gate row; the exit code must be its own."""
    [row] = [x for x in result.stdout.splitlines() if x.strip().startswith("gate")]  # type: ignore[attr-defined]
    word = re.search(r": (passed|FAILED|not decided)", row)
    assert word, row
    assert result.returncode == VERDICTS[word[1]], (row, result.stderr)  # type: ignore[attr-defined]
    return word[1]


@pytest.mark.parametrize(("scored", "unscored", "more", "expected"), [
    (4, 0, ("run.fail_under=0.4",), "passed"),
    (4, 0, ("run.fail_under=0.6",), "FAILED"),
    (4, 0, ("run.fail_under={mean: 0.4, mrr: 0.6}",), "FAILED"),
    # 6 of 8 unscored, more than 0.5: exit 3, the mean 0.5 clears the floor 0.4 but decides
    # nothing, and neither does it fall below 0.6
    (2, 6, ("run.fail_under=0.4",), "not decided"),
    (2, 6, ("run.fail_under=0.6",), "not decided"),
    (2, 6, ("run.fail_under={mrr: 0.4}",), "not decided"),
    (2, 6, ("run.fail_under=0.4", "run.max_unscored_frac=0.8"), "passed"),
    (0, 3, ("run.fail_under=0.4",), "not decided"),  # nothing scored
])
def test_the_printed_gate_verdict_is_the_exit_codes(
        tmp_path: Path, scored: int, unscored: int, more: tuple[str, ...], expected: str) -> None:
    result = run_cli("dataset=jsonl", f"dataset.path={rows_file(tmp_path, scored, unscored)}",
                     "metric=id_based", "tracking=none", "run.report=false", *more,
                     cwd=tmp_path)
    assert verdict(result) == expected
    gate = result.summary()["gate"]
    assert gate["passed"] is (expected == "passed")
    assert gate.get("decided", True) is (expected != "not decided")
    if expected == "not decided":  # the one error line is the limit's
        [line] = [x for x in result.stderr.splitlines() if x.strip()]
        assert not line.startswith("error: gate failed")


def test_two_variants_one_past_its_limit_leave_a_gate_on_the_other_undecided(
        tmp_path: Path) -> None:
    # id_ranked scores every sample; non_llm needs texts no row has: past its limit
    result = run_cli("dataset=jsonl", f"dataset.path={rows_file(tmp_path, 4, 0)}",
                     "metric=[id_ranked,non_llm]", "run.fail_under={id_ranked/mean: 0.1}",
                     "tracking=none", "run.report=false", cwd=tmp_path)
    assert verdict(result) == "not decided"
    [line] = [x for x in result.stderr.splitlines() if x.strip()]
    assert line.startswith("error: none of the 4 samples was scored by non_llm: ")


def labelled(tmp_path: Path, samples: int) -> tuple[str, ...]:
    human = truth(12)
    labels = write_labels(tmp_path, label_rows(human, sorted(human)[:samples]))
    return ("dataset=jsonl", f"dataset.path={write_dataset(tmp_path, human)}",
            "metric=llm_with_reference", "judge=fixture",
            f"judge.labels={write_judge(tmp_path, judge_verdicts(human, 0.3))}",
            f"run.human_labels={labels}", "tracking=none", "run.report=false")


@pytest.mark.parametrize(("samples", "gate", "expected"), [
    (1, "run.fail_under={ci_low: 0.1}", "not decided"),  # one labelled sample: no interval
    (1, "run.fail_under={ci_high: 0.99}", "not decided"),
    (1, "run.fail_under=0.1", "not decided"),
    (8, "run.fail_under={ci_low: 0.01}", "passed"),
    (8, "run.fail_under={ci_low: 0.99}", "FAILED"),
    (8, "run.fail_under={kappa: 0.99}", "FAILED"),
])
def test_an_interval_gate_agrees_with_the_exit_whether_or_not_the_labels_give_an_interval(
        tmp_path: Path, samples: int, gate: str, expected: str) -> None:
    result = run_cli(*labelled(tmp_path, samples), gate, cwd=tmp_path)
    assert verdict(result) == expected
    if expected == "not decided":
        [line] = [x for x in result.stderr.splitlines() if x.strip()]
        assert line.startswith("error: run.human_labels: ")  # the labels, not the gate


@pytest.mark.parametrize(("gate", "says"), [
    ("{-judge/calls: 1}", "judge/calls: not logged by this run (this run logs no "
                          "judge/<name>: no judge was asked)"),
    ("{-retrieval_p95_ms: 50}", "retrieval_p95_ms: not logged by this run (only a retriever "
                                "that searches is timed"),
    ("{-retriever/p95_ms: 50}", "retriever/p95_ms: not logged by this run (this run logs no "
                                "retriever/<name>"),
])
def test_a_gate_on_a_name_without_a_value_fails_and_says_why(
        tmp_path: Path, gate: str, says: str) -> None:
    result = run_cli("dataset=jsonl", f"dataset.path={rows_file(tmp_path, 4, 0)}",
                     "metric=id_based", f"run.fail_under={gate}", "tracking=none",
                     "run.report=false", cwd=tmp_path)
    assert verdict(result) == "FAILED"
    assert says in result.stderr


def test_the_record_the_line_and_the_tag_of_each_verdict() -> None:
    from harness.run.gates import gate_line, gate_record

    assert gate_record(None, None, None) is None
    passed = gate_record(0.5, None, None)
    failed = gate_record(0.5, "mean 0.4 is below run.fail_under=0.5", None)
    undecided = gate_record(0.5, None, "25 of 32 samples (78%) are unscored")
    assert passed == {"fail_under": 0.5, "passed": True}
    assert failed == {"fail_under": 0.5, "passed": False}
    assert undecided == {"fail_under": 0.5, "passed": False, "decided": False}
    assert gate_line(passed) == "run.fail_under=0.5: passed"
    assert gate_line(failed) == "run.fail_under=0.5: FAILED"
    assert gate_line(undecided).startswith("run.fail_under=0.5: not decided: the run broke")
    tags = [RunSummary(metric="id_based", gate=g).tags()["gate.fail_under"]
            for g in (passed, failed, undecided)]
    assert tags == ["passed", "failed", "undecided"]
