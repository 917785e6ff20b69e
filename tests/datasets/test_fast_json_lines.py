"""Dataset lines are decoded by msgspec first (about 3x faster) and by ``json`` where msgspec
refuses: every line gives what ``json.loads`` gives (the reference), value or error line."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from harness.core.errors import DatasetError
from harness.datasets.reading import load_json

LINES = [
    '{"a":1,"a":2}', '{"id":"q1","ids":["d1","d2"]}', '{"x":123456789012345678901234567890}',
    '{"x":-123456789012345678901234567890}', '{"x":1.0000000000000002}', '{"x":-0.0}',
    '{"x":5e-324}', '{"x":1e308}', '{"x":"\\ud800"}', '{"x":"\\ud83d\\ude00"}', '{"x":NaN}',
    '{"x":Infinity}', '{"x":-Infinity}', '{"x":1e400}', ' {"a": 1} ', '{"x":"\\u0000"}',
    '{"x":"é日本😀"}', '{"x":"\\u2028"}', '{"x":[]}', '{"x":{}}', '[1,2]', '"text"', '3',
    'null', '{"x":0.1}', '{"x":1E5}', '{"x":1e-7}', '{"x":"\\"q\\\\"}',
]
BAD = ['{"x":"a\tb"}', '\ufeff{"a":1}', '[1,]', '{"x":}', '{"x":1} x', '', '{"x":01}',
       '{"x":"\\q"}', "{'x':1}", '[' * 5000 + ']' * 5000, '{"x":' + '9' * 5000 + '}']


def same(a: Any, b: Any) -> bool:
    """Equal, NaN included, with the same types (1 is not 1.0, -0.0 is not 0.0)."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) ==
                                                      math.copysign(1, b))
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


@pytest.mark.parametrize("line", LINES)
def test_a_line_is_what_json_reads(line: str) -> None:
    assert same(load_json(line, Path("d.jsonl"), 3), json.loads(line))


@pytest.mark.parametrize("line", BAD)
def test_a_bad_line_is_one_error_at_its_line(line: str) -> None:
    with pytest.raises((ValueError, RecursionError)):
        json.loads(line)  # the reference refuses it too
    with pytest.raises(DatasetError) as caught:
        load_json(line, Path("d.jsonl"), 7)
    assert str(caught.value).startswith("d.jsonl:7: not valid JSON (")


def test_random_floats_and_ints_read_as_json_reads_them() -> None:
    rng = random.Random(34)
    values = [rng.uniform(-1e6, 1e6) for _ in range(2000)]
    values += [rng.random() * 10 ** rng.randint(-320, 308) for _ in range(2000)]
    values += [rng.randint(-2**80, 2**80) for _ in range(1000)]
    for value in values:
        line = json.dumps({"v": value, "r": repr(value)})
        assert same(load_json(line, Path("d.jsonl")), json.loads(line)), line
