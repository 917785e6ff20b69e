"""The verdict cache on PostgreSQL (judge.cache_url): a real server, the real judge fixture.

One reply stored is reused by every process and user; two judges asking for the same keys
at once pay once; a killed owner's claims are taken over after their lease; the cache
command works on the URL; the password never reaches a file, MLflow or the console.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import run_cli, sample_labels, sample_rows, start_cli
from helpers import mlflow_runs
from helpers.judge import pointwise, prompt, sample, score
from helpers.postgres import PASSWORD, Postgres, available

from harness.core.errors import ConfigError
from harness.judges.cache.sqlite import default_path
from harness.judges.openai_chat import OpenAIJudge

heavy = pytest.mark.heavy
ROWS = sample_rows()
N_CHUNKS = sum(len(r["retrieved_contexts"]) for r in ROWS)


@pytest.fixture(scope="module")
def pg():
    why = available()
    if why:
        pytest.skip(why)
    pytest.importorskip("psycopg")
    with Postgres() as server:
        yield server


@pytest.fixture
def db(pg, request):
    """A database of its own for each test."""
    return pg.database("t_" + re.sub(r"\W+", "_", request.node.name)[:50].lower())


def judge_args(server, url, *extra):
    return ("metric=llm_with_reference", "judge=local", f"judge.base_url={server.base_url}",
            "judge.model=test-judge", f"judge.cache_url={url}", *extra)


def sql(url, statement):
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(statement).fetchall()


def no_canary(*texts):
    for text in texts:
        assert PASSWORD not in text


def files_text(root: Path) -> str:
    return "\n".join(p.read_text("utf-8", errors="replace") for p in root.rglob("*")
                     if p.is_file() and p.stat().st_size < 5_000_000)


# ---- default lane: refused before any work, no PostgreSQL or psycopg needed ---------------

@pytest.mark.parametrize(("url", "said"), [
    ("mysql://u:secret-pw@h/db", "expected a postgresql://"),
    ("postgresql://u:secret-pw@h:notaport/db", "judge.cache_url=postgresql://***@h"),
    ("/tmp/cache.sqlite", "a SQLite file is judge.cache_path"),
    ("", "expected a postgresql://"),
    ("postgresql://h/db?sslmode=require&password=secret-pw", "a password in the URL's query"),
])
def test_malformed_url_is_one_config_error_before_any_work(url, said):
    with pytest.raises(ConfigError) as e:
        OpenAIJudge(model="m", base_url="http://127.0.0.1:9/v1", api_key_env=None, cache_url=url)
    text = str(e.value)
    assert said in text and "secret-pw" not in text and "\n" not in text


def test_cache_url_and_cache_path_together_are_refused():
    with pytest.raises(ConfigError, match="judge.cache_path and judge.cache_url are both set"):
        OpenAIJudge(model="m", api_key_env=None, cache_path="/tmp/x.sqlite",
                    cache_url="postgresql://h/db")
    # cache=false: neither is used, nothing to refuse
    assert OpenAIJudge(model="m", api_key_env=None, cache=False, cache_path="/tmp/x.sqlite",
                       cache_url="postgresql://h/db").describe()["cache"] is None


def test_without_psycopg_the_preflight_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # an import of it fails, as uninstalled
    judge = OpenAIJudge(model="m", base_url="http://127.0.0.1:9/v1", api_key_env=None,
                        cache_url=f"postgresql://harness:{PASSWORD}@127.0.0.1:9/harness")
    assert judge.describe()["cache"] == "postgresql://***@127.0.0.1:9/harness"
    with pytest.raises(ConfigError) as e:
        asyncio.run(judge.preflight())
    text = str(e.value)
    assert text.startswith("judge.cache_url: PostgreSQL's driver psycopg is not installed")
    assert "pip install -e '.[teams]'" in text and PASSWORD not in text


# ---- heavy lane: a real PostgreSQL server -------------------------------------------------

@heavy
def test_rerun_by_another_user_makes_no_requests(
    tmp_path, judge_server, db, mlflow_store, monkeypatch
):
    judge_server.labels.update(sample_labels())
    env = {"MLFLOW_TRACKING_URI": mlflow_store}
    first = run_cli(*judge_args(judge_server, db), "experiment_name=pg_cache", cwd=tmp_path,
                    env=env)
    assert first.returncode == 0, first.stderr
    assert judge_server.stats.requests == N_CHUNKS
    assert sql(db, "SELECT count(*) FROM harness_cache.replies") == [(N_CHUNKS,)]

    # another user: another HOME and cache folder (no SQLite file is read or made)
    judge_server.reset_stats()
    home = tmp_path / "other_home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    (tmp_path / "again").mkdir()
    second = run_cli(*judge_args(judge_server, db), "experiment_name=pg_cache",
                     cwd=tmp_path / "again", env=env)
    assert second.returncode == 0, second.stderr
    assert judge_server.stats.requests == 0
    judge = second.summary()["judge"]
    assert judge["cache_hits"] == N_CHUNKS and judge["cache_misses"] == 0
    assert judge["cache"] == f"postgresql://***@127.0.0.1:{db.split(':')[-1]}"
    assert not default_path().exists() and not home.exists()
    assert [r["score"] for r in second.rows()] == [r["score"] for r in first.rows()]

    # the password is in no output file, console line, MLflow param or tag
    no_canary(first.stdout, first.stderr, second.stdout, second.stderr,
              files_text(first.out_dir), files_text(second.out_dir))
    runs = mlflow_runs.runs(mlflow_store, "pg_cache")
    assert len(runs) == 2
    for run in runs:
        assert "***@127.0.0.1" in json.dumps(run.data.params)
        no_canary(json.dumps(run.data.params), json.dumps(run.data.tags))


@heavy
def test_two_judges_at_once_pay_once_per_judgement(judge_server, db):
    """Two judges on two threads (two loops, two connection pools) judge the same samples
    at the same moment: each judgement is requested once, the other judge waits for it."""
    chunks = [f"passage {i}" for i in range(40)]
    judge_server.labels.update({c: i % 2 for i, c in enumerate(chunks)})
    judge_server.configure(latency_ms=30)
    samples = [sample(chunks[i:i + 8], sid=f"s{i}") for i in range(0, 40, 8)]
    start, results = threading.Barrier(2), {}

    def judge(name):
        metric = pointwise(judge_server, judge={"cache_url": db, "max_concurrency": 8})
        metric.preflight()
        start.wait()
        try:
            results[name] = (metric.score_batch(samples), metric.judge.stats)
        finally:
            metric.close()

    threads = [threading.Thread(target=judge, args=(n,)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert judge_server.stats.requests == len(chunks)  # not 2 x
    (a, sa), (b, sb) = results["a"], results["b"]
    assert sa.cache_misses + sb.cache_misses == len(chunks)
    assert sa.cache_hits + sb.cache_hits == len(chunks)
    assert sa.cache_misses > 0 and sb.cache_misses > 0  # both took part, neither paid twice
    assert [r.verdicts for r in a] == [r.verdicts for r in b]
    assert [r.verdicts for r in a][0] == [i % 2 for i in range(8)]
    assert sql(db, "SELECT count(*) FROM harness_cache.entries WHERE value IS NULL") == [(0,)]


@heavy
def test_a_killed_owners_claims_are_taken_over_after_the_lease(tmp_path, judge_server, db):
    judge_server.labels.update(sample_labels())
    judge_server.configure(hang=1.0)  # the first process's requests are never answered
    # judge.timeout=1: a 2 s lease, renewed while the process lives (and it lives: a judge
    # that never answers would otherwise end the run after a few time-outs)
    args = judge_args(judge_server, db, "tracking=none", "judge.timeout=1",
                      "judge.max_retries=100", "judge.max_concurrency=4",
                      "judge.max_timeouts_in_a_row=null")
    owner = start_cli(*args, cwd=tmp_path)
    claims = "SELECT count(*), min(owner) FROM harness_cache.entries WHERE value IS NULL"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):  # the tables are not there yet
            if sql(db, claims)[0][0]:
                break
        time.sleep(0.1)
    time.sleep(3)  # longer than the lease: the claims live on while their owner does
    count, name = sql(db, claims)[0]
    assert 0 < count <= 4 and f":{owner.pid}:" in name
    owner.kill()
    owner.wait(30)

    judge_server.configure(hang=0.0)
    judge_server.reset_stats()
    (tmp_path / "second").mkdir()
    second = run_cli(*judge_args(judge_server, db, "tracking=none"), cwd=tmp_path / "second")
    assert second.returncode == 0, second.stderr
    assert judge_server.stats.requests == N_CHUNKS  # the dead claims were taken over
    assert second.summary()["n_scored"] == len(ROWS)
    assert sql(db, claims)[0][0] == 0
    assert sql(db, "SELECT count(*) FROM harness_cache.replies") == [(N_CHUNKS,)]


@heavy
def test_a_failed_call_releases_its_claim(judge_server, db):
    judge_server.configure(fail_500=1.0)
    metric = pointwise(judge_server, judge={"cache_url": db, "max_retries": 0})
    [result] = score(metric, [sample(["a chunk"])])
    assert result.score is None
    assert sql(db, "SELECT count(*) FROM harness_cache.entries") == [(0,)]


@heavy
def test_cache_command_info_and_prune_on_the_url(judge_server, db):
    judge_server.labels.update({"a": 1, "b": 0})
    score(pointwise(judge_server, judge={"cache_url": db}), [sample(["a", "b"])])

    def cache_cmd(*args):
        done = subprocess.run([sys.executable, "-m", "harness.cli.cache", *args],
                              capture_output=True, text=True, timeout=60)
        no_canary(done.stdout, done.stderr)
        return done

    info = json.loads(cache_cmd("info", "--json", "--url", db).stdout)
    assert info["entries"] == 2 and info["path"].startswith("postgresql://***@127.0.0.1:")
    assert info["bytes"] > 0 and [g["variant"] for g in info["groups"]] == ["llm_with_reference"]
    text = cache_cmd(f"judge.cache_url={db}", "info").stdout  # as written for a run
    assert "2 entries" in text and "***@127.0.0.1" in text
    sha = prompt("llm_with_reference").sha256
    assert "removed 0 entries" in cache_cmd("prune", "--prompt", "ffff", "--url", db).stdout
    assert "removed 2 entries" in cache_cmd("prune", "--prompt", sha[:12], "--url", db).stdout
    assert json.loads(cache_cmd("info", "--json", "--url", db).stdout)["entries"] == 0
    bad = cache_cmd("prune", "--url", db)
    assert bad.returncode == 2 and "prune needs" in bad.stderr


@heavy
def test_an_empty_database_has_no_cache_yet(pg):
    url = pg.database("empty_one")
    done = subprocess.run([sys.executable, "-m", "harness.cli.cache", "info", "--url", url],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "no verdict cache yet" in done.stdout
    done = subprocess.run([sys.executable, "-m", "harness.cli.cache", "prune", "--older-than",
                           "1d", "--url", url], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "no verdict cache in this database yet" in done.stderr


@heavy
@pytest.mark.parametrize(("change", "said"), [
    (lambda u: u.replace(PASSWORD, "wrong-password"), "the server refused the user or password"),
    (lambda u: u.rsplit("/", 1)[0] + "/missing_db", "no such database"),
    (lambda u: re.sub(r":\d+/", ":9/", u), "cannot reach the server"),
])
def test_unusable_server_is_one_line_before_any_request(
    tmp_path, judge_server, db, change, said
):
    url = change(db)
    result = run_cli(*judge_args(judge_server, url, "tracking=none"), cwd=tmp_path)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: judge.cache_url=postgresql://***@127.0.0.1:") and said in line
    assert judge_server.stats.requests == 0
    no_canary(result.stdout, result.stderr)
    assert "wrong-password" not in result.stderr


@heavy
def test_password_from_pgpassword(tmp_path, judge_server, db, monkeypatch):
    judge_server.labels.update(sample_labels())
    monkeypatch.setenv("PGPASSWORD", PASSWORD)
    url = db.replace(f":{PASSWORD}@", "@")
    result = run_cli(*judge_args(judge_server, url, "tracking=none"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert judge_server.stats.requests == N_CHUNKS
    assert result.summary()["judge"]["cache"] == url.replace("harness@", "***@")
    no_canary(result.stdout, result.stderr, files_text(result.out_dir))


@heavy
def test_schema_created_once_by_many_first_users_at_once(pg):
    url = pg.database("first_use")
    code = ("import asyncio, sys\nfrom harness.judges.cache.postgres import PgVerdictCache\n"
            "async def main():\n    c = PgVerdictCache(sys.argv[1])\n    await c.open()\n"
            "    await c.aclose()\nasyncio.run(main())\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, url], stderr=subprocess.PIPE,
                              text=True) for _ in range(6)]
    errors = [p.communicate(timeout=60)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, errors
    assert sql(url, "SELECT value FROM harness_cache.meta") == [("1",)]


@heavy
def test_server_lost_mid_run_warns_once_and_the_run_goes_on(tmp_path, judge_server):
    judge_server.labels.update(sample_labels())
    judge_server.configure(latency_ms=40)
    with Postgres() as lost:

        def stop_when_busy():
            deadline = time.monotonic() + 60
            while judge_server.stats.requests < 10 and time.monotonic() < deadline:
                time.sleep(0.01)
            lost.stop()

        stopper = threading.Thread(target=stop_when_busy)
        stopper.start()
        result = run_cli(*judge_args(judge_server, lost.url(), "tracking=none",
                                     "judge.max_concurrency=4", "judge.pacing=fixed"),
                         cwd=tmp_path)
        stopper.join(60)
    assert result.returncode == 0, result.stderr
    assert result.summary()["n_scored"] == len(ROWS)
    assert judge_server.stats.requests == N_CHUNKS
    [warning] = [line for line in result.stderr.splitlines() if "judge.cache_url" in line]
    assert warning.startswith("warning: judge.cache_url=postgresql://***@127.0.0.1:")
    assert "the run goes on" in warning and "Traceback" not in result.stderr
    no_canary(result.stdout, result.stderr)
