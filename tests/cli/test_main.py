"""The CLI end to end: outputs, the MLflow store, and bad input.

Runs are in process (``run_cli``); the ``slow`` ones start ``python -m harness`` as a user
does, with MLflow logging in its background helper process."""

import hashlib
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, CliResult, run_cli, run_cli_subprocess
from helpers import mlflow_runs
from rapidfuzz import distance

from harness.metrics.ranking import average_precision

SAMPLE = ROOT / "harness" / "data" / "sample_rag.jsonl"


def sample_rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in SAMPLE.read_text("utf-8").splitlines()]


def ragas_id_precision(retrieved: Iterable[object], reference: Iterable[object]) -> float:
    got, ref = {str(r) for r in retrieved}, {str(r) for r in reference}
    return len(got & ref) / len(got)


@pytest.mark.slow
def test_default_job_logs_everything_to_mlflow(tmp_path: Path, mlflow_store: str) -> None:
    result = run_cli_subprocess(
        "metric=id_based", cwd=tmp_path, env={"MLFLOW_TRACKING_URI": mlflow_store}
    )
    assert result.returncode == 0, result.stderr

    data = sample_rows()
    rows = result.rows()
    assert [r["id"] for r in rows] == [d["id"] for d in data]
    for r, d in zip(rows, data, strict=True):
        assert list(r)[:4] == ["id", "score", "verdicts", "error"]
        retrieved, reference = d["retrieved_context_ids"], d["reference_context_ids"]
        assert r["score"] == ragas_id_precision(retrieved, reference)
        assert r["verdicts"] == [int(i in reference) for i in retrieved]
        assert r["error"] is None

    summary = result.summary()
    assert summary["metric"] == "id_based"
    assert (summary["n_samples"], summary["n_scored"], summary["n_unscored"]) == (30, 30, 0)
    assert summary["mean"] == math.fsum(r["score"] for r in rows) / 30
    assert summary["options"] == {
        "dataset": "sample", "retriever": "precomputed", "metric": "id_based", "tracking": "mlflow",
    }
    assert summary["config"]["metric"]["aggregate"] == "set_precision"
    assert f"{summary['mean']:.4f}" in result.stdout

    client = mlflow_runs.client(mlflow_store)
    [run] = mlflow_runs.runs(mlflow_store, "harness", "tags.`choice.metric` = 'id_based'",
                        order_by=["attributes.start_time DESC"], max_results=1)
    assert run.info.run_id in result.stdout
    assert run.info.status == "FINISHED"
    assert run.data.metrics["mean"] == summary["mean"]
    assert run.data.metrics["n_scored"] == 30 and run.data.metrics["n_unscored"] == 0
    assert run.data.params["metric.aggregate"] == "set_precision"
    assert run.data.params["run.seed"] == "0"
    assert run.data.tags["choice.dataset"] == "sample"
    assert run.data.tags["harness.version"]
    assert run.data.tags["dataset.sha256"] == hashlib.sha256(SAMPLE.read_bytes()).hexdigest()
    names = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert names == {"config.yaml", "samples.jsonl", "summary.json", "score_histogram.png",
                     "precision_by_rank.png", "verdict_map.png", "report.html",
                     "eval"}  # eval/samples.json: the table (tests/tracking/test_mlflow_reader.py)
    for png in ("score_histogram.png", "precision_by_rank.png", "verdict_map.png"):
        local_png = client.download_artifacts(run.info.run_id, png, str(tmp_path / "dl"))
        assert Path(local_png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    note = run.data.tags["mlflow.note.content"]
    assert "`id_based` of `sample`" in note and "over 30 scored of 30 samples" in note
    local = client.download_artifacts(run.info.run_id, "summary.json", str(tmp_path / "dl"))
    assert json.loads(Path(local).read_text("utf-8"))["mean"] == summary["mean"]


@pytest.mark.slow
def test_default_store_is_sqlite_in_the_working_directory(tmp_path: Path) -> None:
    result = run_cli("metric=id_ranked", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "mlflow.db").is_file()
    data = sample_rows()
    for r, d in zip(result.rows(), data, strict=True):
        rel = set(d["reference_context_ids"])
        verdicts = [int(i in rel) for i in d["retrieved_context_ids"]]
        assert r["score"] == average_precision(verdicts, 0.0)


def test_tracking_none_logs_nothing(tmp_path: Path) -> None:
    result = run_cli("metric=id_based", "tracking=none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "mlflow.db").exists()
    assert result.summary()["n_scored"] == 30
    assert "mlflow run" not in result.stdout


def test_non_llm_rows_carry_similarities(tmp_path: Path) -> None:
    result = run_cli("metric=non_llm", "tracking=none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for r, d in zip(result.rows(), sample_rows(), strict=True):
        sims = [
            max(1 - distance.Levenshtein.normalized_distance(c, r) for r in d["reference_contexts"])
            for c in d["retrieved_contexts"]
        ]
        assert r["similarities"] == sims
        assert r["score"] == average_precision([int(s >= 0.5) for s in sims], 1e-10)


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_unscored_samples_are_counted_never_zero(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [
        {"retrieved_context_ids": ["a", "b"], "reference_context_ids": ["b"]},
        {"retrieved_context_ids": [], "reference_context_ids": ["b"]},
        {"retrieved_context_ids": ["a"]},
    ])
    # two of three unscored: past the default ceiling (0.5), accepted to count the reasons
    result = run_cli("dataset=jsonl", f"dataset.path={path}", "tracking=none",
                     "run.max_unscored_frac=1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = result.rows()
    assert [r["score"] for r in rows] == [0.5, None, None]
    assert rows[1]["error"] == "retrieved_context_ids is empty"
    assert rows[2]["error"] == "missing field reference_context_ids"
    summary = result.summary()
    assert (summary["n_scored"], summary["n_unscored"], summary["mean"]) == (1, 2, 0.5)
    assert summary["unscored_reasons"] == {
        "retrieved_context_ids is empty": 1, "missing field reference_context_ids": 1,
    }


def test_max_unscored_frac_fails_the_run_but_keeps_outputs(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [
        {"retrieved_context_ids": ["a"], "reference_context_ids": ["a"]},
        {"retrieved_context_ids": [], "reference_context_ids": ["a"]},
    ])
    result = run_cli("dataset=jsonl", f"dataset.path={path}", "tracking=none",
                     "run.max_unscored_frac=0.2", cwd=tmp_path)
    assert result.returncode == 3
    assert "1 of 2 samples (50%) are unscored, more than run.max_unscored_frac=0.2" in (
        result.stderr)
    assert result.summary()["n_unscored"] == 1


def test_csv_dataset_with_field_mapping(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text('qid,got,gold\nq1,"[""a"",""b""]","[""b""]"\n', encoding="utf-8")
    result = run_cli("dataset=csv", f"dataset.path={path}", "tracking=none", "metric=id_ranked",
                     "dataset.fields.id=qid", "dataset.fields.retrieved_context_ids=got",
                     "dataset.fields.reference_context_ids=gold",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.rows()[0]["id"] == "q1" and result.rows()[0]["score"] == 0.5


def assert_one_line_error(result: CliResult, *fragments: str) -> None:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def test_missing_file(tmp_path: Path) -> None:
    result = run_cli(
        "dataset=jsonl", f"dataset.path={tmp_path}/nope.jsonl", "tracking=none", cwd=tmp_path
    )
    assert result.returncode == 2
    assert_one_line_error(result, "nope.jsonl: file not found")
    assert result.stderr.strip().count("\n") == 0


@pytest.mark.slow
def test_malformed_record_stops_before_outputs(tmp_path: Path, mlflow_store: str) -> None:
    # the helper process has opened the run when the bad record is read: it must delete it
    path = tmp_path / "d.jsonl"
    path.write_text('{"retrieved_context_ids": ["a"]}\n{"retrieved_context_ids": "a"}\n', "utf-8")
    result = run_cli_subprocess(
        "dataset=jsonl", f"dataset.path={path}", "experiment_name=bad_input",
        cwd=tmp_path, env={"MLFLOW_TRACKING_URI": mlflow_store},
    )
    assert result.returncode == 2
    assert_one_line_error(result, "d.jsonl:2: field 'retrieved_context_ids': expected a list")
    assert not (result.out_dir / "summary.json").exists()
    assert not (result.out_dir / "samples.jsonl").exists()
    exp_id = mlflow_runs.experiment_id(mlflow_store, "bad_input")
    assert exp_id is None or mlflow_runs.runs(mlflow_store, "bad_input") == []


def test_unknown_option_lists_the_choices(tmp_path: Path) -> None:
    result = run_cli("metric=id_base", "tracking=none", cwd=tmp_path)
    assert_one_line_error(result, "id_base", "id_based", "non_llm")
    assert result.stderr.startswith(
        "error: 'id_base' is not a metric option (did you mean 'id_based'?); the options: ")
    assert len(result.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["metric=non_llm", "metric.thresold=0.3"],
         "'metric.thresold' is not a setting (did you mean 'threshold'?)"),
        (["retriever.topk=3"], "'retriever.topk' is not a setting (did you mean 'top_k'?)"),
        (["metrc=id_based"], "'metrc' is not a config group (did you mean 'metric'?)"),
        (["judge.temprature=0.5"],
         "'judge.temprature' is not a setting (did you mean 'temperature'?)"),
    ],
)
def test_misspelt_key_or_group_suggests_the_closest(
    tmp_path: Path, args: list[str], hint: str
) -> None:
    result = run_cli(*args, "tracking=none", cwd=tmp_path)
    assert result.returncode == 1
    assert_one_line_error(result, hint)


def test_missing_path_says_what_to_set(tmp_path: Path) -> None:
    result = run_cli("dataset=jsonl", "tracking=none", cwd=tmp_path)
    assert result.returncode == 2
    assert_one_line_error(result, "dataset.path=")


def test_misspelt_field_mapping_is_rejected(tmp_path: Path) -> None:
    result = run_cli("dataset=jsonl", "dataset.path=x.jsonl", "dataset.fields.user_inpt=q",
                     "tracking=none", cwd=tmp_path)
    assert_one_line_error(result, "dataset.fields.user_inpt")


def test_unknown_run_setting_suggests_the_closest(tmp_path: Path) -> None:
    result = run_cli("+run.limt=3", "tracking=none", cwd=tmp_path)
    assert_one_line_error(result, "run.limt", "did you mean 'limit'")


def test_bad_value_is_a_clear_error(tmp_path: Path) -> None:
    result = run_cli("metric=non_llm", "metric.measure=levenstein", "tracking=none", cwd=tmp_path)
    assert result.returncode == 2
    assert_one_line_error(result, "metric.measure", "did you mean 'levenshtein'")


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["run.limit=abc"], ["run.limit: expected int or null, got 'abc'"]),
        (["metric=non_llm", "metric.threshold=high"], ["metric.threshold: expected float"]),
        (["metric=id_ranked", "metric.aggregate=map"],
         ["metric.aggregate: expected 'set_precision'"]),
        (["+metric.threshold=0.3"], ["metric.threshold: unknown setting", "min_grade"]),
        (["dataset=csv", "dataset.path=x.csv", "dataset.delimiter=[1]"],
         ["dataset.delimiter: expected str"]),
    ],
)
def test_wrong_types_and_impossible_settings_fail_before_work(
    tmp_path: Path, args: list[str], fragments: list[str]
) -> None:
    result = run_cli(*args, "tracking=none", cwd=tmp_path)
    assert result.returncode == 2
    assert_one_line_error(result, *fragments)
    assert not (result.out_dir / "samples.jsonl").exists()


def test_limit(tmp_path: Path) -> None:
    result = run_cli("run.limit=5", "tracking=none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.summary()["n_samples"] == 5


def test_help_lists_groups_and_options(tmp_path: Path) -> None:
    result = run_cli("--help", cwd=tmp_path)
    assert result.returncode == 0
    for text in (
        "dataset: beir, csv, dbpedia_entity, ir_datasets, json, jsonl, mlflow_traces, parquet, "
        "sample, scifact, scifact_mini, trec, trec_dl19",
        "experiment: scifact_ann, scifact_ann_hybrid, scifact_bm25, scifact_bm25_optuna, "
            "scifact_chunking, scifact_retrievers",
        "metric: contextual_precision, id_based, id_ranked, llm_with_reference, "
        "llm_without_reference, non_llm",
        "judge: fixture, llama_cpp, llama_cpp_python, local, ollama, openai, vllm",
        "prompt: contextual_precision, contextual_precision_verdicts, file, llm_with_reference, "
        "llm_with_reference_cached, llm_without_reference, query_relevance",
        "task: evaluate, judge_agreement",
        "tracking: mlflow, none",
        "retriever: bm25, chroma, custom, dense, hybrid, langchain, llamaindex, precomputed",
    ):
        assert text in result.stdout


def test_cfg_job_prints_the_composed_config(tmp_path: Path) -> None:
    result = run_cli("--cfg", "job", "metric=non_llm", cwd=tmp_path)
    assert result.returncode == 0
    assert "measure: levenshtein" in result.stdout
    assert "experiment_name: harness" in result.stdout

