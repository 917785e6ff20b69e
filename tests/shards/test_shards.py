"""``run.shards``: one evaluation split into shards scored by parallel workers and merged into
one run, with the rows and the numbers of one process (``harness.shards``)."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import CONF, CliResult, run_cli, run_cli_subprocess, start_cli
from helpers import mlflow_runs
from helpers.errors import fails

from harness.datasets.files import CsvDataset, JsonlDataset
from harness.run.loop import Tally
from harness.shards.merge import fold, merge
from harness.shards.plan import plan, shard
from harness.shards.worker import ShardWorker

#: Summary keys that say how long the run took, or where: the rest must be equal.
TIMES = {"duration_s", "samples_per_s", "output_dir", "timing", "config", "settings"}


def records(n: int, seed: int = 0) -> Iterator[dict[str, Any]]:
    """Samples of every kind a run counts: scored, unscored for several reasons, graded,
    without an id (its line index), with lists of 0 to 7 chunks."""
    rng = random.Random(seed)
    for i in range(n):
        refs = [f"d{rng.randrange(40)}" for _ in range(rng.randint(1, 3))]
        retrieved = [rng.choice(refs) if rng.random() < 0.4 else f"d{rng.randrange(40)}"
                     for _ in range(rng.randint(0, 7))]
        rec: dict[str, Any] = {
            "id": f"q{i}", "user_input": f"question {i}", "retrieved_context_ids": retrieved,
            "retrieved_contexts": [f"passage about {d} {rng.randrange(9)}" for d in retrieved],
        }
        if rng.random() > 0.05:  # else unscored: no reference
            rec["reference_context_ids"] = refs
            rec["reference_contexts"] = [f"passage about {d}" for d in refs]
            if rng.random() < 0.3:
                rec["reference_context_grades"] = [rng.choice([0, 1, 2, 3]) for _ in refs]
        if i % 97 == 5:
            del rec["id"]
        yield rec


def write(path: Path, n: int, seed: int = 0, blank_every: int = 50) -> Path:
    """``n`` records as JSON lines, a blank line now and then, no newline after the last."""
    lines = []
    for i, rec in enumerate(records(n, seed)):
        lines.append(json.dumps(rec))
        if blank_every and i % blank_every == blank_every - 1:
            lines.append("   ")
    path.write_text("\n".join(lines), "utf-8")
    return path


def same_run(one: CliResult, sharded: CliResult) -> dict[str, Any]:
    """Assert both runs succeeded with identical rows and numbers; the summary."""
    assert one.returncode == 0, one.stderr
    assert sharded.returncode == 0, sharded.stderr
    rows = (one.out_dir / "samples.jsonl").read_bytes()
    assert (sharded.out_dir / "samples.jsonl").read_bytes() == rows
    a, b = one.summary(), sharded.summary()
    assert {k: v for k, v in a.items() if k not in TIMES} == (
        {k: v for k, v in b.items() if k not in TIMES})
    assert not (sharded.out_dir / ".shards").exists()
    return b


# -- planning: every line in exactly one shard, numbered as in the whole file -------------


@pytest.mark.parametrize("count", [1, 2, 3, 7, 400])
def test_byte_shards_read_the_file_line_for_line(tmp_path: Path, count: int) -> None:
    whole = JsonlDataset(write(tmp_path / "d.jsonl", 150, blank_every=7))
    expected = list(whole.samples())
    spans = plan(whole, count, None)
    assert len(spans) == min(count, 150 + 150 // 7)  # no more shards than lines
    assert [s.index for s in spans] == list(range(len(spans)))
    assert spans[0].start == 0 and spans[-1].stop == (tmp_path / "d.jsonl").stat().st_size
    for before, after in zip(spans, spans[1:], strict=False):
        assert before.stop == after.start and after.first_line == before.last_line + 1
    got = [s for span in spans for s in shard(whole, span).samples()]
    assert got == expected
    lines = (tmp_path / "d.jsonl").read_text().splitlines()
    no_id = [str(i) for i, line in enumerate(lines)
             if line.strip() and "id" not in json.loads(line)]
    assert no_id == ["5", "116"]  # records without an id are named by their line index
    assert [s.id for s in got if not s.id.startswith("q")] == no_id


def test_byte_shards_stop_at_the_limit(tmp_path: Path) -> None:
    whole = JsonlDataset(write(tmp_path / "d.jsonl", 100, blank_every=3))
    spans = plan(whole, 4, 10)
    got = [s.id for span in spans for s in shard(whole, span).samples()]
    assert got == [s.id for s in whole.samples(10)]
    assert plan(whole, 4, 0) == []


def test_other_datasets_shard_by_sample_index(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("id,user_input\n" + "".join(f'q{i},"line one\nline two {i}"\n'
                                                for i in range(23)), "utf-8")
    whole = CsvDataset(path)
    spans = plan(whole, 3, None)  # 46 lines, 23 records: the last shard reads to the end
    assert [(s.start, s.stop) for s in spans] == [(0, 15), (15, 30), (30, None)]
    assert spans[-1].describe() == "shard 3 of 3 (samples 30-end)"
    got = [s.id for span in spans for s in shard(whole, span).samples()]
    assert got == [f"q{i}" for i in range(23)]


# -- merging: the numbers of one process, exactly ------------------------------------------


def job_config(tmp_path: Path, data: Path, metric: str) -> dict[str, Any]:
    """The resolved config a worker gets, as the runner makes it."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(CONF)):
        cfg = compose("config", overrides=[
            f"metric={metric}", "dataset=jsonl", f"dataset.path={data}", "tracking=none",
            "run.retrieval_ks=[1,3,10]"])
    config = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(config, dict)
    return {str(k): v for k, v in config.items()}


