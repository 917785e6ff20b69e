"""``run.batch_size=null`` (the default) takes the metric's own batch size: the id variants
128 (a batch that stays in the CPU's cache), any other 1024; a number set is used as is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.config.build import build
from harness.config.compose import composed
from harness.run.plan import plan


def sizes(tmp_path: Path, *args: str) -> list[int]:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "retrieved_context_ids": ["a", "b"],
                                        "reference_context_ids": ["a"], "user_input": "q",
                                        "retrieved_contexts": ["x", "y"],
                                        "reference_contexts": ["x"]}) + "\n"
                            for i in range(1300)), encoding="utf-8")
    parts = build(composed(["dataset=jsonl", f"dataset.path={data}", "tracking=none", *args]))
    batches, count = plan(parts)
    found = [len(b) for b in batches]
    assert sum(found) == count == 1300
    return found


@pytest.mark.parametrize(("args", "expected"), [
    (("metric=id_based",), [128] * 10 + [20]),
    (("metric=id_ranked",), [128] * 10 + [20]),
    (("metric=non_llm",), [1024, 276]),
    (("metric=id_based", "run.batch_size=1024"), [1024, 276]),
    (("metric=non_llm", "run.batch_size=500"), [500, 500, 300]),
])
def test_the_batch_size_is_the_metrics_unless_set(tmp_path: Path, args: tuple[str, ...],
                                                  expected: list[int]) -> None:
    assert sizes(tmp_path, *args) == expected
