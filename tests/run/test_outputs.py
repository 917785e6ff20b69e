"""Issue 12, classes 2, 4, 5 and 11: output folders, files that are complete or clearly
incomplete, nothing scored, signals and sweeps whose jobs fail.

Each case runs the CLI and checks the exit code, the one ``error:`` line (no traceback) and
the files left behind."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, run_cli, sample_labels, sample_rows
from helpers import mlflow_runs

SAMPLE = ROOT / "harness" / "data" / "sample_rag.jsonl"


def one_error(result) -> str:
    """The run's single ``error:`` line (and no traceback anywhere)."""
    assert "Traceback" not in result.stderr + result.stdout, result.stderr[-2000:]
    lines = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert len(lines) == 1, result.stderr[-2000:]
    return lines[0]


def tree(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with the sha256 of its bytes."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*")) if p.is_file()
    }


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


# ---------------------------------------------------------------- output folders (class 2)


@pytest.mark.parametrize("where", ["under-a-file", "under-proc", "is-a-file"])
def test_output_folder_that_cannot_be_written_is_one_line(tmp_path: Path, where: str) -> None:
    blocker = tmp_path / "plain.txt"
    blocker.write_text("x")
    folder = {"under-a-file": blocker / "run", "under-proc": Path("/proc/version/run"),
              "is-a-file": blocker}[where]
    result = run_cli("metric=id_based", "tracking=none", f"hydra.run.dir={folder}",
                     cwd=tmp_path)
    assert result.returncode == 2
    line = one_error(result)
    assert line.startswith(f"error: hydra.run.dir={folder}: cannot write")
    assert blocker.read_text() == "x"


