"""The rows' JSON (``json_line``) is byte for byte what ``json.dumps(row, ensure_ascii=False)``
writes, whichever encoder wrote it (msgspec where installed, ``json`` otherwise)."""

from __future__ import annotations

import json
import math
import random
import struct
from typing import Any

import pytest

from harness.run.outputs import json_line


def _reference(row: Any) -> str:
    return json.dumps(row, ensure_ascii=False)


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
    for start in range(0, len(values), 10):
        row = {"id": "q", "score": values[start], "similarities": values[start:start + 10]}
        assert json_line(row) == _reference(row)


@pytest.mark.parametrize("row", [
    {"id": "é日本😀", "chunks": [{"id": 'd"q"', "verdict": 1}, {"id": "a\\b", "verdict": 0}]},
    {"id": "tab\tz\x7f\x00\x1f", "error": None, "verdicts": [], "details": {}},
    {"id": "x1e5", "n": [1, -2**63, 2**63 - 1, 2**64 + 1, 10**30, True, False, None]},
    {"id": "s", "reasons": ["a, b: c", '{"k": [1, 2]}', ""], "score": 0.00012},
    {1: "an int key", 1.5: "a float key", "nested": [[], {}, [[{}]], {"x": {"y": []}}]},
    {"id": "t", "ids": ("d1", "d2")},
])
def test_rows_match_json_dumps(row: dict[Any, Any]) -> None:
    assert json_line(row) == _reference(row)


def test_line_breaks_are_escaped_and_lone_surrogates_replaced() -> None:
    row = {"id": "x\u2028y\u2029z\x85", "reason": "a\ud800b"}
    line = json_line(row)
    assert line == '{"id": "x\\u2028y\\u2029z\\u0085", "reason": "a\ufffdb"}'
    assert len(line.splitlines()) == 1
