"""The loop's batch work (issue 34): rows encoded a group at a time, retrieval totals added
when rows are written, older objects frozen for the garbage collector while it runs. The
rows and totals are what scoring each sample on its own gives; the collector's state is
left as the loop found it."""

from __future__ import annotations

import gc
import io
import json
import random
from collections.abc import Sequence
from typing import Any

from harness.core.types import RagSample, SampleResult
from harness.metrics.id_based import IdContextPrecision
from harness.metrics.retrieval import at_cutoffs, sample_grades
from harness.run.loop import evaluate, explained


def samples(n: int, seed: int = 7) -> list[RagSample]:
    rng = random.Random(seed)
    pool = [f"d{j}" for j in range(12)]
    out = []
    for i in range(n):
        refs = tuple(rng.sample(pool, rng.randint(1, 5)))
        grades = tuple(rng.choice([0.0, 1.0, 2.0, 3.0, 0.5]) for _ in refs)
        out.append(RagSample(id=f"q{i}", user_input=f"question {i}" if i % 3 else None,
                             retrieved_context_ids=tuple(rng.choice(pool) for _ in range(10)),
                             reference_context_ids=refs,
                             reference_context_grades=grades if i % 2 else None))
    return out


class OutOfOrder(IdContextPrecision):
    """Reports each batch's results through ``on_done`` in reverse order (as judged
    samples finish), so rows are written one at a time."""

    def score_batch(self, batch: Sequence[RagSample], on_done: Any = None) -> list[SampleResult]:
        results = [self.score_one(s) for s in batch]
        if on_done is not None:
            for index in reversed(range(len(batch))):
                on_done(index, results[index])
        return results


def test_retrieval_totals_are_each_sample_added_in_order() -> None:
    data = samples(1000)
    expected: dict[str, float] = {}
    for sample in data:  # the reference: one sample at a time, in input order
        values = at_cutoffs(sample.retrieved_context_ids or (), sample_grades(sample),
                            (3, 10, 3), 2)
        for name, value in values.items():
            expected[name] = expected.get(name, 0.0) + value
    for metric in (IdContextPrecision("id_based"), OutOfOrder("id_based")):
        sink = io.StringIO()
        batches = [data[i:i + 300] for i in range(0, len(data), 300)]
        tally = evaluate(batches, metric, sink, retrieval_ks=(3, 10, 3), min_grade=2)
        assert tally.n_retrieval == len(data)
        assert list(tally.retrieval) == list(expected)
        assert all(tally.retrieval[k].hex() == v.hex() for k, v in expected.items())
        rows = [json.loads(line) for line in sink.getvalue().splitlines()]
        assert [r["id"] for r in rows] == [s.id for s in data]
        for row, sample in zip(rows, data, strict=True):
            want = at_cutoffs(sample.retrieved_context_ids or (), sample_grades(sample),
                              (3, 10), 2)
            assert {k: row[k] for k in want} == want


def test_id_rows_list_chunks_and_the_question_as_the_general_path_does() -> None:
    metric = IdContextPrecision("id_based")
    for sample in samples(200):
        row = metric.score_one(sample).to_row()
        for chars in (0, 5, None):
            got = explained(dict(row), sample, chars)
            # the general path: a per-chunk column it does not use makes it run
            general = explained({**row, "relevance": None}, sample, chars)
            del general["relevance"]
            assert got == general and list(got) == list(general)
            if chars != 0 and sample.user_input is not None:
                assert got["question"] == sample.user_input[:chars] + (
                    "…" if chars is not None and len(sample.user_input) > chars else "")


class Watching(IdContextPrecision):
    """Notes the collector's frozen objects while it scores."""

    frozen: list[int] = []
    young: list[int] = []

    def score_batch(self, batch: Sequence[RagSample], on_done: Any = None) -> list[SampleResult]:
        self.frozen.append(gc.get_freeze_count())
        self.young.append(gc.get_threshold()[0])
        return super().score_batch(batch, on_done)


def test_older_objects_are_frozen_while_scoring_and_the_collector_left_as_found() -> None:
    data = samples(50)
    gc.unfreeze()  # (whatever an earlier test in this process left)
    gc.enable()
    metric = Watching("id_based")
    thresholds = gc.get_threshold()
    evaluate([data], metric, io.StringIO())
    assert metric.frozen[-1] > 1000  # the modules, at least
    assert metric.young[-1] == max(thresholds[0], 10_000)
    assert gc.get_freeze_count() == 0 and gc.isenabled() and gc.get_threshold() == thresholds
    kept = [object() for _ in range(10)]  # a process that froze its own objects (pre-fork)
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        evaluate([data], metric, io.StringIO())
        assert metric.frozen[-1] == frozen == gc.get_freeze_count()
        assert metric.young[-1] == thresholds[0] == gc.get_threshold()[0]
    finally:
        gc.unfreeze()
    assert kept


def test_rows_kept_in_memory_hold_plain_chunks() -> None:
    seen: list[Any] = []
    data = samples(300)
    tally = evaluate([data], IdContextPrecision("id_based"), io.StringIO(),
                     observe=lambda sample, row: seen.append(row["chunks"]))
    kept = [row for _, row in tally.report_rows.pick()]
    assert kept and seen
    for chunks in [row["chunks"] for row in kept] + seen:
        assert chunks and all(type(c) is dict and list(c) == ["id", "verdict"] for c in chunks)