def _limited(limit: int) -> None:
    # A file-size limit makes writes past it fail (EFBIG) as a full disk does (ENOSPC).
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@pytest.mark.slow
def test_write_failing_mid_run_leaves_only_a_partial_file(tmp_path: Path) -> None:
    rows = [{**row, "id": f"r{i}"} for i, row in enumerate(sample_rows() * 200)]  # ~1.5 MB
    data = write_jsonl(tmp_path / "big.jsonl", rows)
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    proc = subprocess.run(
        [sys.executable, "-m", "harness", "metric=id_based", "dataset=jsonl",
         f"dataset.path={data}", "tracking=none", f"hydra.run.dir={out}", "run.batch_size=64",
         "run.progress=false"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        preexec_fn=lambda: _limited(200_000),
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    [line] = [x for x in proc.stderr.splitlines() if x.startswith("error:")]
    assert f"cannot write {out / 'samples.jsonl.partial'} (File too large)" in line
    assert (out / "samples.jsonl.partial").exists()
    assert not (out / "samples.jsonl").exists() and not (out / "summary.json").exists()


# --------------------------------------------------------------- nothing scored (class 4)


def test_non_llm_without_reference_contexts_fails_naming_the_field(tmp_path: Path) -> None:
    rows = [{k: v for k, v in r.items() if k != "reference_contexts"} for r in sample_rows()]
    data = write_jsonl(tmp_path / "d.jsonl", rows)
    for quiet in ("false", "true"):
        result = run_cli("metric=non_llm", "dataset=jsonl", f"dataset.path={data}",
                         "tracking=none", f"run.quiet={quiet}", cwd=tmp_path)
        assert result.returncode == 3
        line = one_error(result)
        assert "none of the 30 samples was scored by non_llm" in line
        assert "missing field reference_contexts (30 of 30)" in line
        assert "dataset.fields.reference_contexts=COLUMN" in line
        # the rows say why, sample by sample
        assert {r["error"] for r in result.rows()} == {"missing field reference_contexts"}
    assert result.stdout == ""  # quiet: nothing but the error


def test_mapped_column_missing_names_the_mapping(tmp_path: Path) -> None:
    rows = [{**r, "golds": r["reference_context_ids"]} for r in sample_rows()]
    data = write_jsonl(tmp_path / "d.jsonl", rows)
    result = run_cli("metric=id_ranked", "dataset=jsonl", f"dataset.path={data}",
                     "dataset.fields.reference_context_ids=gold_ids", "tracking=none",
                     cwd=tmp_path)
    assert result.returncode in (2, 3)
    line = one_error(result)
    assert "gold_ids" in line and "reference_context_ids" in line
    # the same mapping to the right column scores every sample
    ok = run_cli("metric=id_ranked", "dataset=jsonl", f"dataset.path={data}",
                 "dataset.fields.reference_context_ids=golds", "tracking=none", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert ok.summary()["n_scored"] == 30


def test_all_empty_retrievals_fail_unless_allowed(tmp_path: Path) -> None:
    rows = [{**r, "retrieved_context_ids": [], "retrieved_contexts": []} for r in sample_rows()]
    data = write_jsonl(tmp_path / "d.jsonl", rows)
    args = ("metric=id_based", "dataset=jsonl", f"dataset.path={data}", "tracking=none")
    result = run_cli(*args, cwd=tmp_path)
    assert result.returncode == 3
    assert "retrieved_context_ids is empty (30 of 30)" in one_error(result)
    assert result.summary()["n_scored"] == 0  # outputs are kept for inspection
    allowed = run_cli(*args, "run.max_unscored_frac=1", cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stderr
    assert allowed.summary()["n_scored"] == 0


# ------------------------------------------------------- outputs lost or crossed (class 5)


def test_a_second_run_never_writes_over_a_finished_one(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = run_cli("metric=id_based", "tracking=none", f"hydra.run.dir={out}", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    before = tree(out)
    assert "samples.jsonl" in before and ".hydra/config.yaml" in before
    for args in (("metric=id_ranked",), ("dataset=jsonl", "dataset.path=/nonexistent.jsonl")):
        again = run_cli(*args, "tracking=none", f"hydra.run.dir={out}", cwd=tmp_path)
        assert again.returncode == 2
        assert "already holds an earlier run's summary.json" in one_error(again)
        assert tree(out) == before  # not a byte changed, .hydra/ included


def test_bad_input_leaves_no_outputs_and_frees_the_folder(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", [{"id": "a", "retrieved_context_ids": "nope"}])
    out = tmp_path / "run"
    bad = run_cli("dataset=jsonl", f"dataset.path={data}", "tracking=none",
                  f"hydra.run.dir={out}", cwd=tmp_path)
    assert bad.returncode == 2
    assert "retrieved_context_ids" in one_error(bad)
    left = set(tree(out))
    assert not left & {"samples.jsonl", "samples.jsonl.partial", "summary.json",
                       ".harness-running"}
    # the folder is free again: a corrected run may use it
    write_jsonl(data, [sample_rows()[0]])
    good = run_cli("dataset=jsonl", f"dataset.path={data}", "tracking=none",
                   f"hydra.run.dir={out}", cwd=tmp_path)
    assert good.returncode == 0, good.stderr


@pytest.mark.slow
def test_runs_started_together_get_their_own_folders(tmp_path: Path, mlflow_store: str) -> None:
    env = {**{k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"},
           "MLFLOW_TRACKING_URI": mlflow_store}
    metrics = ["id_based", "id_ranked", "non_llm"]
    procs = [subprocess.Popen(
        [sys.executable, "-m", "harness", f"metric={m}", "experiment_name=together",
         "run.progress=false"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) for m in metrics]
    results = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [e[-1000:] for _, e in results]
    summaries = sorted(tmp_path.glob("outputs/*/*/summary.json"))
    assert len(summaries) == 3
    by_metric = {json.loads(s.read_text())["metric"]: s.parent for s in summaries}
    assert set(by_metric) == set(metrics)
    client = mlflow_runs.client(mlflow_store)
    for run in mlflow_runs.runs(mlflow_store, "together"):
        metric = run.data.tags["choice.metric"]
        local = client.download_artifacts(run.info.run_id, "samples.jsonl", str(tmp_path / metric))
        assert Path(local).read_bytes() == (by_metric[metric] / "samples.jsonl").read_bytes()


@pytest.mark.slow
def test_two_runs_into_one_folder_at_once_one_is_refused(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    out = tmp_path / "shared"
    procs = [subprocess.Popen(
        [sys.executable, "-m", "harness", f"metric={m}", "tracking=none",
         f"hydra.run.dir={out}", "run.progress=false"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) for m in ("id_based", "id_ranked")]
    errs = [p.communicate(timeout=120)[1] for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 2], errs
    [refused] = [e for p, e in zip(procs, errs, strict=True) if p.returncode == 2]
    assert "Traceback" not in refused and f"hydra.run.dir={out}" in refused
    summary = json.loads((out / "summary.json").read_text())
    rows = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    assert summary["n_samples"] == len(rows) == 30  # one run's outputs, whole


@pytest.mark.slow
def test_a_sweep_folder_is_never_reused(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    first = run_cli("-m", "metric=id_based,id_ranked", "tracking=none",
                    f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    before = tree(sweep)
    again = run_cli("-m", "metric=non_llm", "tracking=none", f"hydra.sweep.dir={sweep}",
                    cwd=tmp_path)
    assert again.returncode == 2
    assert "already holds an earlier sweep" in one_error(again)
    assert tree(sweep) == before


# ------------------------------------------------------------ signals and sweeps (class 11)


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM])
def test_hangup_stops_like_terminate(tmp_path: Path, mlflow_store: str, signum: int) -> None:
    from helpers.judge_server import JudgeServer

    env = {**{k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"},
           "MLFLOW_TRACKING_URI": mlflow_store}
    out = tmp_path / "out"
    with JudgeServer(sample_labels(), latency_ms=60, concurrency=4) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "harness", "metric=llm_with_reference", "judge=local",
             f"judge.base_url={server.base_url}", "judge.model=test-judge",
             "judge.max_concurrency=4", f"experiment_name=hup_{int(signum)}",
             f"hydra.run.dir={out}", "run.progress=false"],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        deadline = time.monotonic() + 60
        while server.stats.ok < 40 and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err[-2000:]
    assert f"interrupted (signal {int(signum)})" in err and "Traceback" not in err
    rows = [json.loads(x) for x in (out / "samples.jsonl.partial").read_text().splitlines()]
    assert 0 < len(rows) < 30
    assert not (out / "samples.jsonl").exists() and not (out / "summary.json").exists()
    [run] = mlflow_runs.runs(mlflow_store, f"hup_{int(signum)}")
    assert run.info.status == "KILLED"


def _sweep_data(tmp_path: Path) -> Path:
    # non_llm finds no reference_contexts here: its job scores nothing and fails
    rows = [{k: v for k, v in r.items() if k != "reference_contexts"} for r in sample_rows()]
    return write_jsonl(tmp_path / "noref.jsonl", rows)


@pytest.mark.slow
def test_a_failing_job_does_not_stop_the_sweep(tmp_path: Path) -> None:
    data = _sweep_data(tmp_path)
    sweep = tmp_path / "sweep"
    result = run_cli("-m", "metric=id_based,non_llm,id_ranked", "dataset=jsonl",
                     f"dataset.path={data}", "tracking=none", f"hydra.sweep.dir={sweep}",
                     cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    errors = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert len(errors) == 2, result.stderr  # the job's own line, then the sweep's count
    assert "none of the 30 samples was scored by non_llm" in errors[0] and "[job 1" in errors[0]
    assert errors[1].startswith("error: 1 job(s) of the sweep failed")
    assert (sweep / "0" / "summary.json").exists() and (sweep / "2" / "summary.json").exists()
    assert "none of the 30 samples" in (sweep / "1" / "error.txt").read_text()
    assert not (sweep / "0" / "error.txt").exists()


@pytest.mark.slow
def test_a_sweep_whose_jobs_all_fail_exits_non_zero(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    paths = "/nonexistent/a.jsonl,/nonexistent/b.jsonl"
    result = run_cli("-m", "dataset=jsonl", f"dataset.path={paths}",
                     "tracking=none", f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert result.returncode == 2
    assert "2 job(s) of the sweep failed" in result.stderr
    assert sorted(p.parent.name for p in sweep.glob("*/error.txt")) == ["0", "1"]


@pytest.mark.slow
def test_a_failing_job_is_counted_on_the_parent_run(tmp_path: Path, mlflow_store: str) -> None:
    data = _sweep_data(tmp_path)
    result = run_cli("-m", "metric=id_based,non_llm", "dataset=jsonl", f"dataset.path={data}",
                     "experiment_name=sweep_failures", f"hydra.sweep.dir={tmp_path / 'sw'}",
                     cwd=tmp_path, env={"MLFLOW_TRACKING_URI": mlflow_store})
    assert result.returncode == 2
    runs = mlflow_runs.runs(mlflow_store, "sweep_failures")
    [parent] = [r for r in runs if r.data.tags.get("harness.sweep") == "parent"]
    assert parent.data.tags["sweep.failed_jobs"] == "1"
    assert parent.info.status == "FAILED"
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert sorted(r.info.status for r in children) == ["FAILED", "FINISHED"]


def test_the_losing_claim_of_a_race_names_the_setting(tmp_path: Path) -> None:
    """Two runs started at once both pass the folder check; the second to claim it gets the
    same kind of line as a run refused up front (one line naming hydra.run.dir)."""
    from harness.core.errors import ConfigError
    from harness.run.outputs import RUNNING, check_folder, claim, release

    folder = check_folder(tmp_path / "shared", "hydra.run.dir")
    claim(folder)
    with pytest.raises(ConfigError) as e:
        claim(folder)
    assert str(e.value).startswith(f"hydra.run.dir={folder}: another run is writing there")
    release(folder)
    assert not (folder / RUNNING).exists()
    claim(folder)  # free again
