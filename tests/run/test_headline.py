"""One headline: with human labels a run's PPI++ mean and its interval lead wherever a
number leads (``summary.json``'s ``headline``, the console's ``mean`` line, report.html's
large figure, MLflow's first metric columns, the pytest floors), the judge's own mean
beside it as "judge alone"; a run without labels looks as before.

The labelled run is a real CLI run (``judge=fixture`` with a lenient judge's labels,
people's labels on 50 of 120 samples: from 50 labels the interval is the central-limit one).
Expected numbers come from ``ppi_py`` on arrays built here from the truth and the judge's
verdicts (``tests/helpers/labelled_run.py``), and from each row's ``score``, never from the
harness's own summary."""

from __future__ import annotations

import html as html_lib
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import run_cli
from helpers.labelled_run import (
    judge_verdicts,
    label_rows,
    truth,
    write_dataset,
    write_judge,
    write_labels,
)

ppi_py = pytest.importorskip("ppi_py")

N, LABELLED, EPS = 120, 50, 1e-10
LLM = "llm_with_reference"


def ap(verdicts: list[int], eps: float = EPS) -> float:
    """Average precision as docs/reference/metrics.md section 1 writes it."""
    hits = [sum(verdicts[: k + 1]) / (k + 1) for k, v in enumerate(verdicts) if v]
    return sum(hits) / (sum(verdicts) + eps) if sum(verdicts) + eps else 0.0


def make_world(folder: Path, lenient: float = 0.3) -> dict[str, Any]:
    """The dataset, a lenient judge's labels and people's labels on ``LABELLED`` samples."""
    human = truth(N)
    judge = judge_verdicts(human, lenient)
    chosen = sorted(human)[5 : 5 + LABELLED]
    return {"human": human, "judge": judge, "chosen": chosen,
            "data": write_dataset(folder, human), "judge_file": write_judge(folder, judge),
            "labels": write_labels(folder, label_rows(human, chosen))}


def args(world: dict[str, Any], *more: str, metric: str = LLM) -> tuple[str, ...]:
    return ("dataset=jsonl", f"dataset.path={world['data']}", f"metric={metric}",
            "judge=fixture", f"judge.labels={world['judge_file']}",
            f"run.human_labels={world['labels']}", *more)


def expected(world: dict[str, Any], level: float = 0.95) -> dict[str, Any]:
    """The PPI++ mean and interval, and the judge's own mean, by ppi_py and numpy."""
    human, judge, chosen = world["human"], world["judge"], world["chosen"]
    rest = [k for k in human if k not in chosen]
    y = np.array([ap(human[k]) for k in chosen])
    yhat = np.array([ap(judge[k]) for k in chosen])
    unl = np.array([ap(judge[k]) for k in rest])
    lo, hi = ppi_py.ppi_mean_ci(y, yhat, unl, alpha=1 - level, lam=None)
    return {"mean": float(ppi_py.ppi_mean_pointestimate(y, yhat, unl, lam=None)[0]),
            "ci": [float(lo[0]), float(hi[0])],
            "judge_mean": float(np.concatenate([yhat, unl]).mean())}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return make_world(tmp_path_factory.mktemp("headline"))


