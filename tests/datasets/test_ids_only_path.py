"""Records of an id and two id lists take a shorter path (``RecordParser._ids_only``), and
JSON-lines files are decoded from their bytes: each gives the sample, or the error line,
that the field-by-field path over the decoded text gives (the reference here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.core.errors import DatasetError
from harness.datasets.fields import field_map
from harness.datasets.files import JsonlDataset
from harness.datasets.records import RecordParser

FIELDS = field_map(None)
RECORDS: list[dict[str, Any]] = [
    {"id": "q1", "retrieved_context_ids": ["d1", "d2", "d1"], "reference_context_ids": ["d2"]},
    {"id": 7, "retrieved_context_ids": [], "reference_context_ids": []},
    {"retrieved_context_ids": ["a"], "reference_context_ids": ["b", "c"]},
    {"id": "q2", "retrieved_context_ids": [1, 2], "reference_context_ids": ["1"]},
    {"id": "é", "retrieved_context_ids": ["日本"], "reference_context_ids": ["😀"]},
    {"id": "q3", "retrieved_context_ids": ["x"]},
    {"id": "q4", "retrieved_context_ids": None, "reference_context_ids": ["x"]},
    {"id": "q5", "retrieved_context_ids": "d1", "reference_context_ids": ["x"]},
    {"id": "q6", "retrieved_context_ids": [["d1"]], "reference_context_ids": ["x"]},
    {"id": "q7", "retrieved_context_ids": ["d\ud800"], "reference_context_ids": ["x"]},
    {"id": "q\ud800", "retrieved_context_ids": ["d"], "reference_context_ids": ["x"]},
    {"id": ["q8"], "retrieved_context_ids": ["d"], "reference_context_ids": ["x"]},
    {"id": True, "retrieved_context_ids": ["d"], "reference_context_ids": ["x"]},
    {"id": "q9", "retrieved_context_ids": [True], "reference_context_ids": ["x"]},
    {"id": "", "retrieved_context_ids": [""], "reference_context_ids": [""]},
]


def outcome(parser: RecordParser, raw: dict[str, Any], index: int) -> Any:
    try:
        return parser.parse(raw, index, index + 1)
    except DatasetError as e:
        return str(e)


@pytest.mark.parametrize("raw", RECORDS)
def test_an_ids_only_record_is_what_the_general_path_makes_of_it(raw: dict[str, Any]) -> None:
    fast, general = (RecordParser("d.jsonl", FIELDS, cells_are_text=False) for _ in "ab")
    # an extra key holding null (a field left out) sends the record the general way
    assert outcome(fast, raw, 4) == outcome(general, {**raw, "user_input": None}, 4)


def test_a_repeated_id_is_refused_on_either_path_with_the_same_line() -> None:
    raw = RECORDS[0]
    fast, general = (RecordParser("d.jsonl", FIELDS, cells_are_text=False) for _ in "ab")
    assert outcome(fast, raw, 0) == outcome(general, {**raw, "user_input": None}, 0)
    again = outcome(fast, raw, 5)
    assert again == outcome(general, {**raw, "user_input": None}, 5)
    assert again == "d.jsonl:6: field 'id': duplicate id 'q1' (first used on line 1)"


def test_mapped_columns_take_the_short_path_too() -> None:
    fields = field_map({"id": "qid", "retrieved_context_ids": "run", "reference_context_ids":
                        "qrels"})
    parser = RecordParser("d.jsonl", fields, cells_are_text=False)
    sample = parser.parse({"qid": "a", "run": ["d1"], "qrels": ["d1", "d2"]}, 0, 1)
    assert (sample.id, sample.retrieved_context_ids, sample.reference_context_ids) == (
        "a", ("d1",), ("d1", "d2"))
    assert not parser.columns.unseen


LINES = [
    '{"id": "q1", "retrieved_context_ids": ["d1"], "reference_context_ids": ["d1"]}',
    "",
    "   ",
    '{"id": "q2", "retrieved_context_ids": ["d2"], "reference_context_ids": ["d1"]}',
    '{"id": "q3", "retrieved_context_ids": ["d3"], "reference_context_ids": [], "x": NaN}',
    '{"id": "q4", "retrieved_context_ids": ["\\ud83d\\ude00"], "reference_context_ids": []}',
    '{"id": "q5", "retrieved_context_ids": ["é"], "reference_context_ids": ["x"]}',
]


def write(path: Path, lines: list[str], raw_tail: bytes = b"") -> Path:
    path.write_bytes(("\n".join(lines) + "\n").encode("utf-8") + raw_tail)
    return path


def reference_ids(path: Path) -> list[tuple[Any, ...]]:
    """What the field-by-field path makes of each non-blank line, decoded as text."""
    parser = RecordParser(str(path), FIELDS, cells_are_text=False)
    out = []
    for number, text in enumerate(path.read_text("utf-8-sig").splitlines(), start=1):
        if text.strip():
            s = parser.parse({**json.loads(text), "user_input": None}, number - 1, number)
            out.append((s.id, s.retrieved_context_ids, s.reference_context_ids))
    return out


def read(path: Path) -> list[tuple[Any, ...]]:
    return [(s.id, s.retrieved_context_ids, s.reference_context_ids)
            for s in JsonlDataset(str(path)).read_samples()]


def test_lines_read_from_bytes_are_the_text_path_samples(tmp_path: Path) -> None:
    path = write(tmp_path / "d.jsonl", LINES)
    assert read(path) == reference_ids(path)
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert read(bom) == reference_ids(path)


def expected_error(line: bytes) -> str:
    """The line's error as Python's own decoders place it (the reference)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        return (f"not valid UTF-8 (byte 0x{line[e.start]:02x} at column {e.start + 1}); "
                "save the file as UTF-8")
    try:
        json.loads(text)
    except json.JSONDecodeError as e:
        return f"not valid JSON ({e.msg} at column {e.colno})"
    return "field 'id': duplicate id 'q1' (first used on line 1)"


@pytest.mark.parametrize("tail", [
    b'{"id": "q9", "retrieved_context_ids": ["\xff"]}',
    b'{"id": "q9", "retrieved_context_ids": ["\xed\xa0\x80"]}',
    b'{"id": "q9", "retrieved_context_ids": ["d1"]} x',
    b'{"id": "q9", "retrieved_context_ids": ["d1"],}',
    b'{"id": "q1", "retrieved_context_ids": ["d1"], "reference_context_ids": ["d1"]}',
])
def test_a_bad_line_after_the_first_is_named_as_before(tmp_path: Path, tail: bytes) -> None:
    path = write(tmp_path / "d.jsonl", LINES, tail + b"\n")
    with pytest.raises(DatasetError) as caught:
        read(path)
    assert str(caught.value) == f"{path}:8: {expected_error(tail)}"