def one_process(config: dict[str, Any], rows: Path) -> Tally:
    """The run as one process scores it (``harness.tasks.evaluate``)."""
    from omegaconf import OmegaConf

    from harness.config.build import build
    from harness.tasks.evaluate import plan as plan_run
    from harness.tasks.evaluate import score, timed_retriever

    built = build(OmegaConf.create(config))
    parts = dataclasses.replace(built, retriever=timed_retriever(built))
    batches, _ = plan_run(parts)
    with open(rows, "w", encoding="utf-8") as sink:
        return score(parts, batches, sink)


@pytest.mark.parametrize("metric", ["id_ranked", "non_llm"])
def test_merged_shards_count_what_one_process_counts(tmp_path: Path, metric: str) -> None:
    data = write(tmp_path / "d.jsonl", 3000, seed=1)
    config = job_config(tmp_path, data, metric)
    single = one_process(config, tmp_path / "one.jsonl")
    spans = plan(JsonlDataset(data), 3, None)
    workers = [ShardWorker(config, s, str(tmp_path / f"r{s.index}.jsonl"), os.getcwd())
               for s in spans]
    tallies = [w.run().tally for w in workers]
    sums: dict[str, float] = {}
    for w in workers:
        sums = w.fold(sums)
    merged = merge(tallies, Tally(metric), sums)
    merged.duration_s = single.duration_s = 1.0
    assert merged.summary() == single.summary()
    assert merged.summary()["unscored_reasons"]  # some samples are unscored, and counted
    assert merged.retrieval == single.retrieval and merged.scores == single.scores
    assert merged.rank_totals == single.rank_totals
    joined = b"".join((tmp_path / f"r{s.index}.jsonl").read_bytes() for s in spans)
    assert joined == (tmp_path / "one.jsonl").read_bytes()


def test_fold_adds_in_sample_order() -> None:
    from array import array

    values = [0.1, 0.7, 1e16, 1.0, -1e16, 0.3]
    one = 0.0
    for v in values:
        one += v
    first = fold({"m": array("d", values[:3])}, {})
    assert fold({"m": array("d", values[3:])}, first) == {"m": one} == {"m": 0.3}
    apart = fold({"m": array("d", values[3:])}, {})  # summed apart, then added: another sum
    assert first["m"] + apart["m"] == 0.0


def test_rows_files_are_appended_whole(tmp_path: Path) -> None:
    import io

    from harness.shards import append

    parts = [tmp_path / "a", tmp_path / "b"]
    parts[0].write_bytes(b'{"id": "1"}\n' * 3)
    parts[1].write_bytes(b'{"id": "2"}\n')
    with open(tmp_path / "all", "wb") as whole:  # a file: copied in the kernel
        whole.write(b"#\n")
        for part in parts:
            append(part, whole)
    memory = io.BytesIO(b"#\n")  # no file descriptor: copied through Python
    memory.seek(0, 2)
    for part in parts:
        append(part, memory)
    expected = b"#\n" + b'{"id": "1"}\n' * 3 + b'{"id": "2"}\n'
    assert (tmp_path / "all").read_bytes() == memory.getvalue() == expected


