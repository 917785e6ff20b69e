"""The compact duplicate-id check (``SeenIds``): the same answers as a dict of every id,
through moves to the compact store, hash collisions (forced by a tiny hash function) and a
file without a temporary directory; and the parser's message at the repeated line."""

import json
import random
import tempfile

import pytest

from harness.core.errors import DatasetError
from harness.datasets.fields import field_map
from harness.datasets.files import JsonlDataset
from harness.datasets.records import RecordParser
from harness.datasets.seen_ids import RECENT, SeenIds

FIELDS = field_map(None)
HASHES = {
    "builtin": hash,
    "one value": lambda s: 7,                       # every id collides with every other
    "length": len,                                  # ids of one length collide
    "low bits": lambda s: hash(s) & 0xFF,           # 256 values, negative never
    "negative": lambda s: -abs(hash(s)) - 1,
}


def oracle(ids):
    """``(line, first line or None)`` of each use, by a plain dict of every id."""
    first, out = {}, []
    for line, sample_id in ids:
        was = first.setdefault(sample_id, line)
        out.append(None if was == line else was)
    return out


@pytest.mark.parametrize("name", sorted(HASHES))
@pytest.mark.parametrize("recent", [1, 7, 50])
def test_the_same_answers_as_a_dict(name, recent):
    rng = random.Random(recent)
    # fewer uses where ids collide: each hit there reads blocks back
    count, ids = (3000, 2000) if name == "builtin" else (400, 250)
    uses = [(line, f"id{rng.randrange(ids)}") for line in range(1, count, rng.choice((1, 2)))]
    seen = SeenIds(hash_fn=HASHES[name], recent=recent, partitions=8)
    want = oracle(uses)
    got = [seen.first(sample_id, line) for line, sample_id in uses]
    assert got == want
    assert len(seen) == len({s for _, s in uses})


def test_a_hash_collision_is_not_a_duplicate():
    # "a" and "b" share a hash; "a" has moved out when "b" comes, then "a" comes again
    seen = SeenIds(hash_fn=lambda s: 42 if s in ("a", "b") else hash(s), recent=2,
                   partitions=2)
    assert seen.first("a", 1) is None
    assert seen.first("x", 2) is None               # the recent ids move out here
    assert seen.first("b", 3) is None               # same hash as a moved id: not a repeat
    assert seen.first("y", 4) is None
    assert seen.first("a", 5) == 1
    assert seen.first("b", 6) == 3
    assert seen.first("z", 7) is None


def test_the_same_line_again_is_not_a_duplicate():
    seen = SeenIds(recent=1)
    assert seen.first("a", 1) is None
    assert seen.first("a", 1) is None               # moved out, met again on its own line
    assert seen.first("a", 2) == 1


def test_without_a_temporary_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    seen = SeenIds(recent=3, partitions=4)
    for line in range(1, 20):
        assert seen.first(f"q{line}", line) is None
    assert seen.first("q4", 20) == 4


def test_ids_of_any_text_are_read_back():
    ids = ["", "é", "a\nb", "a\x00", "\u2028", "日本", "q" * 300, "𝔘"]
    seen = SeenIds(hash_fn=lambda s: 1, recent=2, partitions=1)
    for line, sample_id in enumerate(ids, 1):
        assert seen.first(sample_id, line) is None
    for line, sample_id in enumerate(ids, 1):
        assert seen.first(sample_id, 100 + line) == line


def test_the_parser_refuses_at_the_repeated_line():
    seen = SeenIds(hash_fn=lambda s: 5, recent=2, partitions=2)
    parser = RecordParser("d.jsonl", FIELDS, cells_are_text=False, seen=seen)
    for line in range(1, 6):
        assert parser.parse({"id": f"q{line}"}, line - 1, line).id == f"q{line}"
    with pytest.raises(DatasetError) as error:
        parser.parse({"id": "q2"}, 5, 6)
    assert str(error.value) == "d.jsonl:6: field 'id': duplicate id 'q2' (first used on line 2)"


def test_rows_are_named_as_rows():
    parser = RecordParser("d.json", FIELDS, cells_are_text=False, unit="row",
                          seen=SeenIds(recent=1))
    parser.parse({"id": 3}, 0, 1)
    parser.parse({"id": 4}, 1, 2)
    with pytest.raises(DatasetError, match=r"duplicate id '3' \(first used on row 1\)"):
        parser.parse({"id": 3}, 2, 3)


def test_a_file_past_the_recent_ids(tmp_path):
    """The default check, through a real file longer than ``RECENT`` ids."""
    path = tmp_path / "d.jsonl"
    lines = [json.dumps({"id": f"q{i}", "retrieved_context_ids": ["d"]}) for i in range(RECENT + 9)]
    path.write_text("\n".join([*lines, lines[2]]) + "\n", encoding="utf-8")
    samples = JsonlDataset(path).samples()
    for _ in range(RECENT + 9):
        next(samples)
    with pytest.raises(DatasetError) as error:
        next(samples)
    assert str(error.value).endswith(
        f"d.jsonl:{RECENT + 10}: field 'id': duplicate id 'q2' (first used on line 3)")
