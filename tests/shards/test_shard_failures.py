"""Shards under OS and resource faults: a full disk in a worker or in the merge, a shard count
far above the lines, a failing user's retriever in a worker: one line each, never a traceback
and never a list the size of ``run.shards``."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import tracemalloc
import uuid
from pathlib import Path

import pytest
from conftest import CONF, run_cli
from helpers.paths import ROOT
from helpers.user_code import user_package

from harness.datasets.files import CsvDataset, JsonlDataset
from harness.run.outputs import OutputError
from harness.shards.plan import Span, plan, shard
from harness.shards.worker import ShardWorker, failure


def lines(path: Path, n: int) -> Path:
    recs = [{"id": f"q{i}", "user_input": f"question {i}", "retrieved_context_ids": ["d1", "d2"],
             "reference_context_ids": ["d1"]} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), "utf-8")
    return path


@pytest.mark.parametrize("count", [10**9, 10**18])
def test_a_huge_shard_count_makes_one_shard_per_line_without_a_huge_list(
    tmp_path: Path, count: int
) -> None:
    data = JsonlDataset(lines(tmp_path / "d.jsonl", 6))
    tracemalloc.start()
    try:
        spans = plan(data, count, None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(spans) == 6 and [s.first_line for s in spans] == [1, 2, 3, 4, 5, 6]
    assert peak < 5_000_000  # bytes: a list of 10**9 offsets would be gigabytes
    assert [s.id for span in spans for s in shard(data, span).samples()] == (
        [f"q{i}" for i in range(6)])


def test_a_huge_shard_count_on_an_indexed_dataset_is_one_per_sample(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("id,user_input\n" + "".join(f"q{i},question {i}\n" for i in range(5)))
    spans = plan(CsvDataset(path), 10**12, None)
    assert [(s.start, s.stop) for s in spans] == [(0, 1), (1, 2), (2, 3), (3, 4), (4, None)]
    assert plan(CsvDataset(path), 10**12, 2) == [Span(0, 2, 0, 1), Span(1, 2, 1, 2)]


@pytest.mark.slow
def test_the_cli_with_a_billion_shards_on_six_lines_is_the_one_process_run(
    tmp_path: Path
) -> None:
    data = lines(tmp_path / "d.jsonl", 6)
    args = ("metric=id_ranked", "dataset=jsonl", f"dataset.path={data}", "tracking=none")
    one = run_cli(*args, cwd=tmp_path)
    many = run_cli(*args, "run.shards=1000000000", cwd=tmp_path)
    assert one.returncode == 0 and many.returncode == 0, many.stderr
    assert (many.out_dir / "samples.jsonl").read_bytes() == (
        one.out_dir / "samples.jsonl").read_bytes()


def worker_config(data: Path) -> dict[str, object]:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(CONF)):
        cfg = compose("config", overrides=["metric=id_ranked", "dataset=jsonl",
                                           f"dataset.path={data}", "tracking=none"])
    return {k: OmegaConf.to_container(cfg[k], resolve=True)
            for k in ("dataset", "retriever", "metric", "run")}


def test_a_worker_whose_rows_file_is_full_names_the_file_and_the_cause(tmp_path: Path) -> None:
    data = lines(tmp_path / "d.jsonl", 40)
    [span] = plan(JsonlDataset(data), 1, None)
    outcome = ShardWorker(worker_config(data), span, "/dev/full", str(tmp_path)).attempt()
    assert outcome[0] == "error"
    error = failure(outcome, span)
    assert isinstance(error, OutputError)
    assert str(error).startswith("shard 1 of 1 (lines 1-end): cannot write /dev/full (No space "
                                 "left on device); free some space")


def test_a_worker_whose_shard_folder_is_gone_names_the_path(tmp_path: Path) -> None:
    data = lines(tmp_path / "d.jsonl", 4)
    [span] = plan(JsonlDataset(data), 1, None)
    rows = tmp_path / "gone" / "rows-0000.jsonl"
    outcome = ShardWorker(worker_config(data), span, str(rows), str(tmp_path)).attempt()
    error = failure(outcome, span)
    assert isinstance(error, OutputError)
    assert f"cannot write {rows} (No such file or directory)" in str(error)


def _limited(limit: int) -> None:  # in the child, before exec: files stop growing at limit
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a killed process


@pytest.mark.slow
@pytest.mark.parametrize("shards", ["1", "2"])
def test_a_full_disk_during_a_sharded_run_is_one_line(tmp_path: Path, shards: str) -> None:
    data = lines(tmp_path / "d.jsonl", 3000)  # ~380 kB of rows: over the 64 kB a file may hold
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "harness", "metric=id_ranked", "dataset=jsonl",
         f"dataset.path={data}", "tracking=none", f"run.shards={shards}", "run.progress=false",
         f"hydra.run.dir={out}", "run.batch_size=100"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240,
        preexec_fn=lambda: _limited(64_000),  # noqa: PLW1509 - a test's own child
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    err = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(err) == 1 and err[0].startswith("error: "), result.stderr
    assert "(File too large)" in err[0] and "cannot write" in err[0]
    assert ("rows-000" in err[0]) if shards == "2" else ("samples.jsonl.partial" in err[0])
    assert not (out / "samples.jsonl").exists() and not (out / ".shards").exists()


#: A user's retriever that fails, its setting holding credentials.
LEAKY = """
    from harness.core.types import Hit
    from harness.retrievers.search import SearchRetriever

    class Remote(SearchRetriever):
        def __init__(self, url: str, top_k: int | None = None):
            super().__init__(top_k)
            self.url = url

        def search(self, queries):
            raise ConnectionError(f"cannot reach {self.url}: connection refused")

        def describe(self):
            return {**super().describe(), "url": self.url}
"""


@pytest.mark.slow
@pytest.mark.parametrize("shards", ["1", "2"])
def test_a_failing_retriever_in_a_worker_keeps_its_url_password_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shards: str
) -> None:
    name = user_package(tmp_path, monkeypatch, "leaky", search=LEAKY)
    data = lines(tmp_path / "d.jsonl", 8)
    secret = "SECRETpw" + uuid.uuid4().hex[:6]
    url = f"https://svc:{secret}@127.0.0.1:9/search"
    result = run_cli("retriever=custom", f"retriever._target_={name}.search.Remote",
                     f"trusted_targets=[{name}.*]", f"retriever.url={url}",
                     "metric=id_ranked", "dataset=jsonl", f"dataset.path={data}",
                     "tracking=none", f"run.shards={shards}", cwd=tmp_path,
                     env={"PYTHONPATH": str(tmp_path)})
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    err = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(err) == 1, result.stderr
    assert f"retriever {name}.search.Remote: search() raised ConnectionError: cannot reach " \
           "https://***@127.0.0.1:9/search: connection refused" in err[0]
    written = [p.read_text("utf-8", "replace") for p in result.out_dir.rglob("*") if p.is_file()]
    assert secret not in result.stderr + result.stdout + "".join(written)
