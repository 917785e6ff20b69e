"""The boundary around users' code (``harness.core.boundary``): a retriever or metric
of theirs that raises, or answers the wrong thing, ends the run in one ``error:`` line
naming it and its error, exit 2, the rows scored so far kept and the MLflow run FAILED."""

from __future__ import annotations

import io
import json
import uuid
from pathlib import Path

import pytest
from conftest import run_cli
from helpers import mlflow_runs
from helpers.cli import CliResult
from helpers.paths import TEST_DATA
from helpers.user_code import user_package

from harness.core.errors import ComponentFailed
from harness.core.types import RagSample, SampleResult
from harness.run.loop import evaluate
from harness.run.outputs import OutputError

TINY = TEST_DATA / "beir_tiny"
BEIR = ("dataset=beir", f"dataset.path={TINY}", "metric=id_ranked", "run.batch_size=1")

#: The user's retrievers: each fails in its own way (``FAIL_AT``: the search call that fails).
CODE = """
    from harness.core.types import Hit
    from harness.retrievers.search import SearchRetriever

    class Base(SearchRetriever):
        def __init__(self, fail_at: int = 3, top_k: int | None = None):
            super().__init__(top_k)
            self.fail_at, self.calls = fail_at, 0

        def search(self, queries):
            self.calls += 1
            if self.calls >= self.fail_at:
                return self.wrong(queries)
            return [[Hit("d1", "Paris is in France"), Hit("d2", "Berlin")] for _ in queries]

    class Raises(Base):
        def wrong(self, queries):
            raise ValueError("the vector store went away")

    class Leaks(Base):
        def wrong(self, queries):
            raise RuntimeError("GET https://svc:S3cretPw@127.0.0.1:9/search failed\\nline two")

    class Network(Base):
        def wrong(self, queries):
            raise ConnectionError("connection reset by peer")

    class GivesNone(Base):
        def wrong(self, queries):
            return None

    class ShortList(Base):
        def wrong(self, queries):
            return []

    class IntId(Base):
        def wrong(self, queries):
            return [[Hit(7, "seven")] for _ in queries]

    class Surrogate(Base):
        def wrong(self, queries):
            return [[Hit("c1", "Paris \\ud800 text")] for _ in queries]

    class SurrogateId(Base):
        def wrong(self, queries):
            return [[Hit("c\\udc00", "text")] for _ in queries]

    class Tuples(Base):
        def wrong(self, queries):
            return [[("d1", "text")] for _ in queries]

    class Exits(Base):
        def wrong(self, queries):
            import sys
            sys.exit(0)

    class BadIndex(Base):
        needs_corpus = True

        def index(self, corpus):
            raise KeyError("title")

    class BadDescribe(Base):
        def describe(self):
            raise AttributeError("no url")

    class Protocol:  # a Retriever of its own, not a SearchRetriever
        needs_corpus = False

        def __init__(self, mode: str = "short"):
            self.mode = mode

        def prepare(self, corpus):
            pass

        def retrieve_batch(self, samples):
            import dataclasses
            if self.mode == "short":
                return list(samples)[:-1] or []
            if self.mode == "ids":
                return [dataclasses.replace(s, retrieved_contexts=("a",),
                                            retrieved_context_ids=(1,)) for s in samples]
            return [dataclasses.replace(s, retrieved_contexts=("x\\ud83d",),
                                        retrieved_context_ids=("d1",)) for s in samples]

        def describe(self):
            return {"kind": "protocol"}
"""


@pytest.fixture
def own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A package of the user's retrievers in a folder on the import path."""
    name = user_package(tmp_path, monkeypatch, "boundary", search=CODE)
    return tmp_path, name


def run_own(own: tuple[Path, str], cls: str, *args: str, env: dict[str, str] | None = None
            ) -> CliResult:
    cwd, name = own
    return run_cli("retriever=custom", f"retriever._target_={name}.search.{cls}",
                   f"trusted_targets=[{name}.*]", *BEIR, *args, cwd=cwd, env=env)


def one_line(result: CliResult) -> str:
    """Exit 2 and exactly one ``error:`` line on stderr, no traceback; the line."""
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def partial_rows(result: CliResult) -> list[dict[str, object]]:
    text = (result.out_dir / "samples.jsonl.partial").read_text("utf-8")
    return [json.loads(x) for x in text.splitlines()]


