"""Issue 31, class 11, in the scoring loop: a slow search hands on what it found about every
second (``retrieved``), and what it found before a search that failed or was interrupted;
the line of a run that stops counts the rows it kept and names the rows file
(``streamed``/``kept``) and what was running (``running``, ``stopped_line``)."""

from __future__ import annotations

import dataclasses
import io
import json
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.cli.signals import running, stopped_line
from harness.core.errors import ComponentFailed, Interrupted, JudgeUnavailable
from harness.core.types import Corpus, RagSample, SampleResult
from harness.run.loop import evaluate, retrieved
from harness.run.outputs import streamed
from harness.run.outputs.rows import kept
from harness.run.timing import Timed


class Search:
    """A retriever taking ``delay`` seconds per call; the call numbered ``fail_at`` raises
    ``error`` (counted from 1)."""

    needs_corpus, searches = False, True

    def __init__(self, delay: float = 0.0, fail_at: int = 0,
                 error: BaseException | None = None) -> None:
        self.delay, self.fail_at, self.error, self.calls = delay, fail_at, error, 0

    def prepare(self, corpus: Corpus | None) -> None:
        pass

    def retrieve_batch(self, samples: Sequence[RagSample]) -> list[RagSample]:
        self.calls += 1
        if self.calls == self.fail_at:
            raise self.error or ValueError("the index went away")
        time.sleep(self.delay)
        return [dataclasses.replace(s, retrieved_contexts=("a", "b"),
                                    retrieved_context_ids=("d1", "d2")) for s in samples]

    def describe(self) -> dict[str, str]:
        return {}


def samples(n: int) -> list[RagSample]:
    return [RagSample(id=f"q{i:02d}", user_input=f"question {i}", reference_context_ids=("d2",))
            for i in range(1, n + 1)]


def test_a_slow_search_hands_on_what_it_found_every_interval_and_a_fast_one_whole_batches(
) -> None:
    slow = Timed(Search(delay=0.02), per_call=1)
    parts = list(retrieved(slow, [samples(20)], 1, every=0.1))
    assert len(parts) >= 3  # 20 x 20 ms = 0.4 s: about every 5 samples
    assert all(parts) and [s.id for p in parts for s in p] == [s.id for s in samples(20)]
    assert len(slow.latencies) == 20  # still one timed call per question
    fast = Timed(Search(), per_call=1)
    assert [len(p) for p in retrieved(fast, [samples(20), samples(7)], 1, every=10)] == [20, 7]
    untimed = Search()  # not searched per call (``precomputed``): the batch as it is
    assert [len(p) for p in retrieved(untimed, [samples(5)], every=0)] == [5]
    assert untimed.calls == 1


@pytest.mark.parametrize("error", [ValueError("the index went away"), Interrupted(15)])
def test_what_was_found_before_a_failed_or_interrupted_search_is_handed_on_first(
        error: BaseException) -> None:
    timed = Timed(Search(fail_at=11, error=error), per_call=1)
    found = retrieved(timed, [samples(30)], 1, every=60)
    assert [s.id for s in next(found)] == [f"q{i:02d}" for i in range(1, 11)]
    with pytest.raises(ComponentFailed if isinstance(error, ValueError) else Interrupted):
        next(found)


class IdMetric:
    """Scores 1.0 per sample; ``stop_at``: the batch (counted from 1) that is interrupted."""

    name, requires, prevalidate = "ids", frozenset[str](), False

    def __init__(self, stop_at: int = 0) -> None:
        self.stop_at, self.batches = stop_at, 0

    def score_batch(self, batch: Sequence[RagSample], on_done: object = None
                    ) -> list[SampleResult]:
        self.batches += 1
        if self.batches == self.stop_at:
            raise Interrupted(2)
        return [SampleResult(s.id, 1.0, None, None, {}) for s in batch]


