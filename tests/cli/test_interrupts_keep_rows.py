"""Issue 31, class 11: whatever stops a run (SIGINT, SIGTERM, a user retriever that raises
mid-run, the judge) leaves every row scored before it in ``samples.jsonl.partial``, equal to
the rows of a full run, and one line that counts them, names the file and the component that
was running (never a judge in a run without one), and the MLflow run only when there is one.

The user's retriever takes ``delay`` seconds per question: rows reach the partial file about
every second (``harness.run.loop.FLUSH_S``), not once per batch of 1,024.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from conftest import sample_labels
from helpers import mlflow_runs
from helpers.cli import run_cli, start_cli
from helpers.judge_server import JudgeServer
from helpers.user_code import user_package

CODE = """
    import time

    from harness.core.types import Hit
    from harness.retrievers.search import SearchRetriever

    class Slow(SearchRetriever):
        def __init__(self, delay: float = 0.3, fail_at: int = 0, top_k: int | None = None):
            super().__init__(top_k)
            self.delay, self.fail_at, self.calls = delay, fail_at, 0

        def search(self, queries):
            self.calls += 1
            if self.fail_at and self.calls >= self.fail_at:
                raise ValueError("the index went away")
            time.sleep(self.delay)
            return [[Hit("d1", "Paris is in France"), Hit(f"d{len(q) % 7}", "Berlin")]
                    for q in queries]
