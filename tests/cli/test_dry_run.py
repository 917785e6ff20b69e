"""``run.dry_run=true`` end to end against the real test judge: no request, an
``estimate.json`` within 15 % of what the server counted for the real run; and the bill of
the real run in summary.json, on the console, in report.html, MLflow and compare."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import run_cli, sample_labels
from helpers import mlflow_runs
from helpers.cli import compare_cli
from helpers.judge_server import JudgeServer

pytestmark = pytest.mark.slow


def judge_args(server: JudgeServer) -> tuple[str, ...]:
    return ("judge=local", f"judge.base_url={server.base_url}", "judge.model=test-judge")


def counted(server: JudgeServer) -> int:
    """The prompt tokens the server billed, by its own rule: ceil(chars / 4) of each
    request's message contents."""
    return sum(math.ceil(sum(len(m["content"]) for m in body["messages"]) / 4)
               for body in (r["body"] for r in server.requests))


@pytest.mark.parametrize("metric", ["llm_with_reference", "llm_without_reference",
                                    "contextual_precision",
                                    "[llm_with_reference,contextual_precision]"])
def test_a_dry_run_sends_nothing_and_estimates_the_real_run(tmp_path: Path, metric: str) -> None:
    with JudgeServer(sample_labels()) as server:
        args = (f"metric={metric}", *judge_args(server), "tracking=none")
        dry = run_cli(*args, "run.dry_run=true", cwd=tmp_path)
        assert dry.returncode == 0, dry.stderr
        assert server.stats.requests == 0 and server.requests == []
        estimate = json.loads((dry.out_dir / "estimate.json").read_text("utf-8"))
        assert not (dry.out_dir / "summary.json").exists()
        assert not (dry.out_dir / "samples.jsonl").exists()
        assert "no judge request sent" in dry.stdout

        real = run_cli(*args, cwd=tmp_path)
        assert real.returncode == 0, real.stderr
        billed = counted(server)
        assert estimate["requests"] == estimate["billed_requests"] == server.stats.requests
        assert abs(estimate["prompt_tokens"] - billed) <= 0.15 * billed
        assert real.summary()["judge"]["prompt_tokens"] == billed
        variants = metric.strip("[]").split(",")
        assert list(estimate["variants"]) == variants
        assert estimate["cost_usd"] is None and estimate["cost_unknown"] == "local endpoint"

        server.reset_stats()
        again = run_cli(*args, "run.dry_run=true", cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        assert server.stats.requests == 0
        rerun = json.loads((again.out_dir / "estimate.json").read_text("utf-8"))
        assert rerun["cached_requests"] == rerun["requests"] == estimate["requests"]
        assert rerun["billed_requests"] == rerun["prompt_tokens"] == 0


def test_a_dry_run_of_a_metric_without_a_judge(tmp_path: Path) -> None:
    dry = run_cli("metric=id_based", "run.dry_run=true", "tracking=none", cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    estimate = json.loads((dry.out_dir / "estimate.json").read_text("utf-8"))
    assert estimate["requests"] == 0 and estimate["n_samples"] == 30
    assert estimate["notes"] == ["metric id_based asks no judge: no request, nothing to pay"]
    assert "asks no judge" in dry.stdout


def test_a_dry_sweep_totals_its_jobs_and_tracks_nothing(tmp_path: Path) -> None:
    store = tmp_path / "mlflow.db"
    with JudgeServer(sample_labels()) as server:
        dry = run_cli("-m", "metric=llm_with_reference", *judge_args(server), "run.limit=4,8",
                      f"hydra.sweep.dir={tmp_path}/sweep", "run.dry_run=true",
                      cwd=tmp_path, env={"MLFLOW_TRACKING_URI": f"sqlite:///{store}"})
        assert dry.returncode == 0, dry.stderr
        assert server.stats.requests == 0
    sweep = json.loads((tmp_path / "sweep" / "estimate.json").read_text("utf-8"))
    jobs = [json.loads((tmp_path / "sweep" / n / "estimate.json").read_text("utf-8"))
            for n in ("0", "1")]
    assert sweep["total"]["requests"] == jobs[0]["requests"] + jobs[1]["requests"] > 0
    assert sweep["total"]["prompt_tokens"] == jobs[0]["prompt_tokens"] + jobs[1]["prompt_tokens"]
    assert jobs[1]["n_samples"] == 8 and jobs[0]["n_samples"] == 4
    assert f"{sweep['total']['requests']:,} requests" in dry.stdout
    assert not store.exists()  # no parent run, no child run


def test_the_bill_after_the_run_everywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           mlflow_store: str) -> None:
    experiment = "bill"
    with JudgeServer(sample_labels()) as server:
        server.configure(cache_min_tokens=0)  # today's prompts share under 1,024 tokens
        result = run_cli("metric=[llm_with_reference,contextual_precision]", *judge_args(server),
                         f"experiment_name={experiment}", cwd=tmp_path,
                         env={"MLFLOW_TRACKING_URI": mlflow_store})
        assert result.returncode == 0, result.stderr
        sent, billed = server.stats.requests, counted(server)
    judge = result.summary()["judge"]
    assert judge["bill"]["requests"] == {"realtime": sent, "batch": 0, "total": sent}
    assert judge["bill"]["prompt_tokens"]["total"] == billed
    assert judge["bill"]["cost_usd"] is None  # a local endpoint: tokens, no dollars
    per = {n: v["bill"]["requests"]["total"] for n, v in result.summary()["variants"].items()}
    assert sum(per.values()) == sent and per["contextual_precision"] == 60
    line, *each = [ln.strip() for ln in result.stdout.splitlines()
                   if ln.strip().startswith("judge bill")]
    assert line.removeprefix("judge bill").strip().startswith(
        f"{sent:,} requests, {billed:,} prompt tokens (")
    assert "no dollars (local endpoint)" in line
    assert [ln.split()[2] for ln in each] == ["llm_with_reference:", "contextual_precision:"]
    html = (result.out_dir / "report.html").read_text("utf-8")
    assert "What it cost" in html and f"{sent:,} (" in html

    [run] = mlflow_runs.runs(mlflow_store, experiment, "", max_results=1)
    assert run.data.metrics["judge/requests"] == sent
    assert run.data.metrics["judge/contextual_precision/requests"] == 60
    assert run.data.metrics["judge/prompt_tokens"] == billed
    assert f"{sent:,} requests" in run.data.tags["judge.bill"]

    code, out, err = compare_cli(capsys, f"experiment={experiment}", "sweep=all",
                                 f"tracking_uri={mlflow_store}", "plots=false", "log=false")
    assert code == 0, err
    assert "judge cost" in out and f"({sent:,} req)" in out
    assert "contextual_precision" in out and "(60 req)" in out  # each variant's own
