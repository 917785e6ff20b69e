"""A sweep over retrieval depth (``retriever.top_k``) gated and compared on ``ndcg_at_10``:
by default every job logs the cut-off, scored as trec_eval scores a list shorter than it
(issue 35); ``run.retrieval_beyond_depth=false`` still drops it.

Real runs of the real CLI (in this process): BM25 on ``tests/data/beir_tiny``. The golden
values are trec_eval's (``pytrec_eval``) on the lists each run retrieved and the qrels file.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
import pytrec_eval  # the test extra: trec_eval 9.0.8 itself, as the reference
from conftest import TEST_DATA, run_cli
from helpers.cli import compare_cli

#: sweeps over the depths, logged to MLflow and compared: seconds each
pytestmark = pytest.mark.slow
TINY = TEST_DATA / "beir_tiny"
BM25 = ("dataset=beir", f"dataset.path={TINY}", "retriever=bm25", "metric=id_ranked")
DEPTHS = (1, 3, 10)


def qrels() -> dict[str, dict[str, int]]:
    """The test split's judgments, read from the file."""
    out: dict[str, dict[str, int]] = {}
    with (TINY / "qrels" / "test.tsv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            out.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    return out


def trec_ndcg_10(rows: list[dict[str, Any]]) -> float:
    """pytrec_eval's mean ``ndcg_cut_10`` over the rows' queries (scores follow the list)."""
    judged = qrels()
    run = {r["id"]: {d: float(100 - i) for i, d in enumerate(r["retrieved_context_ids"])}
           for r in rows}
    evaluator = pytrec_eval.RelevanceEvaluator({q: judged[q] for q in run}, {"ndcg_cut.10"})
    per_query = evaluator.evaluate(run)
    assert set(per_query) == set(run)  # every query retrieved something
    return sum(m["ndcg_cut_10"] for m in per_query.values()) / len(per_query)


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> dict[int, dict[str, Any]]:
    """One run per depth (default settings): its depth, summary, rows and stdout."""
    cwd = tmp_path_factory.mktemp("depth")
    out = {}
    for k in DEPTHS:
        result = run_cli(*BM25, f"retriever.top_k={k}", "tracking=none", cwd=cwd)
        assert result.returncode == 0, result.stderr
        out[k] = {"summary": result.summary(), "rows": [r for r in result.rows()
                                                         if "ndcg_at_10" in r],
                  "stdout": result.stdout}
    return out


def test_every_depth_logs_ndcg_at_10_as_trec_eval_scores_it(
        jobs: dict[int, dict[str, Any]]) -> None:
    for k, job in jobs.items():
        summary = job["summary"]
        depth = summary["retrieval_cutoffs"]["depth"]
        assert depth <= min(k, 3) < 10  # beir_tiny: at most 3 documents match a query
        assert summary["retrieval_cutoffs"]["dropped"] == []
        assert "ndcg_at_10" in summary["retrieval_cutoffs"]["logged"]
        assert summary["retrieval"]["n_queries"] == len(job["rows"]) == 4
        assert summary["retrieval"]["ndcg_at_10"] == pytest.approx(
            trec_ndcg_10(job["rows"]), abs=1e-12), k
        assert "not logged" not in job["stdout"]
        assert "scored as if padded with non-relevant chunks" in job["stdout"]
    # one document a query scores lower than three at the same cut-off
    assert jobs[1]["summary"]["retrieval"]["ndcg_at_10"] < jobs[3]["summary"]["retrieval"][
        "ndcg_at_10"]


def test_a_floor_on_ndcg_at_10_gates_every_depth(
        jobs: dict[int, dict[str, Any]], tmp_path: Path) -> None:
    shallow = trec_ndcg_10(jobs[1]["rows"])
    deep = trec_ndcg_10(jobs[10]["rows"])
    floor = round((shallow + deep) / 2, 4)  # between them: the shallow job fails
    assert shallow < floor < deep
    for k in DEPTHS:
        result = run_cli(*BM25, f"retriever.top_k={k}", "tracking=none",
                         f"run.fail_under={{ndcg_at_10: {floor}}}", cwd=tmp_path)
        assert result.returncode == (4 if k == 1 else 0), result.stderr
        assert result.summary()["gate"] == {"fail_under": {"ndcg_at_10": floor},
                                            "passed": k != 1}
        assert "not logged" not in result.stderr
    # the old behaviour, one setting away: the cut-off above the depth is dropped, and a
    # floor on it fails the job
    old = run_cli(*BM25, "retriever.top_k=3", "tracking=none", "run.retrieval_beyond_depth=false",
                  f"run.fail_under={{ndcg_at_10: {floor}}}", cwd=tmp_path)
    assert old.returncode == 4
    assert "ndcg_at_10" in old.summary()["retrieval_cutoffs"]["dropped"]
    assert ("  ndcg_at_10: not logged by this run (its cut-off is above the retrieval depth 3; "
            "run.retrieval_beyond_depth=true logs it)") in old.stderr.splitlines()
    assert "map_at_10 not logged: above the retrieval depth 3" in old.stdout


def test_compare_pairs_two_depths_on_ndcg_at_10(
        tmp_path: Path, mlflow_store: str, capsys: pytest.CaptureFixture[str]) -> None:
    env = {"MLFLOW_TRACKING_URI": mlflow_store}
    for k in (1, 10):
        result = run_cli(*BM25, f"retriever.top_k={k}", "experiment_name=depth_sweep",
                         cwd=tmp_path, env=env)
        assert result.returncode == 0, result.stderr
    code, out, err = compare_cli(capsys, "experiment=depth_sweep", "baseline=retriever.top_k=1",
                                 "candidate=retriever.top_k=10", "metric=ndcg_at_10",
                                 f"tracking_uri={mlflow_store}", "bootstrap=200",
                                 "plots=false", "log=false")
    assert code == 0, err
    assert "ndcg_at_10" in out and "n pairs          4" in out
