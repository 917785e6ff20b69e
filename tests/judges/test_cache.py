"""The verdict cache: reruns and overlapping sweeps pay nothing; kill -9 loses nothing."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from conftest import ROOT, run_cli, sample_labels
from helpers.judge import BERLIN, PARIS, judge, listwise, pointwise, prompt, sample, score

from harness.judges.cache.sqlite import VerdictCache, default_path
from harness.metrics.llm import LLMContextPrecision
from harness.metrics.ranking import average_precision
from harness.prompts.template import PromptTemplate

ROWS = [
    json.loads(x)
    for x in (ROOT / "harness/data/sample_rag.jsonl").read_text("utf-8").splitlines()
]


def judge_args(server, *extra):
    return ("metric=llm_with_reference", "judge=local", f"judge.base_url={server.base_url}",
            "judge.model=test-judge", "tracking=none", *extra)


def test_default_location_honours_xdg(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_path() == tmp_path / "harness" / "verdicts.sqlite"


@pytest.mark.slow
def test_rerun_makes_no_calls_and_identical_scores(tmp_path, judge_server):
    judge_server.labels.update(sample_labels())
    first = run_cli(*judge_args(judge_server), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    n_chunks = sum(len(r["retrieved_contexts"]) for r in ROWS)
    assert judge_server.stats.requests == n_chunks
    assert first.summary()["judge"]["cache_misses"] == n_chunks
    first_rows = first.rows()

    judge_server.reset_stats()
    (tmp_path / "again").mkdir()
    second = run_cli(*judge_args(judge_server), cwd=tmp_path / "again")
    assert second.returncode == 0, second.stderr
    assert judge_server.stats.requests == 0
    judge = second.summary()["judge"]
    assert judge["cache_hits"] == n_chunks and judge["requests"] == 0
    assert judge["saved_prompt_tokens"] == first.summary()["judge"]["prompt_tokens"]
    again = [(r["score"], r["verdicts"]) for r in second.rows()]
    assert again == [(r["score"], r["verdicts"]) for r in first_rows]


@pytest.mark.slow
def test_top_k_sweep_pays_each_unique_chunk_once(tmp_path, judge_server):
    judge_server.labels.update(sample_labels())
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "-m", "retriever.top_k=1,3,5", *judge_args(judge_server),
         f"hydra.sweep.dir={tmp_path / 'sweep'}", "run.progress=false"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    unique = {(r["user_input"], c) for r in ROWS for c in r["retrieved_contexts"][:5]}
    assert judge_server.stats.requests == len(unique)
    for job, k in enumerate((1, 3, 5)):
        text = (tmp_path / "sweep" / str(job) / "samples.jsonl").read_text()
        rows = [json.loads(x) for x in text.splitlines()]
        for row, data in zip(rows, ROWS, strict=True):
            retrieved = data["retrieved_context_ids"][:k]
            verdicts = [int(i in data["reference_context_ids"]) for i in retrieved]
            assert row["verdicts"] == verdicts
            assert row["score"] == average_precision(verdicts, 1e-10)


def requests_for(server, metric, samples):
    before = server.stats.requests
    results = score(metric, samples)
    return server.stats.requests - before, results


def test_key_covers_prompt_model_temperature_and_chunk_order(judge_server):
    judge_server.labels.update({PARIS: 1, BERLIN: 0})
    s = [sample([PARIS, BERLIN])]
    assert requests_for(judge_server, pointwise(judge_server), s)[0] == 2
    assert requests_for(judge_server, pointwise(judge_server), s)[0] == 0  # identical: hits

    data = prompt("llm_with_reference").__dict__
    edited = PromptTemplate(version=data["version"], mode="pointwise",
                            system=data["system"] + " Be strict.",
                            user=data["user"], examples=data["examples"])
    metric = LLMContextPrecision("llm_with_reference", judge(judge_server), edited)
    assert requests_for(judge_server, metric, s)[0] == 2  # prompt text changed

    other_model = LLMContextPrecision(
        "llm_with_reference", judge(judge_server), prompt("llm_with_reference")
    )
    other_model.judge.model = "another-model"
    assert requests_for(judge_server, other_model, s)[0] == 2
    warmer = pointwise(judge_server, judge={"temperature": 0.7})
    assert requests_for(judge_server, warmer, s)[0] == 2
    assert requests_for(judge_server, pointwise(judge_server, against="response"), s)[0] == 2

    lw = listwise(judge_server, include_reason=False)
    assert requests_for(judge_server, lw, [sample([PARIS, BERLIN])])[0] == 1
    lw = listwise(judge_server, include_reason=False)
    assert requests_for(judge_server, lw, [sample([PARIS, BERLIN])])[0] == 0
    lw = listwise(judge_server, include_reason=False)
    n, [r] = requests_for(judge_server, lw, [sample([BERLIN, PARIS])])
    assert n == 1 and r.score == 0.5  # reordered retrieval: a new question, not a stale score


def test_cache_off(judge_server):
    judge_server.labels.update({PARIS: 1})
    for _ in range(2):
        metric = pointwise(judge_server, judge={"cache": False})
        assert requests_for(judge_server, metric, [sample([PARIS])])[0] == 1


def test_several_draws_vote_and_report_agreement(judge_server):
    chunks = [f"chunk {i}" for i in range(40)]
    judge_server.labels.update({c: i % 2 for i, c in enumerate(chunks)})
    judge_server.configure(flip=0.2)
    metric = pointwise(judge_server, judge={"samples": 5, "temperature": 0.8})
    n, [r] = requests_for(judge_server, metric, [sample(chunks)])
    assert n == 5 * len(chunks)
    seeds = {req["body"]["seed"] for req in judge_server.requests}
    assert seeds == {0, 1, 2, 3, 4}
    agreement = r.details["agreement"]
    assert min(agreement) >= 0.6 and 0.6 < sum(agreement) / len(agreement) < 1.0
    assert metric.stats()["agreement"] == pytest.approx(sum(agreement) / len(agreement))
    wrong = sum(v != i % 2 for i, v in enumerate(r.verdicts))
    assert wrong <= 4  # majority of five rarely flips at 20 % noise
    metric = pointwise(judge_server, judge={"samples": 5, "temperature": 0.8, "vote": "mean"})
    n, [m] = requests_for(judge_server, metric, [sample(chunks)])
    assert n == 0  # the five draws per chunk are cached individually
    assert all(x in (0.0, 0.2, 0.4, 0.6, 0.8, 1.0) for x in m.details["relevance"])
    assert m.score == average_precision(m.details["relevance"], 1e-10)


_WRITER = """
import sys
from harness.judges.cache.sqlite import VerdictCache
cache = VerdictCache(sys.argv[1])
w = sys.argv[2]
for i in range(300):
    cache.put(f"{w}-{i}", {"content": "x" * 200, "usage": {"prompt_tokens": 1}},
              model="m", prompt_sha="p", variant="v")
    if i < 50:
        cache.put(f"shared-{i}", {"content": w, "usage": {}},
                  model="m", prompt_sha="p", variant="v")