def test_reasons_are_capped_as_one_process_caps_them() -> None:
    rng = random.Random(3)
    reasons = [f"reason {rng.randrange(45)}" for _ in range(600)]
    single = Tally("m")
    for r in reasons:
        single.add_reason(r)
    shards = []
    for part in (reasons[:100], reasons[100:350], reasons[350:]):
        tally = Tally("m")
        tally.reasons.update(part)  # a worker counts every reason
        tally.n_samples = len(part)
        shards.append(tally)
    merged = merge(shards, Tally("m"), {})
    assert "(other reasons)" in single.reasons
    assert list(merged.reasons.items()) == list(single.reasons.items())
    assert merged.n_samples == 600 and Counter(merged.reasons).total() == 600


# -- the CLI: one run, the rows and numbers of one process ------------------------------


@pytest.mark.slow
def test_sharded_cli_run_is_the_single_process_run(tmp_path: Path, mlflow_store: str) -> None:
    data = write(tmp_path / "d.jsonl", 2000, seed=2)
    args = ("metric=id_ranked", "dataset=jsonl", f"dataset.path={data}",
            "experiment_name=shards")
    env = {"MLFLOW_TRACKING_URI": mlflow_store}
    one = run_cli(*args, cwd=tmp_path, env=env)
    sharded = run_cli(*args, "run.shards=3", cwd=tmp_path, env=env)
    summary = same_run(one, sharded)
    assert summary["n_unscored"] > 0 and summary["retrieval"]["n_queries"] > 0
    assert len(mlflow_runs.runs(mlflow_store, "shards")) == 2  # the single run and this one
    runs = mlflow_runs.runs(mlflow_store, "shards", "params.`run.shards` = '3'")
    assert len(runs) == 1  # one run for the whole evaluation, not one per shard
    assert runs[0].data.metrics["mean"] == summary["mean"]
    assert runs[0].data.metrics["n_samples"] == 2000


@pytest.mark.slow
def test_more_shards_than_samples(tmp_path: Path) -> None:
    data = write(tmp_path / "d.jsonl", 3, blank_every=0)
    args = ("metric=id_ranked", "dataset=jsonl", f"dataset.path={data}", "tracking=none")
    one = run_cli(*args, cwd=tmp_path)
    summary = same_run(one, run_cli(*args, "run.shards=8", cwd=tmp_path))
    assert summary["n_samples"] == 3


@pytest.mark.slow
def test_a_csv_file_shards_by_index_within_the_limit(tmp_path: Path) -> None:
    import csv

    data = tmp_path / "d.csv"
    with data.open("w", encoding="utf-8", newline="") as f:
        out = csv.writer(f)
        out.writerow(["id", "user_input", "retrieved_context_ids", "reference_context_ids"])
        for rec in records(300, seed=6):
            refs = rec.get("reference_context_ids")
            out.writerow([rec.get("id", ""), f"{rec['user_input']}\nasked again",
                          json.dumps(rec["retrieved_context_ids"]),
                          "" if refs is None else json.dumps(refs)])
    args = ("metric=id_ranked", "dataset=csv", f"dataset.path={data}", "tracking=none",
            "run.limit=250")
    one = run_cli(*args, cwd=tmp_path)
    summary = same_run(one, run_cli(*args, "run.shards=3", cwd=tmp_path))
    assert summary["n_samples"] == 250 and summary["n_unscored"] > 0


def test_only_the_evaluate_task_shards() -> None:
    from harness.core.errors import ConfigError
    from harness.shards import ShardedEvaluate, sharded
    from harness.tasks.agreement.task import JudgeAgreement
    from harness.tasks.evaluate import Evaluate

    assert type(sharded(Evaluate())) is ShardedEvaluate
    with pytest.raises(ConfigError, match="run.shards: task judge_agreement runs in one process"):
        sharded(JudgeAgreement())


