"""The rows' JSON (``json_line``, ``json_lines``) is byte for byte what
``json.dumps(row, ensure_ascii=False, separators=(",", ":"))`` writes (compact since issue
34), whichever encoder wrote it (msgspec where its text is json's, ``json`` otherwise)."""

from __future__ import annotations

import json
import math
import random
import struct
from typing import Any

import pytest

from harness.run.outputs import json_line, json_lines


def _reference(row: Any) -> str:
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"))


def _floats(n: int) -> list[float]:
    rng = random.Random(34)
    found = [0.1 + 0.2, 1e-10, 1e-5, 1e-4, 1.5e-7, 1e15, 1e16, 1e22, 5e-324, -0.0, 1 / 3,
             1.7976931348623157e308, 9.999999999999999e-05, 123456789012345680.0]
    while len(found) < n:
        bits = struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]
        for v in (bits, rng.random(), rng.random() * 10 ** rng.randint(-20, 25)):
            if math.isfinite(v):
                found.append(v)
    return found


def test_floats_are_written_as_repr_writes_them() -> None:
    values = _floats(30_000)
    rows = []
    for start in range(0, len(values), 10):
        row = {"id": "q", "score": values[start], "similarities": values[start:start + 10]}
        assert json_line(row) == _reference(row)
        rows.append(row)
    for start in range(0, len(rows), 128):  # whole batches, one encoding call each
        batch = rows[start:start + 128]
        assert json_lines(batch) == "".join(_reference(r) + "\n" for r in batch)


@pytest.mark.parametrize("row", [
    {"id": "é日本😀", "chunks": [{"id": 'd"q"', "verdict": 1}, {"id": "a\\b", "verdict": 0}]},
    {"id": "tab\tz\x7f\x00\x1f", "error": None, "verdicts": [], "details": {}},
    {"id": "x1e5", "n": [1, -2**63, 2**63 - 1, 2**64 + 1, 10**30, True, False, None]},
    {"id": "s", "reasons": ["a, b: c", '{"k": [1, 2]}', ""], "score": 0.00012},
    {1: "an int key", 1.5: "a float key", "nested": [[], {}, [[{}]], {"x": {"y": []}}]},
    {"id": "t", "ids": ("d1", "d2")},
    # text that looks like a number msgspec writes otherwise, inside strings and keys
    {"id": "a,1e5", "k:2e-3": "[3e+4", "x": ",0.00001", "hex": ["3e7f", "0e12", "ab1e5"]},
    {"id": "n", "v": [1e-05, -0.00002, 2.5e-300, 1e16, -1e16, 0.0001, 12.0e3]},
])
def test_rows_match_json_dumps(row: dict[Any, Any]) -> None:
    assert json_line(row) == _reference(row)
    assert json_lines([row, {"id": "next", "score": 0.5}]) == (
        _reference(row) + "\n" + _reference({"id": "next", "score": 0.5}) + "\n")


def test_a_batch_with_one_row_json_must_write_keeps_every_other_row() -> None:
    rows = [{"id": str(i), "score": i / 7} for i in range(5)]
    rows[2]["score"] = 3e-06  # msgspec would write 0.000003
    rows[3]["reason"] = "lone \ud800 surrogate"
    text = json_lines(rows)
    assert text.splitlines() == [json_line(r) for r in rows]
    assert '"score":3e-06' in text and "lone \ufffd surrogate" in text
    assert json_lines([]) == ""


def test_line_breaks_are_escaped_and_lone_surrogates_replaced() -> None:
    row = {"id": "x\u2028y\u2029z\x85", "reason": "a\ud800b"}
    line = json_line(row)
    assert line == '{"id":"x\\u2028y\\u2029z\\u0085","reason":"a\ufffdb"}'
    assert json_lines([row, row]) == (line + "\n") * 2
    assert len(line.splitlines()) == 1


def test_id_chunks_are_written_as_the_dicts_they_stand_for() -> None:
    from harness.run.outputs.rows import IdChunk, plain_chunks

    for extra in ({}, {"tiny": 1e-05}, {"reason": "lone \ud800"}):  # msgspec, then json
        compact = {"id": "q", "chunks": [IdChunk("d1", 1), IdChunk("é", 0)], **extra}
        plain = {"id": "q", "chunks": [{"id": "d1", "verdict": 1}, {"id": "é", "verdict": 0}],
                 **extra}
        assert json_line(compact) == json_line(plain)
        assert json_lines([compact, plain]) == (json_line(plain) + "\n") * 2
        assert plain_chunks(compact) == plain and compact == plain  # changed in place
