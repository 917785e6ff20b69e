"""``dataset.corpus`` with the dense retriever: a question file beside the documents of a
BEIR folder ranks exactly as the BEIR folder itself does, and sweeps (heavy: torch)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from conftest import run_cli
from helpers.paths import ROOT

pytestmark = pytest.mark.heavy

TINY = ROOT / "tests" / "data" / "beir_tiny"


def question_file(where: Path) -> Path:
    """beir_tiny's test queries as a question file, their qrels as graded reference ids
    (qrels of a query with no text are left out, as the BEIR reader leaves them out)."""
    queries = {q["_id"]: q["text"] for q in map(json.loads, (TINY / "queries.jsonl")
                                                 .read_text("utf-8").splitlines())}
    graded: dict[str, list[tuple[str, int]]] = {}
    with open(TINY / "qrels" / "test.tsv", encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            graded.setdefault(row["query-id"], []).append((row["corpus-id"], int(row["score"])))
    path = where / "questions.jsonl"
    path.write_text("".join(json.dumps({
        "id": qid, "user_input": queries[qid],
        "reference_context_ids": [d for d, _ in docs],
        "reference_context_grades": [g for _, g in docs]}) + "\n"
        for qid, docs in graded.items() if qid in queries), "utf-8")  # as BEIR reads them
    return path


def ranked(out: Path) -> dict[str, list[str]]:
    rows = map(json.loads, (out / "samples.jsonl").read_text("utf-8").splitlines())
    return {r["id"]: r["retrieved_context_ids"] for r in rows}


def test_dense_on_your_corpus_ranks_as_on_the_beir_folder_and_sweeps(tmp_path: Path) -> None:
    common = ["retriever=dense", "retriever.index=exact", "retriever.top_k=3",
              "metric=id_ranked", "tracking=none", "run.quiet=true"]
    beir = run_cli("dataset=beir", f"dataset.path={TINY}", *common,
                   f"hydra.run.dir={tmp_path / 'beir'}", cwd=tmp_path)
    assert beir.returncode == 0, beir.stderr[-2000:]
    questions = question_file(tmp_path)
    own = run_cli("dataset=jsonl", f"dataset.path={questions}",
                  f"dataset.corpus={TINY / 'corpus.jsonl'}", *common,
                  f"hydra.run.dir={tmp_path / 'own'}", cwd=tmp_path)
    assert own.returncode == 0, own.stderr[-2000:]
    expected = ranked(tmp_path / "beir")
    assert expected and ranked(tmp_path / "own") == expected
    assert all(len(ids) == 3 for ids in expected.values())

    sweep = tmp_path / "sweep"
    swept = run_cli("-m", "dataset=jsonl", f"dataset.path={questions}",
                    f"dataset.corpus={TINY / 'corpus.jsonl'}", "retriever=dense",
                    "retriever.index=exact", "retriever.top_k=1,2", "metric=id_ranked",
                    "tracking=none", "run.quiet=true", f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert swept.returncode == 0, swept.stderr[-2000:]
    for job in sweep.glob("*/summary.json"):
        top_k = json.loads(job.read_text("utf-8"))["retriever"]["top_k"]
        assert ranked(job.parent) == {q: ids[:top_k] for q, ids in expected.items()}
