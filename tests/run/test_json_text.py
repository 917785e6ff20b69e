"""JSON outputs never hold bare ``NaN`` or ``Infinity``: strict readers (``jq``, browsers'
``JSON.parse``, Go, Rust) refuse them. summary.json, compare's table.json and pareto.json
all go through ``json_text``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from harness.run.outputs.files import NON_FINITE, json_text, write_json


def strict(text: str) -> object:
    """Parse as a strict reader would: NaN, Infinity and -Infinity are errors."""
    def refuse(name: str) -> object:
        raise ValueError(f"bare {name}")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_value_is_null_and_listed(bad: float) -> None:
    data = {"mean": 0.5, "test": {"p_value": bad, "ci": [0.1, bad]}, "rows": [{"d": bad}]}
    out = strict(json_text(data))
    assert out == {"mean": 0.5, "test": {"p_value": None, "ci": [0.1, None]},
                   "rows": [{"d": None}],
                   NON_FINITE: ["test.p_value", "test.ci[1]", "rows[0].d"]}


def test_finite_values_are_kept_as_written() -> None:
    data = {"a": 0.1 + 0.2, "b": 1e-300, "c": -0.0, "n": 3, "s": "NaN"}
    assert strict(json_text(data)) == data
    assert NON_FINITE not in json_text(data)


def test_write_json_writes_the_same_text(tmp_path: Path) -> None:
    data = {"x": math.nan}
    path = write_json(tmp_path / "s.json", data)
    assert path.read_text("utf-8") == json_text(data)
    assert strict(path.read_text("utf-8")) == {"x": None, NON_FINITE: ["x"]}


def test_compare_and_pareto_write_through_json_text() -> None:
    """The two compare writers call json_text (a bare json.dumps there wrote NaN)."""
    root = Path(__file__).resolve().parents[2] / "harness" / "compare"
    for name in ("core.py", "pareto.py"):
        text = (root / name).read_text("utf-8")
        assert "json_text(" in text and "json.dumps(" not in text, name
