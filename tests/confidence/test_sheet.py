"""The labelling sheet: a seeded uniform draw from a finished run, written as CSV and JSON
lines that the labels reader reads back as they are, and the draw recorded beside them."""

from __future__ import annotations

import csv
import json
from collections import Counter

import pytest
from scipy.stats import binom

from harness.confidence.labels import read_labels
from harness.confidence.match import match, run_sample
from harness.confidence.ppi import NOT_DRAWN
from harness.confidence.sheet import (
    COLUMNS,
    draw,
    drawn_as_recorded,
    label_sheet,
    read_draw,
    run_rows,
)
from harness.core.errors import ConfigError, DatasetError

TEXTS = ["Paris, \"the\" capital", "line\u2028separated\ntext", "x" * 300 + "…", "plain"]


def _run(folder, n=12):
    folder.mkdir(exist_ok=True)
    rows = []
    for i in range(n):
        chunks = [{"id": f"d{i}-{r}" if i % 4 else None, "text": TEXTS[(i + r) % 4],
                   "verdict": r % 2} for r in range(1 + i % 3)]
        rows.append({"id": f"q{i:02d}", "score": 0.5, "verdicts": [c["verdict"] for c in chunks],
                     "question": f"question {i}?", "chunks": chunks, "reference": f"ref {i}"})
    rows.append({"id": "empty", "score": None, "verdicts": None, "chunks": []})
    (folder / "samples.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return rows


def test_the_sheet_holds_every_chunk_of_the_drawn_samples(tmp_path):
    rows = _run(tmp_path / "run")
    paths = label_sheet(tmp_path / "run", 5, 7, tmp_path / "sheet")
    record = json.loads(paths["draw"].read_text("utf-8"))
    assert (record["seed"], record["n"], record["population"]) == (7, 5, 12)
    assert len(set(record["drawn"])) == 5 and "empty" not in record["drawn"]
    by_id = {r["id"]: r for r in rows}
    with open(paths["csv"], encoding="utf-8-sig", newline="") as f:
        table = list(csv.DictReader(f))
    assert list(table[0]) == list(COLUMNS)
    want = [(k, str(rank), c["id"] or "", c["text"]) for k in sorted(record["drawn"])
            for rank, c in enumerate(by_id[k]["chunks"], start=1)]
    assert [(t["id"], t["rank"], t["context_id"], t["context"]) for t in table] == want
    assert {t["relevant"] for t in table} == {""}
    assert record["chunks"] == len(want)
    assert record["texts_cut"] == sum(t["context"].endswith("…") for t in table)
    jsonl = [json.loads(line) for line in paths["jsonl"].read_text("utf-8").splitlines()]
    assert [(j["id"], j["rank"], j["context"]) for j in jsonl] == [
        (k, int(r), t) for k, r, _, t in want]
    assert all(j["relevant"] is None for j in jsonl)


@pytest.mark.parametrize("kind", ["csv", "jsonl"])
def test_the_filled_sheet_reads_back_as_it_is(tmp_path, kind):
    rows = _run(tmp_path / "run")
    paths = label_sheet(tmp_path / "run", 6, 3, tmp_path / "sheet")
    empty = read_labels(paths[kind])
    assert empty.labels == () and empty.blank == json.loads(paths["draw"].read_text())["chunks"]
    if kind == "csv":  # a labeller types 1 or 0 in the last column, as a spreadsheet saves
        with open(paths[kind], encoding="utf-8-sig", newline="") as f:
            table = list(csv.DictReader(f))
        with open(paths[kind], "w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, COLUMNS)
            writer.writeheader()
            writer.writerows({**t, "relevant": i % 2} for i, t in enumerate(table))
    else:
        lines = paths[kind].read_text("utf-8").split("\n")[:-1]
        paths[kind].write_text("".join(json.dumps({**json.loads(line), "relevant": i % 2}) + "\n"
                                       for i, line in enumerate(lines)), encoding="utf-8")
    got = match(read_labels(paths[kind]), [run_sample(r) for r in rows])
    drawn = json.loads(paths["draw"].read_text())["drawn"]
    assert sorted(got.verdicts) == sorted(drawn)
    assert {"q04", "q08"} <= set(drawn)  # chunks without ids: matched by their texts
    assert got.unknown_chunks == 0 and got.partial_samples == 0
    assert drawn_as_recorded(list(got.verdicts), read_draw(paths[kind])) == (True, None)


def test_same_seed_same_draw_another_seed_another(tmp_path):
    _run(tmp_path / "run")
    a = label_sheet(tmp_path / "run", 4, 1, tmp_path / "a")["draw"].read_text()
    b = label_sheet(tmp_path / "run", 4, 1, tmp_path / "b")["draw"].read_text()
    c = label_sheet(tmp_path / "run", 4, 2, tmp_path / "c")["draw"].read_text()
    assert json.loads(a)["drawn"] == json.loads(b)["drawn"] != json.loads(c)["drawn"]


def test_the_draw_is_uniform():
    ids = [f"s{i}" for i in range(10)]
    counts = Counter(k for seed in range(2000) for k in draw(ids, 3, seed))
    lo, hi = binom.ppf([0.0005, 0.9995], 2000, 0.3)  # each id is drawn with p = 3/10
    assert all(lo <= counts[k] <= hi for k in ids), counts


def test_refusals(tmp_path):
    _run(tmp_path / "run", n=3)
    with pytest.raises(ConfigError, match="5 samples asked for, but the run has 3"):
        label_sheet(tmp_path / "run", 5, 0, tmp_path / "s")
    with pytest.raises(ConfigError, match="expected a number of samples from 1, got 0"):
        label_sheet(tmp_path / "run", 0, 0, tmp_path / "s")
    label_sheet(tmp_path / "run", 2, 0, tmp_path / "s")
    with pytest.raises(ConfigError, match=r"labels.csv exists \(a sheet may already be filled"):
        label_sheet(tmp_path / "run", 2, 0, tmp_path / "s")
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "samples.jsonl.partial").write_text("{}\n")
    with pytest.raises(DatasetError, match="the run did not finish"):
        list(run_rows(tmp_path / "half"))
    (tmp_path / "half" / "samples.jsonl").write_text('{"id": "a"}\n[1]\n')
    with pytest.raises(DatasetError, match=r"samples.jsonl:2: field 'id': expected a row"):
        list(run_rows(tmp_path / "half"))


def test_labels_not_drawn_by_the_sheet_carry_a_note(tmp_path):
    record = {"seed": 4, "drawn": ["a", "b", "c"]}
    assert drawn_as_recorded(["a", "b"], None) == (False, NOT_DRAWN)
    flag, note = drawn_as_recorded(["a", "x"], record)
    assert flag is False and note.startswith("1 labelled sample(s) were not in the seeded draw")
    flag, note = drawn_as_recorded(["a", "b"], record)
    assert flag is False and note.startswith("2 of the 3 drawn samples are fully labelled")
    assert read_draw(tmp_path / "labels.csv") is None
    (tmp_path / "draw.json").write_text("[1, 2]")
    assert read_draw(tmp_path / "labels.csv") is None