"""


@pytest.fixture
def own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """The user's package in ``tmp_path`` (the child's working folder: on its import path)."""
    return tmp_path, user_package(tmp_path, monkeypatch, "slow", search=CODE)


def retriever_args(name: str, *extra: str) -> tuple[str, ...]:
    return ("retriever=custom", f"retriever._target_={name}.search.Slow",
            f"trusted_targets=[{name}.*]", *extra)


def lines_of(path: Path) -> list[dict[str, Any]]:
    """The finished rows of a file still being written: a last line without its newline is
    a row cut mid-write, not yet a row (as ``kept`` counts them)."""
    if not path.exists():
        return []
    text = path.read_text("utf-8")
    return [json.loads(x) for x in text[:text.rfind("\n") + 1].splitlines()]


def wait_for_rows(path: Path, n: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 90
    while len(lines_of(path)) < n and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(lines_of(path)) >= n, proc.communicate(timeout=30)


def full_rows(own: tuple[Path, str], *args: str) -> list[dict[str, Any]]:
    """The rows of the same run, not interrupted (no delay)."""
    result = run_cli(*retriever_args(own[1], "retriever.delay=0"), *args, "tracking=none",
                     cwd=own[0])
    assert result.returncode == 0, result.stderr
    return result.rows()


def same_rows(partial: list[dict[str, Any]], full: list[dict[str, Any]]) -> bool:
    """``partial``'s rows are ``full``'s, but for the retrieval cut-offs above the run's
    depth, which only a finished run knows to drop (``recall_at_10`` of two retrieved)."""
    assert len(partial) == len(full)
    for row, whole in zip(partial, full, strict=True):
        extra = set(row) - set(whole)
        assert all(re.fullmatch(r"(recall|ndcg|precision|hit_rate|map)_at_\d+", k)
                   for k in extra), extra
        assert {k: v for k, v in row.items() if k in whole} == whole
    return True


def one_line(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "metric"), [
    (signal.SIGINT, "metric=id_ranked"),
    (signal.SIGTERM, "metric=[id_ranked,id_based]"),
])
def test_a_signal_after_ten_slow_queries_keeps_their_rows_and_says_so(
        own: tuple[Path, str], mlflow_store: str, signum: int, metric: str) -> None:
    experiment = f"interrupt-{uuid.uuid4().hex[:6]}"
    proc = start_cli(*retriever_args(own[1]), metric, f"experiment_name={experiment}",
                     cwd=own[0], env={"MLFLOW_TRACKING_URI": mlflow_store})
    partial = own[0] / "out" / "samples.jsonl.partial"
    wait_for_rows(partial, 10, proc)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    rows = lines_of(partial)
    assert 10 <= len(rows) < 30
    assert one_line(err) == (
        f"interrupted (signal {signum}) while retriever {own[1]}.search.Slow was running: "
        f"{len(rows)} rows scored before it are kept in {partial}; the MLflow run is marked "
        "KILLED")
    assert same_rows(rows, full_rows(own, metric)[: len(rows)])  # in input order
    assert not (own[0] / "out" / "summary.json").exists()
    [run] = mlflow_runs.runs(mlflow_store, experiment)
    assert run.info.status == "KILLED"


@pytest.mark.slow
def test_without_tracking_the_line_names_no_mlflow_run_and_no_judge(
        own: tuple[Path, str]) -> None:
    proc = start_cli(*retriever_args(own[1], "retriever.delay=0.2"), "metric=id_ranked",
                     "tracking=none", cwd=own[0])
    partial = own[0] / "out" / "samples.jsonl.partial"
    wait_for_rows(partial, 5, proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    line = one_line(err)
    assert proc.returncode == 130
    assert line == (f"interrupted (signal 2) while retriever {own[1]}.search.Slow was running: "
                    f"{len(lines_of(partial))} rows scored before it are kept in {partial}")
    assert "judge" not in line and "MLflow" not in line


@pytest.mark.slow
@pytest.mark.parametrize("metric", ["metric=id_ranked", "metric=[id_ranked,id_based]"])
def test_a_retriever_raising_at_query_11_keeps_the_ten_rows_before_it(
        own: tuple[Path, str], metric: str) -> None:
    result = run_cli(*retriever_args(own[1], "retriever.delay=0", "retriever.fail_at=11"),
                     metric, "tracking=none", cwd=own[0])
    assert result.returncode == 2, result.stderr
    partial = result.out_dir / "samples.jsonl.partial"
    assert one_line(result.stderr) == (
        f"error: retriever {own[1]}.search.Slow: search() raised ValueError: the index went "
        f"away; 10 rows scored before it are kept in {partial}")
    assert same_rows(lines_of(partial), full_rows(own, metric)[:10])


@pytest.mark.slow
def test_a_signal_while_judging_names_the_judge_and_its_cache(tmp_path: Path) -> None:
    with JudgeServer(sample_labels(), latency_ms=150, concurrency=2) as server:
        proc = start_cli("metric=llm_with_reference", "judge=local",
                         f"judge.base_url={server.base_url}", "judge.model=test-judge",
                         "judge.max_concurrency=2", "tracking=none", cwd=tmp_path)
        partial = tmp_path / "out" / "samples.jsonl.partial"
        wait_for_rows(partial, 3, proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    rows = lines_of(partial)
    assert one_line(err) == (
        "interrupted (signal 2) while the judge of metric llm_with_reference was running: "
        f"{len(rows)} rows scored before it are kept in {partial}; the judge's verdicts so far "
        "are in its cache, so rerunning resumes")
    assert [r["id"] for r in rows] == [f"q{i:02d}" for i in range(1, len(rows) + 1)]


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "metric", "doing", "after"), [
    (signal.SIGTERM, "metric=[llm_with_reference,contextual_precision]",
     "the judges of metrics llm_with_reference, contextual_precision were", 36),
    (signal.SIGINT, "metric=[contextual_precision,llm_with_reference]",
     "the judges of metrics contextual_precision, llm_with_reference were", 36),
    (signal.SIGINT, "metric=contextual_precision",
     "the judge of metric contextual_precision was", 20),
])
def test_a_judged_run_stopped_mid_batch_keeps_each_sample_every_variant_has_scored(
        tmp_path: Path, signum: int, metric: str, doing: str, after: int) -> None:
    # contextual_precision's samples chain two calls (verdicts, then a reason): its verdicts
    # for the whole batch (30) used to go out before any other call, so a run stopped
    # ``after`` requests (of about 180, or 60 alone) had about no sample finished and kept
    # about no row (6 calls a sample with llm_with_reference's, 2 alone)
    with JudgeServer(sample_labels(), latency_ms=150, concurrency=2) as server:
        judge = ("judge=local", f"judge.base_url={server.base_url}", "judge.model=test-judge",
                 "judge.max_concurrency=2", "judge.pacing=fixed", "tracking=none")
        proc = start_cli(metric, *judge, cwd=tmp_path)
        deadline = time.monotonic() + 90
        while server.stats.requests < after and proc.poll() is None and (
                time.monotonic() < deadline):
            time.sleep(0.01)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 128 + signum, err
        partial = tmp_path / "out" / "samples.jsonl.partial"
        rows = lines_of(partial)
        assert len(rows) >= 3, err  # the samples asked about, less those in flight
        assert one_line(err) == (
            f"interrupted (signal {signum}) while {doing} running: {len(rows)} rows scored "
            f"before it are kept in {partial}; the judge's verdicts so far are in its cache, so "
            "rerunning resumes")
        full = run_cli(metric, *judge, cwd=tmp_path)  # the verdicts come from the cache
    assert full.returncode == 0, full.stderr
    assert [r["id"] for r in rows] == [f"q{i:02d}" for i in range(1, len(rows) + 1)]
    whole = full.rows()[: len(rows)]
    assert [r["score"] for r in rows] == [r["score"] for r in whole]
    assert [r.get("variants") for r in rows] == [r.get("variants") for r in whole]


@pytest.mark.slow
def test_an_interrupted_sharded_run_keeps_every_shards_rows(own: tuple[Path, str]) -> None:
    proc = start_cli(*retriever_args(own[1], "retriever.delay=0.5"), "metric=id_ranked",
                     "run.shards=2", "tracking=none", cwd=own[0])
    shards = own[0] / "out" / ".shards"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and proc.poll() is None and (
            min((len(lines_of(p)) for p in shards.glob("rows-*.jsonl")), default=0) < 3
            or len(list(shards.glob("rows-*.jsonl"))) < 2):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    partial = own[0] / "out" / "samples.jsonl.partial"
    rows = lines_of(partial)
    assert one_line(err) == ("interrupted (signal 2) while the sharded scoring was running: "
                             f"{len(rows)} rows scored before it are kept in {partial}")
    full = {r["id"]: r for r in full_rows(own, "metric=id_ranked")}
    ids = [r["id"] for r in rows]
    numbers = [int(i[1:]) for i in ids]
    gaps = [k for k in range(1, len(numbers)) if numbers[k] != numbers[k - 1] + 1]
    # two shards: each one's first rows in order, the second's after the first's gap
    assert numbers[0] == 1 and len(gaps) == 1 and gaps[0] >= 3 and len(numbers) - gaps[0] >= 3
    assert same_rows(rows, [full[i] for i in ids])  # each row as the full run has it
    assert not shards.exists()