@pytest.fixture(scope="module")
def labelled(world: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One labelled CLI run, with its report.html."""
    result = run_cli(*args(world, "tracking=none"), cwd=tmp_path_factory.mktemp("run"))
    assert result.returncode == 0, result.stderr
    return result


def test_the_headline_is_the_ppi_mean_and_mean_stays_the_judge_s(
        world: dict[str, Any], labelled: Any) -> None:
    summary, want = labelled.summary(), expected(world)
    head = summary["headline"]
    assert head == {"name": "ppi_mean", "value": pytest.approx(want["mean"], rel=1e-9),
                    "interval": pytest.approx(want["ci"], rel=1e-9), "level": 0.95,
                    "method": "ppi++"}
    assert head["value"] == summary["confidence"]["mean"]  # the same figure, to the bit
    assert head["interval"] == summary["confidence"]["ci"]
    assert sum(head["interval"]) / 2 == pytest.approx(head["value"], abs=1e-12)  # centred
    assert summary["mean"] == pytest.approx(want["judge_mean"], abs=1e-12)  # the judge alone
    assert abs(summary["mean"] - head["value"]) > 0.1  # the lenient judge: two numbers
    assert list(summary)[:3] == ["metric", "mean", "headline"]


def test_the_console_s_mean_line_is_the_headline(world: dict[str, Any], labelled: Any) -> None:
    want = expected(world)
    lo, hi = want["ci"]
    lines = labelled.stdout.splitlines()
    first = next(line for line in lines if re.search(r"\d\.\d{4}", line))  # first figure
    assert first.split(None, 1) == [
        "mean", f"{want['mean']:.4f} [{lo:.4f}, {hi:.4f}] (PPI++ at 95%, {LABELLED} of {N} "
                f"labelled; judge alone {want['judge_mean']:.4f})"]


def _text(fragment: str) -> str:
    return html_lib.unescape(re.sub(r"<[^>]+>", "", fragment)).strip()


def test_report_html_leads_with_the_headline_and_its_centred_interval(
        world: dict[str, Any], labelled: Any) -> None:
    want = expected(world)
    page = (labelled.out_dir / "report.html").read_text("utf-8")
    figures = re.findall(r'<div class="mean" id="headline-mean">([^<]*)</div>', page)
    assert figures == [f"{want['mean']:.4f}"]  # the one large figure
    assert page.index('id="headline-mean"') < page.index('<table class="summary">')
    shown = re.search(r'id="headline-interval"><strong>\[([0-9.]+), ([0-9.]+)\]</strong>',
                      page)
    assert shown is not None
    lo, hi = float(shown.group(1)), float(shown.group(2))
    assert [lo, hi] == pytest.approx(want["ci"], abs=5e-5)
    assert (lo + hi) / 2 == pytest.approx(want["mean"], abs=1e-4)  # centred on the figure
    alone = re.search(r'id="headline-judge-alone">(.*?)</div>', page, re.S)
    assert alone is not None and _text(alone.group(1)).startswith(
        f"judge alone\n{want['judge_mean']:.4f}")
    label = re.search(r'<div class="label">(.*?)</div>', page, re.S)
    assert label is not None and "PPI++" in _text(label.group(1))
    table = dict(re.findall(r"<tr><th>([^<]*)</th><td>([^<]*)</td></tr>",
                            page[page.index('<table class="summary">'):]))
    assert table["mean"].startswith(f"{want['mean']:.4f} [{want['ci'][0]:.4f}, "
                                    f"{want['ci'][1]:.4f}] (PPI++ at 95%")
    assert html_lib.unescape(table["judge alone"]).startswith(f"{want['judge_mean']:.4f} ")


def test_mlflow_logs_the_headline_and_its_interval_first(labelled: Any,
                                                         mlflow_store: str) -> None:
    from harness.core.summary import RunSummary
    from harness.core.types import RunRecord
    from harness.run.record import logged_metrics
    from harness.tracking.mlflow.store import client, close_run, open_run

    uri = mlflow_store
    summary = labelled.summary()
    logged = {}
    for name, data in (("labelled", summary), ("plain", _without_labels(summary))):
        record = RunSummary.from_json(data)
        run, _ = open_run(uri, "headline", name, {})
        close_run(uri, run, RunRecord(params=record.params(),
                                      metrics=logged_metrics(record.metrics()),
                                      tags=record.tags()))
        logged[name] = client(uri).get_run(run).data
    first = list(logged["labelled"].metrics)
    assert first[:4] == ["ppi_mean", "ci_low", "ci_high", "mean"]
    assert logged["labelled"].metrics["ppi_mean"] == summary["confidence"]["mean"]
    assert [logged["labelled"].metrics[k] for k in ("ci_low", "ci_high")] == (
        summary["confidence"]["ci"])
    assert logged["labelled"].metrics["mean"] == summary["mean"]
    assert logged["labelled"].tags["harness.headline"] == "ppi_mean"
    assert "headline" not in logged["labelled"].metrics  # a name for another, not logged
    assert list(logged["plain"].metrics)[:4] == ["mean", "n_scored", "n_unscored", "n_samples"]
    assert logged["plain"].tags["harness.headline"] == "mean"
    note = logged["labelled"].tags["mlflow.note.content"]
    assert note.index("PPI++ mean") < note.index("Judge alone: mean")


def _without_labels(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if k not in ("confidence", "headline")}


@pytest.mark.parametrize(("choice", "method"), [("id_ranked", "sample mean"),
                                                (LLM, "judge alone")])
def test_a_run_without_labels_keeps_its_mean(world: dict[str, Any], tmp_path: Path,
                                             choice: str, method: str) -> None:
    result = run_cli(*args(world, "tracking=none", "run.human_labels=null",
                           "run.report=true", metric=choice), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    scores = [r["score"] for r in result.rows() if r["score"] is not None]
    mean = sum(scores) / len(scores)
    summary = result.summary()
    assert summary["headline"] == {"name": "mean", "value": summary["mean"], "interval": None,
                                   "level": None, "method": method}
    assert summary["mean"] == pytest.approx(mean, abs=1e-12)
    assert re.search(rf"\n  mean +{mean:.4f}\n", result.stdout)  # the line as it always was
    page = (result.out_dir / "report.html").read_text("utf-8")
    assert f'id="headline-mean">{mean:.4f}</div>' in page
    assert 'id="headline-judge-alone"' not in page and "PPI++" not in page


@pytest.mark.slow
def test_several_variants_lead_with_the_first_s_headline(world: dict[str, Any],
                                                         tmp_path: Path) -> None:
    """``[id_based, llm]``: only the second has a block; the run's headline is the first
    variant's mean, and no PPI++ interval stands beside it."""
    result = run_cli(*args(world, "tracking=none", "run.max_unscored_frac=1", "run.report=true",
                           metric=f"[id_based,{LLM}]"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = result.summary()
    variants = summary["variants"]
    assert summary["headline"]["name"] == "mean" and summary["headline"]["interval"] is None
    assert variants[LLM]["headline"]["name"] == f"{LLM}/ppi_mean"
    assert variants[LLM]["headline"]["value"] == variants[LLM]["confidence"]["mean"]
    assert variants["id_based"]["headline"]["name"] == "id_based/mean"
    page = (result.out_dir / "report.html").read_text("utf-8")
    shown = re.search(r'id="headline-interval"><strong>([^<]*)</strong>', page)
    assert shown is not None and "PPI++" not in _text(shown.group(0))
    # the other way round: the llm first, its PPI++ mean leads
    first = run_cli(*args(world, "tracking=none", "run.max_unscored_frac=1",
                          metric=f"[{LLM},id_based]"), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    head = first.summary()["headline"]
    assert head["name"] == f"{LLM}/ppi_mean"
    assert head["value"] == pytest.approx(expected(world)["mean"], rel=1e-9)


@pytest.mark.slow
def test_the_sweep_s_default_objective_is_the_headline(world: dict[str, Any],
                                                       tmp_path: Path) -> None:
    """Two judges, both labelled runs: the jobs are ranked by their PPI++ means (the
    default ``run.objective=headline``), the best job named with its value."""
    (tmp_path / "strict").mkdir()
    strict = make_world(tmp_path / "strict", lenient=0.05)
    result = run_cli("-m", *args(world, "tracking=none",
                                 f"judge.labels={world['judge_file']},{strict['judge_file']}"),
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    want = sorted([expected(world)["mean"], expected({**world, "judge": strict["judge"]})["mean"]],
                  reverse=True)
    assert "ranked by ppi_mean (highest first" in result.stdout
    ranked = [float(line.split()[1]) for line in result.stdout.splitlines()
              if line[:6].strip().isdigit()]
    assert ranked == [round(v, 4) for v in want]
    assert f"(ppi_mean {want[0]:.4f})" in result.stdout
    jobs = [line for line in result.stdout.splitlines() if line.startswith("job ")]
    assert all(": mean " in j and "(PPI++ at 95%" in j for j in jobs), jobs


def test_a_floor_on_the_headline_checks_the_ppi_mean(world: dict[str, Any]) -> None:
    from harness.testing import assert_context_precision
    from harness.testing.checks import FloorError, take

    samples = [json.loads(x) for x in world["data"].read_text("utf-8").splitlines()]
    overrides = ["judge=fixture", f"judge.labels={world['judge_file']}",
                 f"run.human_labels={world['labels']}"]
    want = expected(world)
    floor = (want["mean"] + want["judge_mean"]) / 2  # above the headline, below the judge
    take()
    result = assert_context_precision(samples, LLM, floors={"mean": floor},
                                      overrides=overrides, label="judge")
    assert result.summary["headline"]["value"] == pytest.approx(want["mean"], rel=1e-9)
    with pytest.raises(FloorError) as failed:
        assert_context_precision(samples, LLM, floors={"headline": floor},
                                 overrides=overrides, label="headline")
    assert str(failed.value).splitlines()[0].startswith(
        f"harness {LLM}: below the floor: headline (PPI++ mean) {want['mean']:.4g} < "
        f"{floor:.4g}")
    judged, headline = take()[-2:]
    lo, hi = want["ci"]
    assert judged.line().startswith(
        f"PASS judge {LLM} n={N} headline ppi_mean={want['mean']:.4f} [{lo:.4f}, {hi:.4f}] "
        f"mean (judge alone)={want['judge_mean']:.4g} (floor {floor:.4g})")
    assert headline.line().startswith(f"FAIL headline {LLM} n={N} headline (PPI++ mean)="
                                      f"{want['mean']:.4g} (floor {floor:.4g})")
    # ci_low: what the labels prove
    assert_context_precision(samples, LLM, floors={"ci_low": lo - 0.01}, overrides=overrides)
