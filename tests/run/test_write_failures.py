"""An output that cannot be written after scoring (issue 24, class 6): a plot, a metric's
files, any writer's OS error is one line naming the file and the cause, exit 2, the rows
and the files written before it kept, the MLflow run FAILED; never a traceback."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from conftest import run_cli
from helpers import mlflow_runs
from helpers.cli import CliResult
from helpers.judge_server import JudgeServer

import harness.core.redact
from harness.core.redact import register
from harness.core.settings import Job
from harness.core.summary import RunSummary
from harness.run.outputs import OutputError
from harness.run.outputs.writers import Finished, written


def one_line(result: CliResult) -> str:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.mark.slow
def test_a_plots_folder_that_cannot_be_made_fails_the_mlflow_run_keeping_the_rows(
    tmp_path: Path, mlflow_store: str
) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "plots").write_text("a file where the plots folder goes")
    experiment = f"writes-{uuid.uuid4().hex[:6]}"
    result = run_cli("metric=id_based", f"hydra.run.dir={out}", f"experiment_name={experiment}",
                     cwd=tmp_path, env={"MLFLOW_TRACKING_URI": mlflow_store})
    line = one_line(result)
    assert f"cannot write {out / 'plots'} (File exists)" in line
    assert (out / "samples.jsonl").exists() and (out / "summary.json").exists()
    [run] = mlflow_runs.runs(mlflow_store, experiment)
    assert run.info.status == "FAILED"


def test_a_metric_file_that_cannot_be_written_names_it(tmp_path: Path) -> None:
    out = tmp_path / "run"
    (out / "prompt.yaml").mkdir(parents=True)  # a folder where the metric's prompt goes
    with JudgeServer() as server:
        result = run_cli("metric=llm_with_reference", "judge=local",
                         f"judge.base_url={server.base_url}", "judge.model=test-judge",
                         "tracking=none", "run.limit=2", f"hydra.run.dir={out}", cwd=tmp_path)
    line = one_line(result)
    assert f"cannot write {out / 'prompt.yaml'} (Is a directory)" in line
    assert (out / "samples.jsonl").exists()


class _Raises:
    def __init__(self, error: OSError) -> None:
        self.error = error

    def write(self, done: Finished) -> list[Path]:
        raise self.error


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (OSError(28, "No space left on device", "/out/plots/a.png"),
         "cannot write /out/plots/a.png (No space left on device); free some space"),
        (PermissionError(13, "Permission denied", "/out/x"),
         "cannot write /out/x (Permission denied); choose a writable folder"),
        (OSError(5, "Input/output error"), "cannot write /out (Input/output error)"),
        (OSError(28, "No space left on device", "/out/sk-written-canary-9/a"),
         "cannot write /out/***/a (No space left on device)"),
    ],
)
def test_any_writers_os_error_is_one_line_naming_the_file(
    monkeypatch: pytest.MonkeyPatch, error: OSError, expected: str
) -> None:
    monkeypatch.setattr(harness.core.redact, "_SECRETS", set())
    register("sk-written-canary-9")
    job = Job(config={}, out_dir=Path("/out"), choices={}, run_name="r")
    done = Finished(job, RunSummary(metric="m"), Path("/out/samples.jsonl"))
    with pytest.raises(OutputError) as e:
        written(_Raises(error), done)
    assert str(e.value).startswith(expected)
    assert "canary" not in str(e.value)
