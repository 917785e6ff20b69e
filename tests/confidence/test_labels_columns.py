"""The columns of a labels file: a misspelt or renamed column is refused with a did-you-mean
(every column the reader knows), a file with no verdict, id or chunk column is refused, the
CSV separator is told from the header, and the encodings spreadsheets save in are read or
named."""

from __future__ import annotations

import json

import pytest

from harness.confidence.labels import read_labels, sniff
from harness.core.errors import DatasetError

GOOD = {"id": "q1", "context_id": "d1", "rank": "1", "relevant": "1"}
MEANT = "is not a column the labels file reads; did you mean"


def write_csv(path, header, rows, delimiter=","):
    lines = [delimiter.join(header)] + [delimiter.join(r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def refused(path) -> str:
    with pytest.raises(DatasetError) as e:
        read_labels(path)
    message = str(e.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(("given", "meant"), [
    ("relevance", "relevant"), ("relevent", "relevant"), ("relevnt", "relevant"),
    ("label", "relevant"), ("labels", "relevant"), ("is_relevant", "relevant"),
    ("is-relevant", "relevant"), ("Relevant", "relevant"), ("RELEVANT", "relevant"),
    ("judgement", "relevant"), ("verdict", "relevant"), ("human_label", "relevant"),
    ("grades", "grade"), ("rating", "grade"), ("Grade", "grade"),
])
def test_a_verdict_column_by_another_name_is_a_did_you_mean(tmp_path, given, meant):
    f = write_csv(tmp_path / "l.csv", ["id", "rank", given], [["q1", "1", "1"]])
    assert refused(f) == f"{f}:1: field '{given}': {MEANT} {meant!r}? (rename it)"


@pytest.mark.parametrize(("given", "meant"), [
    ("doc_id", "context_id"), ("docid", "context_id"), ("chunk_id", "context_id"),
    ("passage_id", "context_id"), ("Context ID", "context_id"), ("context-id", "context_id"),
    ("contextid", "context_id"), ("contxt_id", "context_id"),
    ("chunk", "context"), ("text", "context"), ("passage", "context"), ("contxt", "context"),
    ("position", "rank"), ("Rank", "rank"), ("ranking", "rank"),
])
def test_a_chunk_column_by_another_name_is_a_did_you_mean(tmp_path, given, meant):
    f = write_csv(tmp_path / "l.csv", ["id", given, "relevant"], [["q1", "1", "1"]])
    assert refused(f) == f"{f}:1: field '{given}': {MEANT} {meant!r}? (rename it)"


@pytest.mark.parametrize("given", ["sample_id", "query_id", "qid", "question_id", "ID", "Id",
                                   "_id"])
def test_an_id_column_by_another_name_is_a_did_you_mean(tmp_path, given):
    f = write_csv(tmp_path / "l.csv", [given, "rank", "relevant"], [["q1", "1", "1"]])
    assert refused(f) == f"{f}:1: field '{given}': {MEANT} 'id'? (rename it)"


def test_a_known_column_in_another_case_is_refused_even_beside_its_stand_in(tmp_path):
    """``Context_ID`` beside ``rank``: the labels would match by rank alone, silently."""
    f = write_csv(tmp_path / "l.csv", ["id", "rank", "Context_ID", "relevant"],
                  [["q1", "1", "d1", "1"]])
    assert refused(f) == f"{f}:1: field 'Context_ID': {MEANT} 'context_id'? (rename it)"


def test_other_columns_beside_the_known_ones_are_ignored(tmp_path):
    header = ["id", "rank", "relevant", "grader", "note", "question", "annotator", "score"]
    f = write_csv(tmp_path / "l.csv", header, [["q1", "1", "1", "ann", "x", "q?", "a", "0.3"]])
    [label] = read_labels(f).labels
    assert (label.sample_id, label.rank, label.relevant) == ("q1", 1, 1)


@pytest.mark.parametrize(("header", "field", "words"), [
    (["id", "rank", "context", "note"], "relevant",
     "missing: no 'relevant' column (nor 'grade') for the verdicts; add one and fill it in "
     "(1 relevant, 0 not)"),
    (["rank", "relevant", "note"], "id",
     "missing: no 'id' column naming the sample each row labels"),
    (["id", "relevant", "note"], "context_id",
     "missing: no column naming the chunk (context_id, rank or context)"),
])
def test_a_header_missing_a_column_is_refused_naming_its_columns(tmp_path, header, field,
                                                                 words):
    f = write_csv(tmp_path / "l.csv", header, [["x"] * len(header)])
    columns = ", ".join(repr(h) for h in header)
    assert refused(f) == f"{f}:1: field '{field}': {words}; the columns: {columns}"


@pytest.mark.parametrize(("row", "given", "meant"), [
    ({"id": "q", "rank": 1, "relevance": 1}, "relevance", "relevant"),
    ({"id": "q", "rank": 1, "is_relevant": True}, "is_relevant", "relevant"),
    ({"id": "q", "doc_id": "d", "relevant": 1}, "doc_id", "context_id"),
    ({"qid": "q", "rank": 1, "relevant": 1}, "qid", "id"),
])
def test_a_json_line_with_a_misspelt_key_is_a_did_you_mean_at_its_line(tmp_path, row, given,
                                                                       meant):
    f = tmp_path / "l.jsonl"
    f.write_text(json.dumps({"id": "ok", "rank": 1, "relevant": 0}) + "\n" + json.dumps(row)
                 + "\n", encoding="utf-8")
    assert refused(f) == f"{f}:2: field '{given}': {MEANT} {meant!r}? (rename it)"


def test_json_lines_with_no_verdict_anywhere_are_refused(tmp_path):
    f = tmp_path / "l.jsonl"
    f.write_text('{"id": "q", "rank": 1}\n{"id": "q", "rank": 2}\n', encoding="utf-8")
    assert refused(f) == (f"{f}: field 'relevant': no row has a 'relevant' (or 'grade') field: "
                          "give each labelled chunk relevant: 1 or 0")
    # a row without a verdict beside rows with one: blank, counted
    f.write_text('{"id": "q", "rank": 1}\n{"id": "q", "rank": 2, "relevant": 1}\n',
                 encoding="utf-8")
    assert read_labels(f).blank == 1


@pytest.mark.parametrize("delimiter", [",", ";", "\t", "|"])
@pytest.mark.parametrize("suffix", [".csv", ".tsv"])
def test_the_separator_is_told_from_the_header(tmp_path, delimiter, suffix):
    rows = [["q1", "1", "a, b; c | d", "1"], ["q1", "2", "plain", "0"]]
    quoted = [[f'"{c}"' if any(s in c for s in ",;|\t") else c for c in r] for r in rows]
    f = write_csv(tmp_path / f"l{suffix}", ["id", "rank", "context", "relevant"], quoted,
                  delimiter)
    got = read_labels(f).labels
    assert [(x.sample_id, x.rank, x.context, x.relevant) for x in got] == [
        ("q1", 1, "a, b; c | d", 1), ("q1", 2, "plain", 0)]


@pytest.mark.parametrize(("header", "default", "want"), [
    ("id;rank;relevant", ",", ";"),
    ("id,rank,relevant", "\t", ","),
    ("id|context|relevant", ",", "|"),
    ("id\trelevance\trank", ",", "\t"),       # known names decide, typos or not
    ('"id;x",rank,relevant', ",", ","),       # a quoted ; is not a separator
    ("note;other", ",", ";"),                 # no known name: the one that splits it
    ("single", ",", ","), ("single", "\t", "\t"),
])
def test_sniff(header, default, want):
    assert sniff(header, default) == want


def test_a_semicolon_sheet_with_a_byte_order_mark_and_crlf_reads(tmp_path):
    """As a spreadsheet in a decimal-comma locale saves CSV."""
    f = tmp_path / "l.csv"
    f.write_bytes("\ufeffid;context_id;relevant\r\nq1;d1;1\r\nq1;d2;0\r\n".encode())
    got = read_labels(f).labels
    assert [(x.sample_id, x.context_id, x.relevant) for x in got] == [("q1", "d1", 1),
                                                                     ("q1", "d2", 0)]


def test_a_second_byte_order_mark_in_the_header_is_dropped(tmp_path):
    f = tmp_path / "l.csv"
    f.write_bytes("\ufeff\ufeffid,rank,relevant\nq1,1,1\n".encode())
    assert read_labels(f).labels[0].sample_id == "q1"


@pytest.mark.parametrize(("encoding", "name"), [("utf-16", "UTF-16"), ("utf-16-be", None),
                                                ("utf-32", "UTF-32")])
def test_a_file_saved_as_utf_16_or_32_is_named_so(tmp_path, encoding, name):
    f = tmp_path / "l.csv"
    text = "id\trank\trelevant\nq1\t1\t1\n"
    f.write_bytes(("\ufeff" + text).encode("utf-16-be") if name is None
                  else text.encode(encoding))
    assert refused(f) == (f"{f}:1: is {name or 'UTF-16'} (its byte-order mark says so); save "
                          'it as UTF-8 (a spreadsheet\'s "CSV UTF-8")')


def test_a_row_of_another_width_names_the_separator_read(tmp_path):
    f = tmp_path / "l.csv"
    f.write_text("id;rank;relevant\nq1;1;1;extra\n", encoding="utf-8")
    assert refused(f) == (f"{f}:2: has 4 columns but the header has 3 (columns read as "
                          "separated by ';', from the header; a cell holding the separator "
                          "must be quoted)")