@pytest.mark.slow
def test_a_failing_shard_fails_the_run_naming_it(tmp_path: Path) -> None:
    data = write(tmp_path / "d.jsonl", 400, blank_every=0)
    lines = data.read_text("utf-8").splitlines()
    lines[300] = lines[300][:-5]  # line 301: cut short
    data.write_text("\n".join(lines) + "\n", "utf-8")
    args = ("metric=id_ranked", "dataset=jsonl", f"dataset.path={data}", "tracking=none")
    line = fails(run_cli(*args, "run.shards=2", cwd=tmp_path), "error: shard 2 of 2 (lines ",
                 f"-end): {data}:301: not valid JSON")
    one = run_cli(*args, cwd=tmp_path)
    assert line.endswith(one.stderr.strip().removeprefix("error: "))  # then what one says
    assert not list(tmp_path.glob("out*/.shards"))


def test_judged_metrics_are_refused(tmp_path: Path) -> None:
    result = run_cli("metric=llm_with_reference", "judge=local", "judge.model=m",
                     "judge.base_url=http://127.0.0.1:9/v1", "run.shards=2", "tracking=none",
                     cwd=tmp_path, env={"OPENAI_API_KEY": "x"})
    fails(result, "run.shards=2: metric llm_with_reference asks a judge", "run.shards=1")


# -- heavy: large runs, Ctrl-C, Ray --------------------------------------------------------


@pytest.mark.heavy
@pytest.mark.parametrize("metric", ["id_ranked", "non_llm"])
def test_50k_samples_in_shards_equal_one_process(tmp_path: Path, metric: str) -> None:
    data = write(tmp_path / "d.jsonl", 50_000, seed=4, blank_every=1000)
    args = (f"metric={metric}", "dataset=jsonl", f"dataset.path={data}", "tracking=none",
            "run.report=false")
    one = run_cli_subprocess(*args, cwd=tmp_path, timeout=300)
    summary = same_run(one, run_cli_subprocess(*args, "run.shards=2", cwd=tmp_path,
                                               timeout=300))
    assert summary["n_samples"] == 50_000 and summary["n_unscored"] > 1000


def workers_of(pid: int) -> set[int]:
    """The pids of ``pid``'s child processes started by multiprocessing's ``spawn`` (not its
    resource tracker)."""
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text("ascii").split():
            cmdline = Path(f"/proc/{child}/cmdline")
            if cmdline.exists() and b"spawn_main" in cmdline.read_bytes():
                found.add(int(child))
    return found


@pytest.mark.heavy
def test_ctrl_c_stops_every_worker(tmp_path: Path) -> None:
    data = write(tmp_path / "d.jsonl", 400_000, blank_every=0)
    proc = start_cli("metric=non_llm", "dataset=jsonl", f"dataset.path={data}",
                     "tracking=none", "run.shards=2", cwd=tmp_path)
    deadline, workers = time.monotonic() + 60, set()
    while len(workers) < 2 and time.monotonic() < deadline:
        workers = workers_of(proc.pid)
        time.sleep(0.2)
    assert len(workers) >= 2, "the workers did not start"
    time.sleep(2.0)  # scoring
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted (signal 2)" in err
    for pid in workers:
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(
            f"/proc/{pid}/status").read_text(), f"worker {pid} still runs"
    [out] = tmp_path.glob("out*")
    assert not (out / "samples.jsonl").exists() and not (out / "summary.json").exists()
    assert not (out / ".shards").exists()


@pytest.mark.heavy
def test_shards_on_a_two_node_ray_cluster(tmp_path: Path) -> None:
    from helpers.ray_cluster import RAY_ENV, RayCluster

    data = write(tmp_path / "d.jsonl", 20_000, seed=5)
    args = ("metric=id_ranked", "dataset=jsonl", f"dataset.path={data}", "tracking=none")
    one = run_cli_subprocess(*args, cwd=tmp_path, timeout=300)
    with RayCluster(cwd=tmp_path) as cluster:
        sharded = run_cli_subprocess(*args, "run.shards=2", "run.shard_backend=ray",
                                     cwd=tmp_path, env={**RAY_ENV, "RAY_ADDRESS": cluster.address},
                                     timeout=300)
        actors = cluster.tasks("ShardWorker.attempt")
    summary = same_run(one, sharded)
    assert summary["n_samples"] == 20_000
    assert len({a["node_id"] for a in actors}) == 2, actors  # one shard on each node

