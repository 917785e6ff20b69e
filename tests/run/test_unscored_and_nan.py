"""A mostly unscored run fails by default, and a NaN passes no gate (issue 31, classes 1
and 4): ``run.max_unscored_frac`` defaults to 0.5 (exit 3, outputs kept, and a
``run.fail_under`` gate is never recorded as passed past it); a NaN metric fails both a
floor and a ceiling of ``run.fail_under``; ``summary.json`` holds ``null`` where a value was
NaN or infinite, and says where."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import run_cli
from helpers.user_code import user_package

from harness.core.settings import RunSettings
from harness.run.gates import fail_under
from harness.run.outputs import write_json


def rows_file(tmp_path: Path, scored: int, unscored: int) -> Path:
    """``scored`` samples whose relevant id is ranked 2nd (id_based: 1/2 each) and
    ``unscored`` ones without reference ids (id_based cannot score them)."""
    rows = [{"id": f"s{i}", "retrieved_context_ids": ["x", "y"], "reference_context_ids": ["y"]}
            for i in range(scored)]
    rows += [{"id": f"u{i}", "retrieved_context_ids": ["x"]} for i in range(unscored)]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def run(tmp_path: Path, scored: int, unscored: int, *more: str):  # type: ignore[no-untyped-def]
    return run_cli("dataset=jsonl", f"dataset.path={rows_file(tmp_path, scored, unscored)}",
                   "metric=id_based", "tracking=none", "run.retrieval_ks=[]", *more, cwd=tmp_path)


def test_the_default_ceiling_is_one_half() -> None:
    assert RunSettings().max_unscored_frac == 0.5


def test_a_mostly_unscored_run_exits_3_with_its_counts(tmp_path: Path) -> None:
    result = run(tmp_path, 7, 25)  # 25 of 32 unscored: the 78 %
    assert result.returncode == 3, result.stderr
    [line] = [x for x in result.stderr.splitlines() if x.strip()]
    assert line.startswith("error: 25 of 32 samples (78%) are unscored, more than "
                           "run.max_unscored_frac=0.5: the mean covers only 7; 25 × ")
    assert "run.max_unscored_frac=1" in line
    assert result.summary()["mean"] == 0.5  # outputs kept, over the scored seven


def test_half_unscored_is_within_the_ceiling(tmp_path: Path) -> None:
    result = run(tmp_path, 4, 4)
    assert result.returncode == 0, result.stderr
    assert (result.summary()["n_scored"], result.summary()["n_unscored"]) == (4, 4)


def test_a_ceiling_of_one_accepts_the_run(tmp_path: Path) -> None:
    result = run(tmp_path, 1, 9, "run.max_unscored_frac=1")
    assert result.returncode == 0, result.stderr
    assert result.summary()["mean"] == 0.5


def test_nothing_scored_still_names_the_reason(tmp_path: Path) -> None:
    result = run(tmp_path, 0, 3)
    assert result.returncode == 3
    assert "none of the 3 samples was scored by id_based" in result.stderr


def test_a_passing_gate_is_not_recorded_as_passed_past_the_ceiling(tmp_path: Path) -> None:
    result = run(tmp_path, 2, 6, "run.fail_under=0.4")  # mean 0.5 clears 0.4
    assert result.returncode == 3, result.stderr
    assert result.summary()["gate"] == {"fail_under": 0.4, "passed": False, "decided": False}
    # the console agrees with the exit code: the limit decided the run, not the gate
    assert "gate      run.fail_under=0.4: not decided: the run broke a limit" in result.stdout


# -- NaN ------------------------------------------------------------------------------

NAN = float("nan")


@pytest.mark.parametrize("gate", [{"mrr": 0.5}, {"-mrr": 0.5}])
def test_a_nan_fails_a_floor_and_a_ceiling(tmp_path: Path, gate: dict[str, float]) -> None:
    why = fail_under({"mrr": NAN, "mean": 0.9}, gate, tmp_path)
    assert why is not None
    kind = "ceiling" if next(iter(gate)).startswith("-") else "floor"
    assert why.splitlines()[1] == f"  mrr is NaN (not a number), which holds to no {kind}"


def test_a_nan_mean_fails_a_number_gate(tmp_path: Path) -> None:
    why = fail_under(NAN, 0.1, tmp_path)
    assert why == f"mean is NaN (not a number), which holds to no run.fail_under=0.1 ({tmp_path})"
    assert fail_under(0.1, 0.1, tmp_path) is None  # an equal finite value still passes


def test_summary_json_holds_null_for_nan_and_says_where(tmp_path: Path) -> None:
    path = write_json(tmp_path / "s.json", {"mean": NAN, "retrieval": {"mrr": math.inf},
                                           "list": [1.0, -math.inf], "ok": 0.5})
    text = path.read_text("utf-8")
    assert "NaN" not in text and "Infinity" not in text
    data = json.loads(text)
    assert data["mean"] is None and data["retrieval"]["mrr"] is None and data["list"] == [1.0, None]
    assert data["ok"] == 0.5
    assert data["non_finite_as_null"] == ["mean", "retrieval.mrr", "list[1]"]


def test_a_nan_from_a_retriever_fails_its_gates_and_is_null_in_the_summary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = user_package(tmp_path, monkeypatch, "nanret", search="""
        class R:
            needs_corpus = False
            searches = False
            def prepare(self, corpus): pass
            def retrieve_batch(self, samples): return list(samples)
            def describe(self): return {"metrics": {"odd": float("nan")}}
        """)
    result = run(tmp_path, 2, 0, "retriever=custom", f"+retriever._target_={package}.search.R",
                 f"trusted_targets=[{package}.*]",
                 "run.fail_under={retriever/odd: 0.5, -retriever/odd: 0.9}")
    assert result.returncode == 4, result.stderr
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert lines[0].startswith("error: gate failed: 2 of 2 gates of run.fail_under failed")
    assert lines[1:] == ["  retriever/odd is NaN (not a number), which holds to no floor",
                         "  retriever/odd is NaN (not a number), which holds to no ceiling"]
    text = (result.out_dir / "summary.json").read_text("utf-8")
    assert "NaN" not in text
    summary = json.loads(text)
    assert summary["retriever"]["metrics"]["odd"] is None
    assert summary["non_finite_as_null"] == ["retriever.metrics.odd"]
