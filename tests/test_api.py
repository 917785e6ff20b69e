"""The Python API shares the CLI's code path: same scores for every input shape."""

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli, sample_labels, sample_rows
from helpers import mlflow_runs
from helpers.judge_server import JudgeServer

from harness import EvaluationResult, aevaluate, evaluate
from harness.core.errors import DatasetError

ROWS = sample_rows()
Row = dict[str, Any]


def ragas_legacy(r: Row) -> Row:
    return {"id": r["id"], "question": r["user_input"], "answer": r["response"],
            "ground_truth": r["reference"], "contexts": r["retrieved_contexts"],
            "reference_contexts": r["reference_contexts"],
            "retrieved_context_ids": r["retrieved_context_ids"],
            "reference_context_ids": r["reference_context_ids"]}


def deepeval(r: Row) -> Row:
    return {"id": r["id"], "input": r["user_input"], "actual_output": r["response"],
            "expected_output": r["reference"], "retrieval_context": r["retrieved_contexts"],
            "context": r["reference_contexts"], "retrieved_context_ids": r["retrieved_context_ids"],
            "reference_context_ids": r["reference_context_ids"]}


class Pydanticish:
    """An object like ragas's SingleTurnSample (fields via model_dump)."""

    def __init__(self, data: Row) -> None:
        self._data = data

    def model_dump(self) -> Row:
        return dict(self._data)


SHAPES: dict[str, Callable[[Row], object]] = {
    "ragas": lambda r: r, "ragas_legacy": ragas_legacy, "deepeval": deepeval,
    "object": Pydanticish,
}


@pytest.mark.parametrize("metric", ["id_based", "id_ranked", "non_llm"])
def test_api_equals_cli_for_every_input_shape(tmp_path: Path, metric: str) -> None:
    cli = run_cli(f"metric={metric}", "tracking=none", cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    expected = [(r["id"], r["score"], r["verdicts"]) for r in cli.rows()]
    for shape, convert in SHAPES.items():
        result = evaluate([convert(r) for r in ROWS], metric)
        assert [(r["id"], r["score"], r["verdicts"]) for r in result.rows] == expected, shape
        assert result.mean == cli.summary()["mean"]
        assert result.headline == result.mean  # no labels: the mean leads


def test_with_labels_the_headline_is_the_ppi_mean_and_mean_the_judges() -> None:
    result = evaluate(ROWS, "id_ranked", overrides=["run.human_labels=qrels",
                                                    "run.human_label_samples=10"])
    assert result.headline == result.summary["confidence"]["mean"]
    assert result.mean == result.summary["mean"]


def test_cli_reads_deepeval_and_legacy_names_without_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(deepeval(r)) + "\n" for r in ROWS), "utf-8")
    cli = run_cli("metric=non_llm", "dataset=jsonl", f"dataset.path={path}", "tracking=none",
                  cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    assert [r["score"] for r in cli.rows()] == evaluate(ROWS, "non_llm").scores


def test_llm_metric_through_the_api_equals_the_cli(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    judge_server.labels.update(sample_labels())
    judge = ["judge=local", f"judge.base_url={judge_server.base_url}", "judge.model=test-judge"]
    cli = run_cli("metric=contextual_precision", *judge, "tracking=none", cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    result = evaluate([deepeval(r) for r in ROWS[:10]], "contextual_precision", overrides=judge)
    assert [(r["score"], r["success"]) for r in result.rows] == [
        (r["score"], r["success"]) for r in cli.rows()[:10]]
    assert result.summary["judge"]["cache_hits"] == 20  # the CLI run paid for these


def test_async_code_and_a_running_loop(judge_server: JudgeServer) -> None:
    judge_server.labels.update(sample_labels())
    judge = ["judge=local", f"judge.base_url={judge_server.base_url}", "judge.model=test-judge"]

    async def main() -> tuple[EvaluationResult, EvaluationResult]:
        from_async = await aevaluate(ROWS[:3], "llm_with_reference", overrides=judge)
        inside_loop = evaluate(ROWS[:3], "llm_with_reference", overrides=judge)  # as in a notebook
        return from_async, inside_loop

    a, b = asyncio.run(main())
    assert a.scores == b.scores and all(s is not None for s in a.scores)


def test_bad_record_raises_a_clear_error() -> None:
    message = r"records:2: field 'retrieved_context_ids': expected a list"
    with pytest.raises(DatasetError, match=message):
        evaluate([{"retrieved_context_ids": ["a"]}, {"retrieved_context_ids": "a"}], "id_based")


def test_parquet_written_by_pandas_scores_like_the_jsonl(tmp_path: Path) -> None:
    import pandas as pd

    path = tmp_path / "d.parquet"
    pd.DataFrame(ROWS).to_parquet(path)
    cli = run_cli("metric=non_llm", "dataset=parquet", f"dataset.path={path}", "tracking=none",
                  cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    assert [(r["id"], r["score"]) for r in cli.rows()] == [
        (r["id"], r["score"]) for r in evaluate(ROWS, "non_llm").rows]
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet")
    result = run_cli("dataset=parquet", f"dataset.path={bad}", "tracking=none", cwd=tmp_path)
    assert result.returncode == 2 and "not a readable Parquet file" in result.stderr


@pytest.mark.slow
def test_api_can_log_to_mlflow(
    tmp_path: Path, mlflow_store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_store)
    result = evaluate(ROWS, "id_ranked", mlflow=True, overrides=["experiment_name=api_test"],
                      output_dir=tmp_path / "out")
    assert (tmp_path / "out" / "summary.json").is_file()
    [run] = mlflow_runs.runs(mlflow_store, "api_test")
    assert run.data.metrics["mean"] == result.mean
    assert run.data.tags["choice.dataset"] == "records"
