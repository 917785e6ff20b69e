"""A JSON-lines file declares the ``Splittable`` capability (``run.shards``): it cuts itself
into byte ranges ending at line ends, each part reads its lines as a reader of the whole file
does, and the checks that need every record run on what the parts saw. Other datasets do not
declare it and are split by sample index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.core.errors import DatasetError
from harness.datasets.beir import BeirDataset
from harness.datasets.files import CsvDataset, JsonlDataset, SampleDataset
from harness.datasets.memory import RecordsDataset
from harness.shards.plan import IndexShard, plan, shard

TINY = Path(__file__).parents[1] / "data" / "beir_tiny"


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), "utf-8")
    return path


def test_line_files_declare_the_capability_and_others_do_not(tmp_path: Path) -> None:
    rows = _write(tmp_path / "d.jsonl", ['{"id": "q", "retrieved_context_ids": ["a"]}'])
    table = tmp_path / "d.csv"
    table.write_text("id,retrieved_context_ids\nq,\"[\"\"a\"\"]\"\n", "utf-8")
    whole = JsonlDataset(rows)
    assert whole.splittable is whole
    assert SampleDataset().splittable is not None
    assert CsvDataset(table).splittable is None
    # a BEIR folder has a ``split`` setting (its qrels split), which is not the capability
    assert BeirDataset(TINY).splittable is None
    assert RecordsDataset([{"id": "q", "retrieved_context_ids": ["a"]}]).splittable is None


@pytest.mark.parametrize("count", [1, 2, 3, 7, 100])
def test_the_parts_read_the_whole_file_in_order_numbered_as_the_whole(tmp_path: Path,
                                                                      count: int) -> None:
    # 12 lines: records with and without ids, blank lines; a record without an id gets its
    # 0-based line index, so ids tell which line each sample came from
    lines = []
    for n in range(12):
        if n % 5 == 4:
            lines.append("")
        elif n % 3 == 0:
            lines.append(json.dumps({"retrieved_context_ids": ["a"]}))
        else:
            lines.append(json.dumps({"id": f"q{n}", "retrieved_context_ids": ["a"]}))
    whole = JsonlDataset(_write(tmp_path / "d.jsonl", lines))
    expected = [str(n) if n % 3 == 0 else f"q{n}" for n in range(12) if n % 5 != 4]
    spans = whole.split_spans(count, None)
    assert len(spans) == min(count, 12) and all(s.by_bytes for s in spans)
    assert [s.index for s in spans] == list(range(len(spans)))
    assert spans[0].start == 0 and spans[0].first_line == 1
    assert all(a.stop == b.start for a, b in zip(spans, spans[1:], strict=False))
    assert spans[-1].stop == (tmp_path / "d.jsonl").stat().st_size
    parts = [whole.split_part(s) for s in spans]
    assert [s.id for p in parts for s in p.samples()] == expected
    whole.check_split([p.split_seen() for p in parts])  # unique ids: nothing to say


def test_a_limit_ends_the_last_span_after_that_many_records(tmp_path: Path) -> None:
    lines = [json.dumps({"id": f"q{n}", "retrieved_context_ids": ["a"]}) for n in range(10)]
    whole = JsonlDataset(_write(tmp_path / "d.jsonl", lines))
    spans = whole.split_spans(3, 4)
    assert [s.id for span in spans for s in whole.split_part(span).samples()] == [
        "q0", "q1", "q2", "q3"]
    assert whole.split_spans(3, 0) == []


def test_shards_ask_the_capability_and_split_anything_else_by_index(tmp_path: Path) -> None:
    table = tmp_path / "d.csv"
    table.write_text("id,retrieved_context_ids\n" + "".join(
        f"q{n},\"[\"\"a\"\"]\"\n" for n in range(6)), "utf-8")
    csv = CsvDataset(table)
    spans = plan(csv, 3, None)
    assert [(s.start, s.stop, s.by_bytes) for s in spans] == [(0, 2, False), (2, 4, False),
                                                              (4, None, False)]
    parts = [shard(csv, s) for s in spans]
    assert all(isinstance(p, IndexShard) and p.split_seen() is None for p in parts)
    assert [[s.id for s in p.samples()] for p in parts] == [["q0", "q1"], ["q2", "q3"],
                                                            ["q4", "q5"]]
    rows = JsonlDataset(_write(tmp_path / "d.jsonl", [
        json.dumps({"id": f"q{n}", "retrieved_context_ids": ["a"]}) for n in range(6)]))
    assert all(s.by_bytes for s in plan(rows, 3, None))


def test_an_id_used_again_in_a_later_part_is_the_whole_files_error(tmp_path: Path) -> None:
    lines = [json.dumps({"id": f"q{i}", "retrieved_context_ids": ["a"]}) for i in range(40)]
    lines[33] = json.dumps({"id": "q4", "retrieved_context_ids": ["a"]})
    whole = JsonlDataset(_write(tmp_path / "d.jsonl", lines))
    with pytest.raises(DatasetError) as one:
        list(whole.samples())
    parts = [whole.split_part(s) for s in whole.split_spans(3, None)]
    for part in parts:
        list(part.samples())  # no part sees both
    with pytest.raises(DatasetError) as merged:
        whole.check_split([p.split_seen() for p in parts])
    assert str(merged.value) == str(one.value)
    assert "duplicate id 'q4' (first used on line 5)" in str(one.value)
    assert f"{tmp_path / 'd.jsonl'}:34:" in str(one.value)


@pytest.mark.parametrize(("column", "fails"), [("refs", False), ("nowhere", True)])
def test_a_mapped_column_need_be_in_one_part_only(tmp_path: Path, column: str,
                                                   fails: bool) -> None:
    rows = [{"id": f"q{i}", "retrieved_context_ids": ["a"]} for i in range(30)]
    rows[25]["refs"] = ["a"]  # the mapped column, in the last part's records only
    data = _write(tmp_path / "d.jsonl", [json.dumps(r) for r in rows])
    whole = JsonlDataset(data, {"reference_context_ids": column})
    parts = [whole.split_part(s) for s in whole.split_spans(3, None)]
    for part in parts:
        list(part.samples())
    seen = [p.split_seen() for p in parts]
    assert len(seen) == 3 and column in seen[0].columns.unseen  # the first part lacks it
    if not fails:
        list(whole.samples())  # one process: fine
        whole.check_split(seen)  # and merged: fine
        return
    with pytest.raises(DatasetError) as one:
        list(whole.samples())
    with pytest.raises(DatasetError) as merged:
        whole.check_split(seen)
    assert str(merged.value) == str(one.value)
    assert "column 'nowhere' (mapped by dataset.fields.reference_context_ids)" in str(
        one.value)
