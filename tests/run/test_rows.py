"""``samples.jsonl`` rows explain themselves: the question and the ranked chunks (id, text
trimmed to ``run.row_text_chars``, verdict, reason) beside the existing columns."""

import json
from pathlib import Path

import pytest
from conftest import run_cli, sample_labels, sample_rows
from helpers.judge_server import JudgeServer

from harness import evaluate

LONG = "word " * 100  # 500 characters


def write_dataset(tmp_path: Path) -> Path:
    records = [
        {"id": "long", "user_input": "Which chunk is long?", "retrieved_context_ids": ["a", "b"],
         "retrieved_contexts": [LONG, "short"], "reference_context_ids": ["b"]},
        {"id": "no-ids", "user_input": "Nothing retrieved?", "reference_context_ids": ["b"]},
    ]
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return path


def test_rows_carry_the_question_and_ranked_chunks_beside_the_old_columns(tmp_path: Path) -> None:
    result = run_cli("metric=id_ranked", "tracking=none", "run.quiet=true", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    row, source = result.rows()[0], sample_rows()[0]
    assert list(row)[:4] == ["id", "score", "verdicts", "error"]  # the old columns come first
    assert row["question"] == "Where is the Eiffel Tower located?"
    # q01 retrieves d001 (its reference), d002, d003: relevant, then two irrelevant
    assert row["chunks"] == [
        {"id": "d001", "text": source["retrieved_contexts"][0], "verdict": 1},
        {"id": "d002", "text": source["retrieved_contexts"][1], "verdict": 0},
        {"id": "d003", "text": source["retrieved_contexts"][2], "verdict": 0},
    ]
    assert row["verdicts"] == [1, 0, 0]


@pytest.mark.slow
def test_row_text_chars_trims_texts_and_zero_keeps_ids_only(tmp_path: Path) -> None:
    data = write_dataset(tmp_path)
    common = ("metric=id_ranked", "dataset=jsonl", f"dataset.path={data}", "tracking=none",
              "run.quiet=true", "run.max_unscored_frac=1")
    default, short, none, whole = (
        run_cli(*common, *extra, cwd=tmp_path)
        for extra in ((), ("run.row_text_chars=10",), ("run.row_text_chars=0",),
                      ("run.row_text_chars=null",))
    )
    for result in (default, short, none, whole):
        assert result.returncode == 0, result.stderr
    assert default.rows()[0]["chunks"][0]["text"] == LONG[:300] + "…"
    assert default.rows()[0]["chunks"][1] == {"id": "b", "text": "short", "verdict": 1}
    assert short.rows()[0]["question"] == "Which chun…"
    assert short.rows()[0]["chunks"][0]["text"] == "word word …"
    assert "question" not in none.rows()[0]
    assert none.rows()[0]["chunks"] == [{"id": "a", "verdict": 0}, {"id": "b", "verdict": 1}]
    assert whole.rows()[0]["chunks"][0]["text"] == LONG
    unscored = default.rows()[1]
    assert unscored["score"] is None and "chunks" not in unscored
    assert unscored["question"] == "Nothing retrieved?"


@pytest.mark.slow
def test_judged_rows_put_each_reason_beside_its_chunk(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    judge_server.labels.update(sample_labels())
    result = run_cli("metric=llm_with_reference", "judge=local",
                     f"judge.base_url={judge_server.base_url}", "judge.model=test-judge",
                     "run.limit=3", "tracking=none", "run.quiet=true", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for row, source in zip(result.rows(), sample_rows(), strict=False):
        expected = [int(i in source["reference_context_ids"])
                    for i in source["retrieved_context_ids"]]
        assert [c["verdict"] for c in row["chunks"]] == expected
        assert [c["reason"] for c in row["chunks"]] == row["reasons"]
        assert all(c["reason"] for c in row["chunks"])
        assert [c["id"] for c in row["chunks"]] == source["retrieved_context_ids"]


def test_the_python_api_rows_have_chunks_too() -> None:
    sample = {"user_input": "Where is the Eiffel Tower?", "reference": "In Paris.",
              "retrieved_contexts": ["The Eiffel Tower is in Paris.", "Berlin has a gate."],
              "reference_contexts": ["The Eiffel Tower is in Paris."]}
    row = evaluate([sample], "non_llm").rows[0]
    assert row["question"] == "Where is the Eiffel Tower?"
    assert [c["text"] for c in row["chunks"]] == sample["retrieved_contexts"]
    assert [c["verdict"] for c in row["chunks"]] == [1, 0]  # similarity 1.0, then low
    assert row["chunks"][0]["similarity"] == 1.0


def test_line_separators_in_texts_do_not_split_a_row(tmp_path: Path) -> None:
    """U+2028/U+2029/U+0085 are valid raw in JSON, but readers that split lines on them
    (``str.splitlines``, many JSON-lines tools) would cut the row: they are escaped."""
    texts = ["one\u2028two", "para\u2029graph", "next\u0085line"]
    record = {"id": "seps", "user_input": "Q\u2028?", "retrieved_context_ids": ["a", "b", "c"],
              "retrieved_contexts": texts, "reference_context_ids": ["b"]}
    data = tmp_path / "seps.jsonl"
    data.write_text(json.dumps(record, ensure_ascii=False) + "\n", "utf-8")
    result = run_cli("metric=id_ranked", "dataset=jsonl", f"dataset.path={data}",
                     "tracking=none", "run.quiet=true", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    raw = (result.out_dir / "samples.jsonl").read_text("utf-8")
    assert len(raw.splitlines()) == 1 and "\\u2028" in raw
    [row] = [json.loads(line) for line in raw.splitlines()]
    assert [c["text"] for c in row["chunks"]] == texts and row["question"] == "Q\u2028?"
    assert row["verdicts"] == [0, 1, 0]