cache.close()
"""


def test_several_processes_write_at_once(tmp_path):
    path = tmp_path / "c.sqlite"
    VerdictCache(path).close()
    procs = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), f"w{i}"]) for i in range(4)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert db.execute("SELECT COUNT(*) FROM replies").fetchone()[0] == 4 * 300 + 50


@pytest.mark.slow
def test_kill_9_mid_run_then_resume_repeats_no_completed_call(tmp_path, judge_server):
    judge_server.labels.update(sample_labels())
    judge_server.configure(latency_ms=40, concurrency=4)
    args = [sys.executable, "-m", "harness", *judge_args(judge_server, "judge.max_concurrency=4"),
            f"hydra.run.dir={tmp_path / 'killed'}", "run.progress=false"]
    proc = subprocess.Popen(
        args, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    while judge_server.stats.ok < 40 and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    answered = judge_server.stats.ok
    n_chunks = sum(len(r["retrieved_contexts"]) for r in ROWS)
    assert 40 <= answered < n_chunks

    db = sqlite3.connect(default_path())
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    stored = db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]
    db.close()
    assert answered - 4 <= stored <= answered  # at most the calls in flight were lost

    judge_server.reset_stats()
    judge_server.configure(latency_ms=0, concurrency=None)
    result = run_cli(*judge_args(judge_server), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert judge_server.stats.requests == n_chunks - stored
    for row, data in zip(result.rows(), ROWS, strict=True):
        verdicts = [int(i in data["reference_context_ids"]) for i in data["retrieved_context_ids"]]
        assert row["score"] == average_precision(verdicts, 1e-10)


@pytest.mark.slow
def test_cache_command_info_and_prune(tmp_path, judge_server):
    judge_server.labels.update({PARIS: 1, BERLIN: 0})
    score(pointwise(judge_server), [sample([PARIS, BERLIN])])
    score(listwise(judge_server), [sample([PARIS, BERLIN])])
    env = dict(os.environ)

    def cache_cmd(*args):
        return subprocess.run([sys.executable, "-m", "harness.cli.cache", *args],
                              capture_output=True, text=True, env=env, timeout=60)

    info = json.loads(cache_cmd("info", "--json").stdout)
    assert info["entries"] == 4  # 2 pointwise, 1 listwise, 1 reason
    by_variant = {g["variant"]: g["entries"] for g in info["groups"]}
    assert by_variant == {"llm_with_reference": 2, "contextual_precision": 2}
    sha = prompt("llm_with_reference").sha256
    assert "removed 2 entries" in cache_cmd("prune", "--prompt", sha[:12]).stdout
    assert json.loads(cache_cmd("info", "--json").stdout)["entries"] == 2
    assert "removed 0 entries" in cache_cmd("prune", "--older-than", "1d").stdout
    assert "removed 2 entries" in cache_cmd("prune", "--older-than", "0s").stdout
    bad = cache_cmd("prune")
    assert bad.returncode == 2 and "prune needs" in bad.stderr
    text = cache_cmd("info").stdout
    assert "0 entries" in text and str(default_path()) in text
