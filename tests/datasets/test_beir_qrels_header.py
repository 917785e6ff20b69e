"""A BEIR qrels file's first line (issue 24, class 11): a header naming the columns is
skipped; any other first line is a judgment, kept, or refused at its line when its score is
not a number, never taken for a header and dropped unseen."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.core.errors import DatasetError
from harness.datasets.beir.files import read_qrels


def qrels(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "test.tsv"
    path.write_text(text, "utf-8")
    return path


@pytest.mark.parametrize(
    "header",
    ["query-id\tcorpus-id\tscore", "qid\tdocid\trelevance", "query_id\tdoc_id\tlabel",
     "Query-ID\tCorpus-ID\tScore", "topic\tdocument\tgrade", "q\td\tjudgment"],
)
def test_a_header_naming_the_columns_is_skipped(tmp_path: Path, header: str) -> None:
    path = qrels(tmp_path, f"{header}\nq1\td1\t2\nq1\td2\t0\n")
    assert list(read_qrels(path)) == [(2, ("q1", "d1", 2.0)), (3, ("q1", "d2", 0.0))]


def test_a_headerless_file_keeps_its_first_judgment(tmp_path: Path) -> None:
    path = qrels(tmp_path, "q1\td1\t1\nq2\td3\t2\n")
    assert [row for _, row in read_qrels(path)] == [("q1", "d1", 1.0), ("q2", "d3", 2.0)]


def test_ids_that_look_like_names_are_still_a_judgment_with_a_number(tmp_path: Path) -> None:
    path = qrels(tmp_path, "qid\tdocid\t1\n")
    assert list(read_qrels(path)) == [(1, ("qid", "docid", 1.0))]


@pytest.mark.parametrize(
    ("text", "line", "got"),
    [
        ("q1\td1\thigh\nq2\td2\t1\n", 1, "'high'"),
        ("\n\nq1\td1\tx\n", 3, "'x'"),
        ("q1\td1\t\nq2\td2\t1\n", 1, "''"),
        ("q1\td1\tnan\n", 1, "'nan'"),
    ],
)
def test_a_first_judgment_without_a_number_is_refused_at_its_line(
    tmp_path: Path, text: str, line: int, got: str
) -> None:
    path = qrels(tmp_path, text)
    with pytest.raises(DatasetError) as e:
        list(read_qrels(path))
    assert str(e.value) == f"{path}:{line}: field 'score': expected a number, got {got}"
