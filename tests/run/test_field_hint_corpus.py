"""A variant that needs reference texts on records that name their references by id only:
the refusal names ``dataset.corpus=FILE`` beside the column mapping (issue 35, item 6), and
does not once a corpus is given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

ROWS = [{"id": f"q{i}", "user_input": f"question {i}?", "reference": f"answer {i}",
         "retrieved_contexts": [f"chunk {i} a", f"chunk {i} b"],
         "retrieved_context_ids": [f"d{i}a", f"d{i}b"],
         "reference_context_ids": [f"d{i}a"]} for i in range(4)]


@pytest.mark.slow
def test_the_refusal_names_the_corpus_and_a_corpus_answers_it(tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), "utf-8")
    common = ("dataset=jsonl", f"dataset.path={data}", "metric=[non_llm,llm_with_reference]",
              "judge=fixture", "judge.unlabelled=irrelevant", "tracking=none",
              "run.report=false", "run.max_unscored_frac=1")
    refused = run_cli(*common, cwd=tmp_path)
    assert refused.returncode == 2, refused.stderr
    [line] = [x for x in refused.stderr.splitlines() if x.strip()]
    assert "metric non_llm needs the field 'reference_contexts'" in line
    assert line.endswith(
        "map the column that holds it with dataset.fields.reference_contexts=COLUMN (or, when "
        "the records name them by id, give the documents with dataset.corpus=FILE)")
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("".join(
        json.dumps({"_id": f"d{i}{s}", "text": f"chunk {i} {s}"}) + "\n"
        for i in range(4) for s in "ab"), "utf-8")
    answered = run_cli(*common, f"dataset.corpus={corpus}", cwd=tmp_path)
    assert answered.returncode == 0, answered.stderr
    # the reference text is the relevant chunk's own text: non_llm finds it at rank 1
    assert answered.summary()["variants"]["non_llm"]["mean"] == pytest.approx(1.0, abs=1e-9)
