"""The labelling sheet in a spreadsheet: a cell a spreadsheet would run as a formula gets a
leading ``'`` in the CSV (OWASP's advice on CSV injection), the JSON lines keep the data as
it is, and the labels reader gives every cell back as it was, from the CSV as written, as
Python's csv module writes it back, and as LibreOffice Calc saves it."""

from __future__ import annotations

import csv
import itertools
import json
import random
import shutil
from pathlib import Path

import pytest

from harness.confidence.labels import escape_cell, read_labels, unescape_cell
from harness.confidence.match import match, run_sample
from harness.confidence.sheet import label_sheet

DATA = Path(__file__).parent / "data" / "spreadsheet_sheet"
#: What a spreadsheet may run, by OWASP's list (= + - @ tab CR), after white space too, the
#: full-width forms, and LF (a leading CR comes back from LibreOffice as LF)
LIVE = ["=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx", "\nx", "  =x", " \t@x", "\u3000=x",
        "\uff1dx", "\uff0bx", "\uff0dx", "\uff20x", '=HYPERLINK("http://e.x","y")',
        "=cmd|' /C calc'!A0", "-", "="]
#: Harmless: kept as they are
PLAIN = ["plain", "a=b", "x-1", "", " x", "x'", "1.5", "d-1", "é=", "\u3000x", "#=1"]


@pytest.mark.parametrize("text", LIVE)
def test_a_cell_a_spreadsheet_would_run_gets_a_leading_quote(text):
    assert escape_cell(text) == "'" + text
    assert unescape_cell(escape_cell(text)) == text


@pytest.mark.parametrize("text", PLAIN)
def test_a_harmless_cell_is_kept_as_it_is(text):
    assert escape_cell(text) == text
    assert unescape_cell(text) == text


@pytest.mark.parametrize(("text", "cell"), [("'x", "''x"), ("''x", "'''x"), ("'", "''"),
                                            ("'=1", "''=1")])
def test_a_genuine_leading_quote_is_doubled_so_that_it_comes_back(text, cell):
    assert escape_cell(text) == cell
    assert unescape_cell(cell) == text


def test_every_text_comes_back_and_none_is_left_live():
    """Round trip over every text of up to three characters from an alphabet of the
    characters that matter, and over 5,000 seeded random longer ones."""
    alphabet = ["=", "+", "-", "@", "\t", "\r", "\n", " ", "'", "a", "1", "\uff1d", "\u3000"]
    texts = ["".join(t) for k in range(4) for t in itertools.product(alphabet, repeat=k)]
    rng = random.Random(5)
    texts += ["".join(rng.choices(alphabet, k=rng.randint(4, 9))) for _ in range(5000)]
    for text in texts:
        cell = escape_cell(text)
        assert unescape_cell(cell) == text, repr(text)
        # what a spreadsheet sees first is the quote, or no formula start
        assert cell.startswith("'") or not (
            cell[:1] in "\t\r\n" and cell or cell.lstrip().startswith(
                ("=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20"))), repr(text)


def test_a_cell_a_spreadsheet_saved_without_its_quote_reads_as_it_is():
    # Calc or Excel may drop the quote that marks a text: the text is then what remains
    assert unescape_cell("=1+1") == "=1+1"
    # a quote the labeller typed before a harmless text is theirs: kept
    assert unescape_cell("'hello") == "'hello"


def _run(tmp_path: Path) -> tuple[Path, list[dict]]:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(DATA / "samples.jsonl", run / "samples.jsonl")
    rows = [json.loads(x) for x in (run / "samples.jsonl").read_text("utf-8").splitlines()]
    return run, rows


def test_the_sheet_is_written_safe_and_its_json_lines_keep_the_data(tmp_path):
    run, rows = _run(tmp_path)
    paths = label_sheet(run, 10, 0, tmp_path / "sheet")
    # the sheet LibreOffice was given (data/spreadsheet_sheet/make.py here): still ours
    assert paths["csv"].read_bytes() == (DATA / "labels.csv").read_bytes()
    with open(paths["csv"], encoding="utf-8-sig", newline="") as f:
        table = list(csv.reader(f))
    cells = [c for row in table[1:] for c in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d")]
    assert "'=1+1" in cells and "'=cmd|' /C calc'!A0" in cells and "'''q-two" in cells
    lines = [json.loads(x) for x in paths["jsonl"].read_text("utf-8").splitlines()]
    want = [(r["id"], c["id"], c["text"], r["question"]) for r in rows for c in r["chunks"]]
    assert [(x["id"], x["context_id"], x["context"], x["question"]) for x in lines] == want


@pytest.mark.parametrize("name", ["filled.csv", "libreoffice.csv"])
def test_a_filled_sheet_matches_the_run_again(tmp_path, name):
    """As Python's csv writes it back and as LibreOffice Calc 7.4 saved it: every sample's
    id and chunk (by id, or by text where the chunk has none) found again."""
    _, rows = _run(tmp_path)
    labels = read_labels(DATA / name)
    got = match(labels, [run_sample(r) for r in rows])
    assert got.counts() == {"label_rows": 20, "blank_rows": 0, "matched_rows": 20,
                            "unknown_samples": 0, "unknown_chunks": 0,
                            "partially_labelled_samples": 0, "labelled_samples": 10}
    assert got.verdicts == {r["id"]: (1, 0) for r in rows}
    by_text = [lb for lb in labels.labels if not lb.context_id]
    assert {lb.context for lb in by_text} >= {"+1 555 0100", "  =spaced formula",
                                              "\uff1dfull-width equals"}
    assert {lb.context_id for lb in labels.labels} >= {"-d0-0", "-d6-1"}
