"""The row path's shortcuts (issue 34): an id metric's chunk list is built in one step, and
a run without a report keeps no rows for it. The rows are what the spec says a row holds
(one chunk per rank: the id and the verdict at that rank), and the same with or without
the report's rows kept."""

from __future__ import annotations

import io
import json
import random

from harness.core.types import RagSample
from harness.metrics.id_based import IdContextPrecision
from harness.run.loop import evaluate, explained
from harness.run.tally import Tally


def samples(n: int, seed: int = 34) -> list[RagSample]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        pool = [f"d{j}" for j in range(8)] + ["é", "日本", "x\u2028y"]
        retrieved = tuple(rng.choice(pool) for _ in range(rng.randint(0, 10)))
        refs = tuple(rng.sample(pool, rng.randint(0, 4)))
        out.append(RagSample(id=f"q{i}", retrieved_context_ids=retrieved,
                             reference_context_ids=refs if rng.random() < 0.9 else None))
    return out


def test_id_rows_hold_one_chunk_per_rank_with_its_id_and_verdict() -> None:
    for sample in samples(300):
        retrieved = sample.retrieved_context_ids or ()
        refs = sample.reference_context_ids
        verdicts = [int(r in refs) for r in retrieved] if refs is not None else None
        row = explained({"id": sample.id, "verdicts": verdicts}, sample, 300)
        if verdicts is None:  # unscored: the ids alone
            assert row["chunks"] == [{"id": r} for r in retrieved]
        else:
            assert row["chunks"] == [{"id": r, "verdict": int(r in refs)} for r in retrieved]
            assert all(list(c) == ["id", "verdict"] for c in row["chunks"])


def test_shorter_verdicts_than_ids_still_list_every_id() -> None:
    sample = RagSample(id="s", retrieved_context_ids=("a", "b", "c"))
    row = explained({"verdicts": [1]}, sample, 300)
    assert row["chunks"] == [{"id": "a", "verdict": 1}, {"id": "b"}, {"id": "c"}]


def run(report: bool) -> tuple[str, Tally]:
    sink = io.StringIO()
    batches = [samples(700)[i : i + 256] for i in range(0, 700, 256)]
    tally = evaluate(batches, IdContextPrecision("id_based"), sink, retrieval_ks=(5, 10),
                     report=report)
    return sink.getvalue(), tally


def test_a_run_without_report_keeps_no_rows_and_writes_the_same() -> None:
    rows_on, kept = run(True)
    rows_off, bare = run(False)
    assert rows_on == rows_off
    lines = rows_on.splitlines()
    assert len(lines) == 700
    assert bare.report_rows.pick() == [] and bare.report_unscored.pick() == []
    picked = kept.report_rows.pick()
    assert len(picked) == 700 and json.loads(lines[5])["id"] == picked[5][1]["id"]
    timing = {"duration_s": 0, "samples_per_s": 0}
    assert bare.summary() | timing == kept.summary() | timing
