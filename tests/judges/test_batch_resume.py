"""judge.batch=true stopped while its batch runs (SIGTERM, SIGKILL: a closed laptop), then
the same command run again: it resumes the batch, creates no second one, pays for no line
twice and ends with the realtime scores. On the SQLite file (slow lane: processes and the
clock) and on PostgreSQL (heavy lane: a real server)."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import run_cli, run_cli_subprocess, sample_labels, sample_rows, start_cli
from helpers.judge_server import JudgeServer
from helpers.postgres import Postgres, available

from harness.metrics.ranking import average_precision

N_CHUNKS = sum(len(r["retrieved_contexts"]) for r in sample_rows())
SCORES = [average_precision([int(i in r["reference_context_ids"])
                             for i in r["retrieved_context_ids"]], 1e-10) for r in sample_rows()]


def command(server: JudgeServer, *cache: str) -> tuple[str, ...]:
    return ("metric=llm_with_reference", "judge=local", f"judge.base_url={server.base_url}",
            "judge.model=test-judge", "tracking=none", "judge.batch=true",
            "judge.batch_poll=0.05", *cache)


def wait_for_batch(server: JudgeServer, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while server.stats.batches_created == 0:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no batch created within 60 s"
        time.sleep(0.02)
    time.sleep(0.3)  # a poll or two: the run is waiting on its batch


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_a_killed_run_run_again_resumes_its_batch(tmp_path: Path, signum: int) -> None:
    cache = f"judge.cache_path={tmp_path / 'verdicts.sqlite'}"
    with JudgeServer(sample_labels(), batch_seconds=3600) as server:
        proc = start_cli(*command(server, cache), cwd=tmp_path)
        wait_for_batch(server, proc)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
        [batch_id] = server.batch_api.batches
        if signum == signal.SIGTERM:
            assert proc.returncode == 128 + signal.SIGTERM
            lines = err.strip().splitlines()
            assert (f"judge: batch {batch_id} still running at {server.base_url}, recorded in "
                    f"the verdict cache {tmp_path / 'verdicts.sqlite'}: run the same command "
                    "again to resume it (no request is sent or paid for twice)") in lines
            assert re.match(r"interrupted \(signal 15\) while the judge of metric "
                            r"llm_with_reference was running: .*rerunning resumes", lines[-1])
        else:
            assert proc.returncode == -signal.SIGKILL
        server.configure(batch_seconds=0.5)
        again = run_cli_subprocess(*command(server, cache), cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert server.stats.batches_created == 1  # the same batch, resumed
        assert server.stats.batch_lines_submitted == N_CHUNKS
        assert server.stats.billed_requests == N_CHUNKS  # no line paid twice
    assert f"judge batch {batch_id}: completed, {N_CHUNKS}/{N_CHUNKS} lines" in again.stderr
    assert [r["score"] for r in again.rows()] == SCORES
    judge = again.summary()["judge"]
    assert judge["batches"] == 0 and judge["batch_requests"] == N_CHUNKS
    assert judge["batch_ids"] == []  # it created none; it answered from the earlier one
    assert judge["resumed_batch_ids"] == [batch_id]


def estimate_of(result) -> dict:
    assert result.returncode == 0, result.stderr
    return json.loads((result.out_dir / "estimate.json").read_text("utf-8"))


@pytest.mark.slow
def test_a_dry_run_counts_the_requests_an_earlier_run_s_batch_still_holds(
        tmp_path: Path) -> None:
    cache = f"judge.cache_path={tmp_path / 'verdicts.sqlite'}"
    with JudgeServer(sample_labels(), batch_seconds=3600) as server:
        proc = start_cli(*command(server, cache), cwd=tmp_path)
        wait_for_batch(server, proc)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        [batch_id] = server.batch_api.batches
        asked = server.stats.requests

        dry = run_cli(*command(server, cache), "run.dry_run=true", cwd=tmp_path)
        waited = estimate_of(dry)
        assert server.stats.requests == asked and server.stats.batches_created == 1
        assert waited["in_running_batches"] == waited["requests"] == N_CHUNKS
        assert waited["billed_requests"] == waited["prompt_tokens"] == 0
        assert waited["variants"]["llm_with_reference"]["running_batches"] == [batch_id]
        assert f"{N_CHUNKS} in running batches" in dry.stdout
        assert any(f"still running ({batch_id}): the run waits for them" in n
                   for n in waited["notes"]), waited["notes"]

        realtime = run_cli(*command(server, cache), "judge.batch=false", "run.dry_run=true",
                           cwd=tmp_path)
        paid = estimate_of(realtime)
        assert paid["in_running_batches"] == 0
        assert paid["billed_requests"] == paid["requests"] == N_CHUNKS
        [note] = paid["notes"]
        assert note.startswith(f"{N_CHUNKS} request(s) are in Batch API batches") and \
            "this realtime run sends and pays for them again" in note

        server.configure(batch_seconds=0.2)
        again = run_cli_subprocess(*command(server, cache), cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert server.stats.batches_created == 1 and server.stats.billed_requests == N_CHUNKS
        after = estimate_of(run_cli(*command(server, cache), "run.dry_run=true", cwd=tmp_path))
    assert after["cached_requests"] == after["requests"] == N_CHUNKS
    assert after["in_running_batches"] == 0 and after["notes"] == []


@pytest.fixture(scope="module")
def pg():
    why = available()
    if why:
        pytest.fail(why)
    with Postgres() as server:
        yield server


@pytest.mark.heavy
def test_postgres_keeps_the_batches_for_another_process(tmp_path: Path, pg) -> None:
    url = pg.database("batch_resume")
    cache = f"judge.cache_url={url}"
    # claims live 2 x judge.timeout after their owner dies: a teammate waits that long
    cache = (cache, "judge.timeout=3")
    with JudgeServer(sample_labels(), batch_seconds=3600) as server:
        proc = start_cli(*command(server, *cache), cwd=tmp_path)
        wait_for_batch(server, proc)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        server.configure(batch_seconds=0)
        # another process (a teammate's), the claims of the killed one not yet run out
        again = run_cli(*command(server, *cache), cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert server.stats.batches_created == 1 and server.stats.billed_requests == N_CHUNKS
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            pending = conn.execute("SELECT count(*) FROM harness_cache.batch_lines").fetchone()
            stored = conn.execute("SELECT count(*) FROM harness_cache.replies").fetchone()
        assert pending == (0,) and stored == (N_CHUNKS,)
        third = run_cli(*command(server, *cache), cwd=tmp_path)
        assert third.returncode == 0 and server.stats.batches_created == 1
    assert [r["score"] for r in again.rows()] == [r["score"] for r in third.rows()] == SCORES
    assert third.summary()["judge"]["cache_hits"] == N_CHUNKS
