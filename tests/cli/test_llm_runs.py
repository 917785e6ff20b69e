"""LLM-judged metrics end to end: the CLI against the test judge.

Runs are in process (``run_cli``); the ``slow`` ones stop a ``python -m harness`` process
mid-run (signals, a dying endpoint)."""

import json
import time
from pathlib import Path

import pytest
from conftest import run_cli, sample_labels, sample_rows, start_cli
from helpers import mlflow_runs
from helpers.judge_server import JudgeServer

from harness.metrics.ranking import average_precision

CANARY = "sk-canary-0123456789abcdef"


def judge_args(server: JudgeServer, *extra: str) -> tuple[str, ...]:
    return ("judge=local", f"judge.base_url={server.base_url}", "judge.model=test-judge", *extra)


def expected_verdicts() -> list[list[int]]:
    return [
        [int(i in r["reference_context_ids"]) for i in r["retrieved_context_ids"]]
        for r in sample_rows()
    ]


@pytest.mark.slow
def test_llm_with_reference_end_to_end(
    tmp_path: Path, judge_server: JudgeServer, mlflow_store: str
) -> None:
    # the test judge caches as OpenAI does, from 1,024 shared tokens: these prompts share
    # fewer, so it counts from the first one to show they are shared at all
    with JudgeServer(sample_labels(), api_key=CANARY, cache_min_tokens=0) as server:
        result = run_cli(
            "metric=llm_with_reference", *judge_args(server, "judge.api_key_env=HARNESS_CANARY"),
            cwd=tmp_path, env={"MLFLOW_TRACKING_URI": mlflow_store, "HARNESS_CANARY": CANARY},
        )
        assert result.returncode == 0, result.stderr
        n_chunks = sum(len(v) for v in expected_verdicts())
        assert server.stats.ok == n_chunks  # one call per chunk, nothing else
    rows = result.rows()
    for row, verdicts in zip(rows, expected_verdicts(), strict=True):
        assert row["verdicts"] == verdicts
        assert repr(row["score"]) == repr(average_precision(verdicts, 1e-10))
        assert len(row["reasons"]) == len(verdicts)
    summary = result.summary()
    assert summary["metric"] == "llm_with_reference"
    assert summary["options"]["judge"] == "local"
    assert summary["options"]["prompt"] == "llm_with_reference"
    judge = summary["judge"]
    assert judge["requests"] == n_chunks and judge["failures"] == 0
    assert judge["prompt_tokens"] > 0 and judge["cached_prompt_tokens"] > 0
    assert summary["prompt"]["version"] == "pointwise_reference_v1"

    client = mlflow_runs.client(mlflow_store)
    [run] = mlflow_runs.runs(mlflow_store, "harness", "tags.`choice.metric` = 'llm_with_reference'",
                             order_by=["attributes.start_time DESC"], max_results=1)
    assert run.data.tags["prompt.sha256"] == summary["prompt"]["sha256"]
    assert run.data.metrics["judge/requests"] == n_chunks
    assert run.data.params["judge.model"] == "test-judge"
    assert run.data.params["judge.api_key_env"] == "HARNESS_CANARY"
    assert "prompt.yaml" in {a.path for a in client.list_artifacts(run.info.run_id)}

    # The key itself appears nowhere: outputs, Hydra's files, console, MLflow.
    texts = [result.stdout, result.stderr, json.dumps(run.data.to_dictionary())]
    texts += [p.read_text("utf-8", "replace") for p in result.out_dir.rglob("*") if p.is_file()]
    art = client.download_artifacts(run.info.run_id, "", str(tmp_path / "art"))
    from pathlib import Path

    texts += [p.read_text("utf-8", "replace") for p in Path(art).rglob("*") if p.is_file()]
    assert not any(CANARY in t for t in texts)


def test_contextual_precision_end_to_end(tmp_path: Path) -> None:
    with JudgeServer(sample_labels()) as server:
        result = run_cli(
            "metric=contextual_precision", *judge_args(server), "tracking=none", cwd=tmp_path
        )
        assert result.returncode == 0, result.stderr
        assert server.stats.ok == 60  # a listwise call and a reason call per sample
    rows = result.rows()
    for row, verdicts in zip(rows, expected_verdicts(), strict=True):
        assert row["verdicts"] == verdicts
        expected = average_precision(verdicts, 0.0)
        assert row["score"] == expected
        assert row["success"] is (expected >= 0.5)
        assert row["reason"]
    summary = result.summary()
    successes = sum(r["success"] for r in rows)
    assert summary["success_rate"] == successes / 30
    assert "success rate" in result.stdout


def test_dataset_without_the_needed_field_fails_before_any_call(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"user_input": "q", "retrieved_contexts": ["c"]}) + "\n", "utf-8")
    result = run_cli("metric=llm_with_reference", "dataset=jsonl", f"dataset.path={path}",
                     *judge_args(judge_server), "tracking=none", cwd=tmp_path)
    assert result.returncode == 2
    assert "needs the field 'reference'" in result.stderr and "Traceback" not in result.stderr
    assert judge_server.stats.requests == 0


