"""The Python API shares the CLI's code path: same scores for every input shape."""

import asyncio
import json

import pytest

from conftest import ROOT, run_cli, sample_labels
from harness import aevaluate, evaluate
from harness.errors import DatasetError

ROWS = [json.loads(x) for x in (ROOT / "harness/data/sample_rag.jsonl").read_text("utf-8").splitlines()]


def ragas_legacy(r):
    return {"id": r["id"], "question": r["user_input"], "answer": r["response"], "ground_truth": r["reference"],
            "contexts": r["retrieved_contexts"], "reference_contexts": r["reference_contexts"],
            "retrieved_context_ids": r["retrieved_context_ids"], "reference_context_ids": r["reference_context_ids"]}


def deepeval(r):
    return {"id": r["id"], "input": r["user_input"], "actual_output": r["response"],
            "expected_output": r["reference"], "retrieval_context": r["retrieved_contexts"],
            "context": r["reference_contexts"], "retrieved_context_ids": r["retrieved_context_ids"],
            "reference_context_ids": r["reference_context_ids"]}


class Pydanticish:
    """An object like ragas's SingleTurnSample (fields via model_dump)."""

    def __init__(self, data):
        self._data = data

    def model_dump(self):
        return dict(self._data)


SHAPES = {"ragas": lambda r: r, "ragas_legacy": ragas_legacy, "deepeval": deepeval,
          "object": lambda r: Pydanticish(r)}


@pytest.mark.parametrize("metric", ["id_based", "id_ranked", "non_llm"])
def test_api_equals_cli_for_every_input_shape(tmp_path, metric):
    cli = run_cli(f"metric={metric}", "tracking=none", cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    expected = [(r["id"], r["score"], r["verdicts"]) for r in cli.rows()]
    for shape, convert in SHAPES.items():
        result = evaluate([convert(r) for r in ROWS], metric)
        assert [(r["id"], r["score"], r["verdicts"]) for r in result.rows] == expected, shape
        assert result.mean == cli.summary()["mean"]


def test_cli_reads_deepeval_and_legacy_names_without_a_mapping(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(deepeval(r)) + "\n" for r in ROWS), "utf-8")
    cli = run_cli("metric=non_llm", "dataset=jsonl", f"dataset.path={path}", "tracking=none", cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    assert [r["score"] for r in cli.rows()] == evaluate(ROWS, "non_llm").scores


def test_llm_metric_through_the_api_equals_the_cli(tmp_path, judge_server):
    judge_server.labels.update(sample_labels())
    judge = ["judge=local", f"judge.base_url={judge_server.base_url}", "judge.model=test-judge"]
    cli = run_cli("metric=contextual_precision", *judge, "tracking=none", cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    result = evaluate([deepeval(r) for r in ROWS[:10]], "contextual_precision", overrides=judge)
    assert [(r["score"], r["success"]) for r in result.rows] == [
        (r["score"], r["success"]) for r in cli.rows()[:10]]
    assert result.summary["judge"]["cache_hits"] == 20  # the CLI run paid for these


def test_async_code_and_a_running_loop(judge_server):
    judge_server.labels.update(sample_labels())
    judge = ["judge=local", f"judge.base_url={judge_server.base_url}", "judge.model=test-judge"]

    async def main():
        from_async = await aevaluate(ROWS[:3], "llm_with_reference", overrides=judge)
        inside_loop = evaluate(ROWS[:3], "llm_with_reference", overrides=judge)  # as in a notebook
        return from_async, inside_loop

    a, b = asyncio.run(main())
    assert a.scores == b.scores and all(s is not None for s in a.scores)


def test_bad_record_raises_a_clear_error():
    with pytest.raises(DatasetError, match=r"records:2: field 'retrieved_context_ids': expected a list"):
        evaluate([{"retrieved_context_ids": ["a"]}, {"retrieved_context_ids": "a"}], "id_based")


def test_parquet_written_by_pandas_scores_like_the_jsonl(tmp_path):
    import pandas as pd

    path = tmp_path / "d.parquet"
    pd.DataFrame(ROWS).to_parquet(path)
    cli = run_cli("metric=non_llm", "dataset=parquet", f"dataset.path={path}", "tracking=none", cwd=tmp_path)
    assert cli.returncode == 0, cli.stderr
    assert [(r["id"], r["score"]) for r in cli.rows()] == [
        (r["id"], r["score"]) for r in evaluate(ROWS, "non_llm").rows]
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet")
    result = run_cli("dataset=parquet", f"dataset.path={bad}", "tracking=none", cwd=tmp_path)
    assert result.returncode == 2 and "not a readable Parquet file" in result.stderr


def test_api_can_log_to_mlflow(tmp_path, mlflow_store, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_store)
    result = evaluate(ROWS, "id_ranked", mlflow=True, overrides=["experiment_name=api_test"],
                      output_dir=tmp_path / "out")
    assert (tmp_path / "out" / "summary.json").is_file()
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=mlflow_store)
    [run] = client.search_runs([client.get_experiment_by_name("api_test").experiment_id])
    assert run.data.metrics["mean"] == result.mean
    assert run.data.tags["choice.dataset"] == "records"
