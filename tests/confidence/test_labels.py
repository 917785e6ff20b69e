"""The human labels file (run.human_labels): JSON lines and CSV, every way to name a chunk,
grades, and one line naming file, line and field for each bad row."""

from __future__ import annotations

import json

import pytest

from harness.confidence.labels import Label, read_labels
from harness.core.errors import DatasetError


def _jsonl(path, rows, bom=False):
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    path.write_bytes(("\ufeff" if bom else "").encode() + text.encode("utf-8"))
    return path


def test_jsonl_names_chunks_by_id_rank_and_text(tmp_path):
    f = _jsonl(tmp_path / "l.jsonl", [
        {"id": "q1", "context_id": "d1", "relevant": 1},
        {"id": "q1", "rank": 2, "relevant": 0},
        {"id": 7, "context": "Paris is…", "relevant": True},
    ])
    got = read_labels(f)
    assert got.labels == (
        Label("q1", 1, 1, context_id="d1"),
        Label("q1", 0, 2, rank=2),
        Label("7", 1, 3, context="Paris is…"),
    )
    assert got.blank == 0


def test_csv_with_bom_and_blank_verdicts(tmp_path):
    f = tmp_path / "l.csv"
    f.write_bytes("\ufeffid,rank,context_id,context,relevant\n"
                  "q1,1,d1,\"a, quoted\"\"text\",1\n"
                  "q1,2,,second,\n"
                  "q2,1,d9,x,no\n".encode())
    got = read_labels(f)
    assert [(lb.sample_id, lb.rank, lb.context_id, lb.relevant) for lb in got.labels] == [
        ("q1", 1, "d1", 1), ("q2", 1, "d9", 0)]
    assert got.labels[0].context == 'a, quoted"text'
    assert got.blank == 1


def test_line_separators_inside_texts_stay_in_the_text(tmp_path):
    text = "one\u2028two\u0085three"
    f = _jsonl(tmp_path / "l.jsonl", [{"id": "q", "context": text, "relevant": 0}], bom=True)
    assert read_labels(f).labels[0].context == text
    c = tmp_path / "l.csv"
    c.write_text(f'id,context,relevant\nq,"{text}\nnext line",1\n', encoding="utf-8")
    [label] = read_labels(c).labels
    assert label.context == text + "\nnext line" and label.line == 3


@pytest.mark.parametrize(("grade", "min_grade", "relevant"),
                         [(2, 2.0, 1), (1, 2.0, 0), (3, 2.0, 1), ("1", 1.0, 1), (0.5, 1.0, 0)])
def test_grades_read_with_min_grade(tmp_path, grade, min_grade, relevant):
    f = _jsonl(tmp_path / "l.jsonl", [{"id": "q", "rank": 1, "grade": grade}])
    [label] = read_labels(f, min_grade=min_grade).labels
    assert (label.relevant, label.grade) == (relevant, float(grade))


@pytest.mark.parametrize(("row", "field", "words"), [
    ({"id": "q", "rank": 1, "relevant": 2}, "relevant", "expected 0 or 1, got 2"),
    ({"id": "q", "rank": 1, "relevant": "maybe"}, "relevant", "expected 0 or 1"),
    ({"rank": 1, "relevant": 1}, "id", "missing"),
    ({"id": [1], "rank": 1, "relevant": 1}, "id", "expected the sample's id"),
    ({"id": "q", "relevant": 1}, "context_id", "by context_id, rank or context"),
    ({"id": "q", "rank": 0, "relevant": 1}, "rank", "from 1"),
    ({"id": "q", "rank": 1.5, "relevant": 1}, "rank", "from 1"),
    ({"id": "q", "rank": 1, "grade": "high"}, "grade", "expected a number"),
    ({"id": "q", "rank": 1, "grade": 2, "relevant": 1}, "grade", "not both"),
    ({"id": "q", "context_id": {"a": 1}, "relevant": 1}, "context_id", "expected a string"),
    ({"id": "q", "context": 5, "relevant": 1}, "context", "expected the chunk's text"),
])
def test_a_bad_row_is_one_line_naming_file_line_and_field(tmp_path, row, field, words):
    f = _jsonl(tmp_path / "l.jsonl", [{"id": "ok", "rank": 1, "relevant": 1}, row])
    with pytest.raises(DatasetError) as e:
        read_labels(f)
    message = str(e.value)
    assert message.startswith(f"{f}:2: field '{field}': ")
    assert words in message and "\n" not in message


def test_a_bad_csv_cell_names_its_line(tmp_path):
    f = tmp_path / "l.csv"
    f.write_text("id,rank,relevant\nq,1,1\nq,x,1\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=rf"^{f}:3: field 'rank': expected a whole number"):
        read_labels(f)


@pytest.mark.parametrize(("text", "line", "words"), [
    ('{"id": "q", "rank": 1, "relevant": 1}\n{"id": \n', 2, "not valid JSON"),
    ('["q", 1, 1]\n', 1, "expected one JSON object per line"),
])
def test_bad_json_lines(tmp_path, text, line, words):
    f = tmp_path / "l.jsonl"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(DatasetError, match=rf"^{f}:{line}: {words}"):
        read_labels(f)


def test_bad_csv_shapes(tmp_path):
    f = tmp_path / "l.csv"
    f.write_text("id,rank,relevant\nq,1,1,extra\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=rf"^{f}:2: has 4 columns but the header has 3"):
        read_labels(f)
    f.write_text("id,id,relevant\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=rf"^{f}:1: field 'id': appears more than once"):
        read_labels(f)


def test_missing_empty_and_undecodable_files(tmp_path):
    with pytest.raises(DatasetError, match="file not found .set by run.human_labels"):
        read_labels(tmp_path / "none.jsonl")
    empty = tmp_path / "e.jsonl"
    empty.write_text("\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="holds no label rows"):
        read_labels(empty)
    latin = tmp_path / "l.jsonl"
    latin.write_bytes(b'{"id": "q", "context": "caf\xe9", "relevant": 1}\n')
    with pytest.raises(DatasetError, match=rf"^{latin}:1: not valid UTF-8"):
        read_labels(latin)