@pytest.mark.slow
def test_search_raising_on_its_third_call_keeps_two_rows_and_fails_the_mlflow_run(
    own: tuple[Path, str], mlflow_store: str
) -> None:
    experiment = f"boundary-{uuid.uuid4().hex[:6]}"
    result = run_own(own, "Raises", f"experiment_name={experiment}",
                     env={"MLFLOW_TRACKING_URI": mlflow_store})
    line = one_line(result)
    assert f"retriever {own[1]}.search.Raises: search() raised ValueError: the vector " \
           "store went away" in line
    # queries are searched one per call: two were answered and scored, in input order
    rows = partial_rows(result)
    queries = [json.loads(x)["_id"] for x in (TINY / "queries.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == queries[:2]
    assert not (result.out_dir / "samples.jsonl").exists()
    assert not (result.out_dir / "summary.json").exists()
    [run] = mlflow_runs.runs(mlflow_store, experiment)
    assert run.info.status == "FAILED"


@pytest.mark.parametrize(
    ("cls", "fragments"),
    [
        ("GivesNone", ["search() returned None; expected a list of 1 lists of Hit"]),
        ("ShortList", ["search() returned 0 lists for 1 queries"]),
        ("IntId", ["search() returned id 7 (int) at query 0, hit 0; expected str"]),
        ("Surrogate", ["returned text at query 0, hit 0 that contains a lone surrogate "
                       "(\\ud800)"]),
        ("SurrogateId", ["returned id at query 0, hit 0 that contains a lone surrogate "
                         "(\\udc00)"]),
        ("Tuples", ["search() returned ('d1', 'text') at query 0, hit 0; expected a Hit"]),
    ],
)
def test_wrong_answers_are_named_at_their_first_bad_value(
    own: tuple[Path, str], cls: str, fragments: list[str]
) -> None:
    result = run_own(own, cls, "tracking=none")
    line = one_line(result)
    assert f"retriever {own[1]}.search.{cls}: " in line
    for fragment in fragments:
        assert fragment in line, line
    assert len(partial_rows(result)) == 2  # the first two queries' rows stay


def test_sys_exit_in_a_users_search_is_a_failure_not_a_silent_success(
    own: tuple[Path, str]
) -> None:
    result = run_own(own, "Exits", "tracking=none")
    assert "search() called sys.exit(0)" in one_line(result)
    assert len(partial_rows(result)) == 2 and not (result.out_dir / "summary.json").exists()


def test_connection_error_blames_the_retriever_not_the_rows_file(own: tuple[Path, str]) -> None:
    line = one_line(run_own(own, "Network", "tracking=none"))
    assert "search() raised ConnectionError: connection reset by peer" in line
    assert "cannot write" not in line and "Success" not in line


def test_credentials_and_line_breaks_in_a_users_message_stay_out(own: tuple[Path, str]) -> None:
    result = run_own(own, "Leaks", "tracking=none")
    line = one_line(result)
    assert "S3cretPw" not in result.stderr + result.stdout
    assert "RuntimeError: GET https://***@127.0.0.1:9/search failed line two" in line
    log = result.out_dir / "harness.log"
    assert not log.exists() or "S3cretPw" not in log.read_text("utf-8")


@pytest.mark.parametrize(
    ("cls", "fragment"),
    [
        ("BadIndex", "index() raised KeyError: 'title'"),
        ("BadDescribe", "describe() raised AttributeError: no url"),
    ],
)
def test_index_and_describe_failures_are_one_line(
    own: tuple[Path, str], cls: str, fragment: str
) -> None:
    line = one_line(run_own(own, cls, "tracking=none", "retriever.fail_at=99"))
    assert f"retriever {own[1]}.search.{cls}: {fragment}" in line


@pytest.mark.parametrize(
    ("mode", "fragment"),
    [
        ("short", "retrieve_batch() returned 0 samples for 1 samples"),
        ("ids", "retrieve_batch() returned retrieved_context_ids[0] 1 (int) at sample"),
        ("text", "retrieved_contexts[0] at sample"),
    ],
)
def test_a_protocol_retrievers_samples_are_checked(
    own: tuple[Path, str], mode: str, fragment: str
) -> None:
    line = one_line(run_own(own, "Protocol", "tracking=none", f"+retriever.mode={mode}"))
    assert f"retriever {own[1]}.search.Protocol: " in line and fragment in line, line


class _Metric:
    """A metric of a user's: ``score_batch`` raises on the given batch (0-based)."""

    name, requires, prevalidate = "mine", frozenset(), False

    def __init__(self, fail_on: int, answer: object = None) -> None:
        self.fail_on, self.answer, self.batches = fail_on, answer, 0

    def score_batch(self, samples: list[RagSample], on_done: object = None) -> object:
        self.batches += 1
        if self.batches - 1 == self.fail_on:
            if self.answer is not None:
                return self.answer
            raise ZeroDivisionError("float division by zero")
        return [SampleResult(s.id, 1.0) for s in samples]


def _batches(n: int) -> list[list[RagSample]]:
    return [[RagSample(id=f"s{i}", user_input="q")] for i in range(n)]


def test_a_metric_that_raises_is_named_and_earlier_rows_are_written(tmp_path: Path) -> None:
    out = tmp_path / "rows.jsonl"
    with open(out, "w", encoding="utf-8") as sink, pytest.raises(ComponentFailed) as e:
        evaluate(_batches(4), _Metric(2), sink)  # type: ignore[arg-type]
    assert str(e.value) == "metric mine: score_batch() raised ZeroDivisionError: float " \
                           "division by zero"
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == ["s0", "s1"]


@pytest.mark.parametrize(("answer", "fragment"), [("oops", "returned 'oops' for 1 samples"),
                                                  ([], "returned 0 results for 1 samples")])
def test_a_metrics_wrong_answer_is_named(answer: object, fragment: str) -> None:
    with pytest.raises(ComponentFailed, match="^metric mine: score_batch\\(\\) ") as e:
        evaluate(_batches(2), _Metric(0, answer))  # type: ignore[arg-type]
    assert fragment in str(e.value)


def test_a_full_disk_under_a_metric_is_blamed_on_the_file_not_the_metric() -> None:
    # unbuffered: the write itself fails (ENOSPC), nothing is left for close to flush
    raw = open("/dev/full", "wb", buffering=0)  # noqa: SIM115
    with io.TextIOWrapper(raw, "utf-8", write_through=True) as sink, \
            pytest.raises(OutputError) as e:
        evaluate(_batches(1), _Metric(99), sink)  # type: ignore[arg-type]
    assert str(e.value).startswith("cannot write /dev/full (No space left on device)")