def test_endpoint_down_is_a_clear_error_within_seconds(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.monotonic()
    result = run_cli("metric=llm_with_reference", "judge=local",
                     f"judge.base_url=http://127.0.0.1:{port}/v1", "judge.model=m", "tracking=none",
                     cwd=tmp_path)
    assert time.monotonic() - start < 20
    assert result.returncode == 2
    assert "cannot reach" in result.stderr and "Traceback" not in result.stderr


def test_misspelt_prompt_variable_fails_before_any_call(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    own = tmp_path / "p.yaml"
    own.write_text(
        "version: mine\nmode: pointwise\nsystem: Judge.\n"
        "user: '{{ questoin }} {{ context }}'\n",
        "utf-8",
    )
    result = run_cli("metric=llm_with_reference", "prompt=file", f"prompt.path={own}",
                     *judge_args(judge_server), "tracking=none", cwd=tmp_path)
    assert result.returncode == 2
    assert "unknown variable 'questoin'" in result.stderr
    assert "did you mean 'question'" in result.stderr
    assert judge_server.stats.requests == 0


def test_too_many_unscored_fails_the_run_with_partial_results(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    judge_server.labels.update(sample_labels())
    judge_server.configure(malformed=1.0)
    result = run_cli("metric=llm_with_reference",
                     *judge_args(judge_server, "judge.parse_retries=1"), "run.limit=4",
                     "run.max_unscored_frac=0.5", "tracking=none", cwd=tmp_path)
    assert result.returncode == 3
    # nothing scored is said as such (with the commonest reason), whatever the ceiling
    assert "none of the 4 samples was scored by llm_with_reference: chunk 1 of 3: unusable " \
        "judge reply after 2 attempts" in result.stderr
    rows = result.rows()
    assert [r["score"] for r in rows] == [None] * 4
    assert all("unusable judge reply after 2 attempts" in r["error"] for r in rows)
    assert result.summary()["judge"]["parse_failures"] == sum(
        len(v) for v in expected_verdicts()[:4]) * 2


@pytest.mark.slow
@pytest.mark.parametrize("signum", [2, 15])
def test_sigint_and_sigterm_stop_cleanly(tmp_path: Path, mlflow_store: str, signum: int) -> None:
    # ~4 s of judging: the signal lands mid-run even when a busy machine delays sending it
    with JudgeServer(sample_labels(), latency_ms=150, concurrency=4) as server:
        proc = start_cli(
            "metric=llm_with_reference", *judge_args(server), "judge.max_concurrency=4",
            f"experiment_name=signal_{signum}", cwd=tmp_path,
            env={"MLFLOW_TRACKING_URI": mlflow_store},
        )
        deadline = time.monotonic() + 60
        while server.stats.ok < 40 and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    assert f"interrupted (signal {signum})" in err and "Traceback" not in err
    out_dir = tmp_path / "out"
    # the finished prefix was flushed, under a name that says the run did not finish
    partial = out_dir / "samples.jsonl.partial"
    assert "samples.jsonl.partial" in err
    rows = [json.loads(x) for x in partial.read_text().splitlines()]
    assert 0 < len(rows) < 30
    assert [r["id"] for r in rows] == [f"q{i:02d}" for i in range(1, len(rows) + 1)]
    assert not (out_dir / "summary.json").exists() and not (out_dir / "samples.jsonl").exists()

    [run] = mlflow_runs.runs(mlflow_store, f"signal_{signum}")
    assert run.info.status == "KILLED"


@pytest.mark.slow
def test_endpoint_dying_mid_run_stops_with_partial_results(
    tmp_path: Path, mlflow_store: str
) -> None:
    server = JudgeServer(sample_labels(), latency_ms=40, concurrency=4)
    server.start()
    proc = start_cli(
        "metric=llm_with_reference", *judge_args(server), "judge.max_concurrency=4",
        "judge.max_retries=1", "experiment_name=dying_judge", cwd=tmp_path,
        env={"MLFLOW_TRACKING_URI": mlflow_store},
    )
    deadline = time.monotonic() + 60
    while server.stats.ok < 40 and time.monotonic() < deadline:
        time.sleep(0.01)
    server.stop()
    stopped = time.monotonic()
    out, err = proc.communicate(timeout=60)
    assert time.monotonic() - stopped < 20
    assert proc.returncode == 2, err
    assert "stopped answering" in err and "Traceback" not in err
    partial = tmp_path / "out" / "samples.jsonl.partial"
    rows = [json.loads(x) for x in partial.read_text().splitlines()]
    assert 0 < len(rows) < 30 and all(r["score"] is not None for r in rows)
    assert not (tmp_path / "out" / "samples.jsonl").exists()

    [run] = mlflow_runs.runs(mlflow_store, "dying_judge")
    assert run.info.status == "FAILED"
