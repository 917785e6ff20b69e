"""Issue 24, classes 7, 8 and 11 where a sweep's folders are concerned: a job folder named by
``hydra.sweep.subdir=${hydra.job.override_dirname}`` (a common Hydra idiom; a ``/`` in a value
nests it) still gets the sweep's report.html; ``hydra.run.dir`` never reuses an earlier
sweep's folder, nor ``hydra.output_subdir`` leaves the run's own; a sweep whose
``run.objective`` names a metric twice stops before its first job, in one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import TEST_DATA, run_cli

TINY = TEST_DATA / "beir_tiny"
BEIR = ("dataset=beir", f"dataset.path={TINY}", "metric=id_ranked", "retriever=bm25",
        "tracking=none")


def error_lines(stderr: str) -> list[str]:
    return [x for x in stderr.splitlines() if x.startswith("error: ")]


@pytest.mark.slow
def test_override_dirname_job_folders_get_the_sweep_report(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    result = run_cli("-m", *BEIR, "retriever.top_k=1,3", f"hydra.sweep.dir={sweep}",
                     "hydra.sweep.subdir=${hydra.job.override_dirname}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "warning" not in result.stderr, result.stderr
    summaries = sorted(sweep.rglob("summary.json"))
    assert len(summaries) == 2
    # dataset.path holds "/": each job's folder is nested under the sweep's
    assert all(len(p.relative_to(sweep).parts) > 2 for p in summaries)
    html = (sweep / "report.html").read_text("utf-8")
    assert "Sweep: 2 jobs ranked by mean" in html
    means = {json.loads(p.read_text())["config"]["retriever"]["top_k"]:
             json.loads(p.read_text())["mean"] for p in summaries}
    assert set(means) == {1, 3}
    for value in means.values():
        assert f"{value:.4f}" in html
    # the links to each job's report are relative to the sweep folder, and escaped
    assert "retriever.top_k%3D1" in html and "retriever.top_k%3D3" in html


@pytest.mark.slow
def test_a_run_never_reuses_an_earlier_sweeps_folder(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    result = run_cli("-m", *BEIR, "retriever.top_k=1,2", f"hydra.sweep.dir={sweep}",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    report = (sweep / "report.html").read_bytes()
    listing = sorted(p.relative_to(sweep) for p in sweep.rglob("*"))
    result = run_cli(*BEIR, f"hydra.run.dir={sweep}", cwd=tmp_path)
    assert result.returncode == 2
    [line] = error_lines(result.stderr)
    assert line.startswith(f"error: hydra.run.dir={sweep}: the folder holds an earlier sweep")
    assert (sweep / "report.html").read_bytes() == report
    assert sorted(p.relative_to(sweep) for p in sweep.rglob("*")) == listing
    # a sweep whose every job failed holds no result but its errors: refused all the same
    failed = tmp_path / "failed"
    result = run_cli("-m", *BEIR, "retriever.top_k=0,-1", f"hydra.sweep.dir={failed}",
                     cwd=tmp_path)
    assert result.returncode == 2 and not list(failed.rglob("summary.json"))
    result = run_cli(*BEIR, f"hydra.run.dir={failed}", cwd=tmp_path)
    assert result.returncode == 2
    assert error_lines(result.stderr)[0].startswith(f"error: hydra.run.dir={failed}: ")


@pytest.mark.slow
def test_hydra_files_stay_inside_the_run_folder(tmp_path: Path) -> None:
    first = run_cli(*BEIR, f"hydra.run.dir={tmp_path / 'done'}", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    before = {p: p.read_bytes() for p in (tmp_path / "done").rglob("*") if p.is_file()}
    for subdir in ("..", "../done/.hydra", str(tmp_path / "done"), "x/../../done"):
        result = run_cli(*BEIR, f"hydra.run.dir={tmp_path / 'done' / 'next'}",
                         f"hydra.output_subdir={subdir}", cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        [line] = error_lines(result.stderr)
        assert line.startswith(f"error: hydra.output_subdir={subdir}: "), line
        result = run_cli("-m", *BEIR, f"hydra.sweep.dir={tmp_path / 's'}",
                         f"hydra.output_subdir={subdir}", cwd=tmp_path)
        assert result.returncode == 2
    after = {p: p.read_bytes() for p in (tmp_path / "done").rglob("*") if p.is_file()}
    assert after == before
    # a plain sub-folder, or none, is fine
    result = run_cli(*BEIR, "hydra.output_subdir=meta", cwd=tmp_path)
    assert result.returncode == 0 and (result.out_dir / "meta" / "config.yaml").is_file()


def test_a_sweep_objective_named_twice_stops_before_any_job(tmp_path: Path) -> None:
    for objective in ("[mean,mean]", "[ndcg_at_10,-ndcg_at_10]", "[]"):
        sweep = tmp_path / f"s{len(objective)}"
        result = run_cli("-m", *BEIR, "retriever.top_k=1,2", f"run.objective={objective}",
                         f"hydra.sweep.dir={sweep}", cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr
        [line] = error_lines(result.stderr)
        assert line.startswith("error: run.objective: "), line
        assert not list(sweep.rglob("summary.json")) and "#0" not in result.stdout


@pytest.mark.slow
def test_two_jobs_never_share_a_folder(tmp_path: Path) -> None:
    # a constant sub-folder, and a swept key the folder name leaves out: refused up front
    for subdir, fragment in (("same", "every job of the sweep would write into the same"),
                             ("${hydra.job.override_dirname}", "the sweep varies run.shards")):
        sweep = tmp_path / f"s-{len(subdir)}"
        swept = "run.shards=1,2" if "override" in subdir else "retriever.top_k=1,3"
        result = run_cli("-m", *BEIR, swept, f"hydra.sweep.subdir={subdir}",
                         f"hydra.sweep.dir={sweep}", cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        [line] = error_lines(result.stderr)
        assert line.startswith(f"error: hydra.sweep.subdir={subdir}: ") and fragment in line
        assert not list(sweep.rglob("summary.json"))
    # a sub-folder that only looks per-job: the second job is not run over the first's
    sweep = tmp_path / "s-env"
    result = run_cli("-m", *BEIR, "retriever.top_k=1,3", "hydra.sweep.subdir=x${oc.env:HOME}",
                     f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert result.returncode == 2
    assert any("job 1's folder" in x and "already holds another job's summary.json" in x
               for x in error_lines(result.stderr))
    [summary] = list(sweep.rglob("summary.json"))
    assert json.loads(summary.read_text())["config"]["retriever"]["top_k"] == 1  # job 0's