def test_rows_scored_before_a_failing_search_are_written_before_the_failure() -> None:
    sink = io.StringIO()
    timed = Timed(Search(fail_at=11), per_call=1)
    with pytest.raises(ComponentFailed):
        evaluate(retrieved(timed, [samples(30)], 1, every=60), IdMetric(), sink)
    rows = [json.loads(line) for line in sink.getvalue().splitlines()]
    assert [(r["id"], r["score"]) for r in rows] == [(f"q{i:02d}", 1.0) for i in range(1, 11)]


def test_running_names_the_retriever_or_the_metric_the_signal_stopped() -> None:
    timed = Timed(Search(fail_at=3, error=Interrupted(2)), per_call=1)
    with pytest.raises(Interrupted) as e:
        evaluate(retrieved(timed, [samples(5)], 1, every=60), IdMetric(), io.StringIO())
    assert running(e.value) == f"retriever {__name__}.Search"
    with pytest.raises(Interrupted) as e:
        evaluate([samples(2), samples(2)], IdMetric(stop_at=2), io.StringIO())
    assert running(e.value) == "metric ids"
    assert running(Interrupted(2)) is None  # raised nowhere we know


def write_rows(path: Path, n: int) -> None:
    path.write_text("".join(f'{{"id": "q{i}"}}\n' for i in range(n)), "utf-8")


@pytest.mark.parametrize(("error", "n", "says"), [
    (ComponentFailed("retriever x.Y: search() raised ValueError: gone"), 10,
     "retriever x.Y: search() raised ValueError: gone; 10 rows scored before it are kept in "),
    (JudgeUnavailable("the judge at http://127.0.0.1:9 stopped answering"), 1,
     "the judge at http://127.0.0.1:9 stopped answering; 1 row scored before it is kept in "),
    (ComponentFailed("metric m: score_batch() raised KeyError: 'x'"), 0,
     "metric m: score_batch() raised KeyError: 'x'; 0 rows scored before it are kept in "),
])
def test_a_run_that_stops_on_a_failure_says_how_many_rows_it_kept_and_where(
        tmp_path: Path, error: Exception, n: int, says: str) -> None:
    rows = tmp_path / "samples.jsonl"
    with pytest.raises(type(error)) as e, streamed(rows) as partial:
        write_rows(partial, n)
        raise error
    assert str(e.value) == says + str(tmp_path / "samples.jsonl.partial")


def test_kept_counts_whole_rows_only(tmp_path: Path) -> None:
    partial = tmp_path / "samples.jsonl.partial"
    partial.write_bytes(b'{"id": "a"}\n{"id": "b"}\n{"id": "c", "sco')  # cut by a full disk
    assert kept(partial) == f"2 rows scored before it are kept in {partial}"


@pytest.mark.parametrize(("run", "tail"), [
    (None, ""),  # stopped before the tracked run began
    ({"backend": "none", "judged": False}, ""),
    ({"backend": "mlflow", "judged": False}, "; the MLflow run is marked KILLED"),
    ({"backend": "mlflow", "judged": True}, "; the MLflow run is marked KILLED; the judge's "
     "verdicts so far are in its cache, so rerunning resumes"),
])
def test_the_interrupted_line_names_the_tracked_run_and_the_cache_only_when_there_are_some(
        tmp_path: Path, run: dict[str, object] | None, tail: str) -> None:
    write_rows(tmp_path / "samples.jsonl.partial", 3)
    error = Interrupted(15)
    if run is not None:
        error.stopped_run = run  # type: ignore[attr-defined]
    assert stopped_line(error, tmp_path) == (
        f"interrupted (signal 15): 3 rows scored before it are kept in "
        f"{tmp_path / 'samples.jsonl.partial'}{tail}")


def test_the_interrupted_line_of_a_run_with_no_rows_or_all_rows(tmp_path: Path) -> None:
    assert stopped_line(KeyboardInterrupt(), tmp_path) == (
        f"interrupted (signal 2): no row was scored; nothing is kept in {tmp_path}")
    write_rows(tmp_path / "samples.jsonl", 4)  # stopped while the summary was written
    assert stopped_line(Interrupted(1), tmp_path) == (
        f"interrupted (signal 1): every row was scored and is in {tmp_path / 'samples.jsonl'}")
