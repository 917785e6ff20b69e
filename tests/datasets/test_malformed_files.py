"""Malformed and awkward dataset files, each run through the CLI (in process, ``run_cli``).

Every case ends one of two ways (README "Edge cases" and "Datasets"):

- ``Fails``: exit code 2, stderr is ONE line ``error: FILE[:LINE]: [field 'F': ]WHAT``, no
  traceback, and neither ``summary.json`` nor ``samples.jsonl`` is written;
- ``Scores``: exit code 0, and the rows of ``samples.jsonl`` carry the documented outcome: a
  score computed here independently (docs/reference/metrics.md formulas), or ``score: null``
  with its reason in ``error``; never NaN, never a silent 0 for an unscorable sample.

Cheap cases of one metric share a CLI run (see ``_job_key``); each run happens once, when
the first of its cases needs it, and each test then checks its own case.
"""

from __future__ import annotations

import csv
import io
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, run_cli
from rapidfuzz.distance import Levenshtein

MB10 = 10 * 1024 * 1024


# ---------------------------------------------------------------- expected outcomes


@dataclass(frozen=True)
class Fails:
    """Exit 2 with ``error: FILE[:line]: [field 'field': ]...what...`` on one line.

    ``what=None`` checks only the location (file, line, field), for cases where the exact
    wording is the fixer's choice.
    """

    line: int | None
    field: str | None
    what: str | None


@dataclass(frozen=True)
class Scores:
    """Exit 0; one expected dict per row (only the keys given are compared).

    ``nothing_scored``: no row gets a score, which fails the run (exit 3, rows kept) with
    one error line that contains this text.
    """

    rows: list[dict[str, Any]]
    max_seconds: float | None = None
    nothing_scored: str | None = None


@dataclass(frozen=True)
class Case:
    id: str
    data: bytes | Callable[[Path], Path]  # file bytes, or a builder returning the path to use
    expect: Fails | Scores
    metric: str = "id_based"
    fmt: str = "jsonl"
    args: tuple[str, ...] = ()
    solo: bool = False  # never share a CLI run with other cases (see ``_job_key``)


# ---------------------------------------- independent scoring (docs/reference/metrics.md)


def ap(verdicts: list[int], eps: float) -> float:
    """docs/reference/metrics.md section 1, in its stated bit-exact arithmetic order."""
    numerator, prefix = 0.0, 0
    for k, v in enumerate(verdicts, start=1):
        prefix += v
        if v:
            numerator += prefix / k
    return 0.0 if prefix + eps == 0 else numerator / (prefix + eps)


def id_based(retrieved: list[Any], reference: list[Any]) -> dict[str, Any]:
    """ragas IDBasedContextPrecision: set precision over str() ids."""
    got, ref = {str(r) for r in retrieved}, {str(r) for r in reference}
    return {"score": len(got & ref) / len(got), "error": None}


def id_ranked(retrieved: list[Any], reference: list[Any]) -> dict[str, Any]:
    """Average precision, eps 0; a repeated id counts once, at its first rank."""
    ref, seen, verdicts = {str(r) for r in reference}, set(), []
    for r in map(str, retrieved):
        verdicts.append(int(r in ref and r not in seen))
        seen.add(r)
    return {"score": ap(verdicts, 0.0), "verdicts": verdicts, "error": None}


def non_llm(retrieved: list[str], reference: list[str]) -> dict[str, Any]:
    """ragas NonLLMContextPrecisionWithReference: Levenshtein, threshold 0.5, eps 1e-10."""
    sims = [max(1 - Levenshtein.normalized_distance(c, r) for r in reference) for c in retrieved]
    verdicts = [int(s >= 0.5) for s in sims]
    return {"score": ap(verdicts, 1e-10), "verdicts": verdicts, "similarities": sims, "error": None}


def unscored(reason: str, **extra: Any) -> dict[str, Any]:
    return {"score": None, "error": reason, **extra}


# ------------------------------------------------------------------- file builders


def jl(*records: Any, end: str = "\n") -> bytes:
    """JSON lines; a ``str`` record is written verbatim (for literals json.dumps won't make)."""
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records]
    return ("\n".join(lines) + end).encode("utf-8")


def csv_bytes(header: list[str], *rows: list[Any], newline: str = "\n") -> bytes:
    """A CSV written by the csv module (so quoting is standard); lists become JSON cells."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator=newline)
    writer.writerow(header)
    for row in rows:
        writer.writerow([c if isinstance(c, str) else json.dumps(c) for c in row])
    return buf.getvalue().encode("utf-8")


def built(name: str, make: Callable[[Path], bytes]) -> Callable[[Path], Path]:
    """A builder for big files: generated at run time, never stored in the repository."""

    def write(tmp: Path) -> Path:
        path = tmp / name
        path.write_bytes(make(tmp))
        return path

    return write


OK = {"retrieved_context_ids": ["a", "b"], "reference_context_ids": ["b"]}
TXT = {
    "retrieved_contexts": ["Paris is in France.", "Berlin is in Germany."],
    "reference_contexts": ["Paris is in France."],
}
ID_HEADER = ["id", "retrieved_context_ids", "reference_context_ids"]

# 10 MB chunk: "x" * N against "Paris" is N edits over max length N, similarity exactly 0.
BIG = "x" * MB10
BIG_ROW = {"retrieved_contexts": [BIG, "Paris"], "reference_contexts": ["Paris"]}
# 10,000 chunks in one sample.
MANY_IDS = [f"d{i}" for i in range(10_000)]
MANY_REF = [f"d{i}" for i in range(0, 10_000, 7)] + ["missing"]
MANY_TEXTS = [f"chunk number {i}" for i in range(10_000)]
MANY_TEXT_REF = ["chunk number 42", "chunk number 9999"]
# One line over 2 MB with no final newline (spans several 1 MiB read blocks).
LONG_IDS = [f"doc-{i:07d}" for i in range(200_000)]
LONG_REF = LONG_IDS[::3]

# ragas's to_csv writes list cells as Python reprs.
REPR_CHUNKS = ['it\'s in Paris, "the" capital', "Berlin, it's not"]
REPR_REF = ['it\'s in Paris, "the" capital']


def path_of_directory(tmp: Path) -> Path:
    (tmp / "adir").mkdir()
    return tmp / "adir"


def path_missing(tmp: Path) -> Path:
    return tmp / "nope.jsonl"


def path_in_missing_dir(tmp: Path) -> Path:
    return tmp / "no-such-dir" / "d.jsonl"



# ------------------------------------------------------------------------- the corpus

CASES: list[Case | Any] = [
    # -- fields missing or renamed: unscored with the reason, the run continues
    Case(
        "missing-reference-ids-id_based",
        jl(OK, {"retrieved_context_ids": ["a"]}, OK),
        Scores([{"score": 0.5}, unscored("missing field reference_context_ids"), {"score": 0.5}]),
    ),
    Case(
        "missing-retrieved-ids-id_ranked",
        jl({"reference_context_ids": ["a"]}, OK),
        Scores([unscored("missing field retrieved_context_ids"), id_ranked(["a", "b"], ["b"])]),
        metric="id_ranked",
    ),
    Case(
        "missing-reference-texts-non_llm",
        jl(TXT, {"retrieved_contexts": ["x"]}),
        Scores(
            [
                non_llm(TXT["retrieved_contexts"], TXT["reference_contexts"]),
                unscored("missing field reference_contexts"),
            ]
        ),
        metric="non_llm",
    ),
    Case(
        "missing-both-fields",
        jl({"user_input": "q"}, OK),
        Scores(
            [
                unscored("missing fields reference_context_ids, retrieved_context_ids"),
                {"score": 0.5},
            ]
        ),
    ),
    Case(
        "renamed-field-in-one-record",
        jl(TXT, {"passages": ["Paris"], "reference_contexts": ["Paris"]}),
        Scores(
            [
                non_llm(TXT["retrieved_contexts"], TXT["reference_contexts"]),
                unscored("missing field retrieved_contexts"),
            ]
        ),
        metric="non_llm",
    ),
    Case(
        "renamed-field-everywhere-without-mapping",
        jl(
            {"passages": ["Paris"], "reference_contexts": ["Paris"]},
            {"passages": ["Rome"], "reference_contexts": ["Paris"]},
        ),
        Scores(
            [unscored("missing field retrieved_contexts")] * 2,
            nothing_scored="dataset.fields.retrieved_contexts=COLUMN",
        ),
        metric="non_llm",
        solo=True,
    ),
    Case(  # ragas's legacy name is recognised without a mapping
        "legacy-ragas-name-contexts",
        jl({"contexts": ["Paris"], "reference_contexts": ["Paris"]}),
        Scores([non_llm(["Paris"], ["Paris"])]),
        metric="non_llm",
    ),
    Case(
        "all-samples-unscored",
        jl({**OK, "retrieved_context_ids": []}, {"retrieved_context_ids": ["a"]}),
        Scores(
            [
                unscored("retrieved_context_ids is empty"),
                unscored("missing field reference_context_ids"),
            ],
            nothing_scored="retrieved_context_ids is empty",
        ),
        solo=True,
    ),
    Case(
        "renamed-fields-with-mapping",
        jl({"qid": "q7", "contexts": ["Paris", "Rome"], "refs": ["Paris"]}),
        Scores([{"id": "q7", **non_llm(["Paris", "Rome"], ["Paris"])}]),
        metric="non_llm",
        args=(
            "dataset.fields.id=qid",
            "dataset.fields.retrieved_contexts=contexts",
            "dataset.fields.reference_contexts=refs",
        ),
    ),
    Case(
        "null-fields-are-absent",
        jl(
            {
                "id": None,
                "user_input": None,
                "retrieved_context_ids": None,
                "reference_context_ids": ["a"],
            },
            OK,
        ),
        Scores(
            [
                {"id": "0", **unscored("missing field retrieved_context_ids")},
                {"id": "1", "score": 0.5},
            ]
        ),
        solo=True,
    ),
    Case(
        "unknown-keys-ignored-even-nan",
        jl(
            '{"retrieved_context_ids": ["a", "b"], "reference_context_ids": ["b"], '
            '"extra": NaN, "meta": {"k": [1, null]}}'
        ),
        Scores([{"score": 0.5}]),
    ),
    # -- wrong types, per field kind
    Case(
        "text-field-number",
        jl(OK, {**OK, "user_input": 3}),
        Fails(2, "user_input", "expected a string, got int"),
    ),
    Case(
        "text-field-list",
        jl({**OK, "reference": ["In Paris."]}),
        Fails(1, "reference", "expected a string, got a list"),
    ),
    Case(
        "text-field-boolean",
        jl({**OK, "response": True}),
        Fails(1, "response", "expected a string, got a boolean"),
    ),
    Case(
        "text-field-object",
        jl({**OK, "user_input": {"text": "q"}}),
        Fails(1, "user_input", "expected a string, got an object"),
    ),
    Case(
        "list-field-string",
        jl(TXT, {**TXT, "retrieved_contexts": "one chunk"}),
        Fails(2, "retrieved_contexts", "expected a list, got a string"),
        metric="non_llm",
    ),
    Case(
        "list-field-number",
        jl({**OK, "retrieved_context_ids": 5}),
        Fails(1, "retrieved_context_ids", "expected a list, got int"),
    ),
    Case(
        "list-field-object",
        jl({**OK, "reference_context_ids": {"a": 1}}),
        Fails(1, "reference_context_ids", "expected a list, got an object"),
    ),
    Case(
        "id-items-float",
        jl({**OK, "retrieved_context_ids": [1.0, 2]}),
        Fails(1, "retrieved_context_ids", "item 0: expected a string or integer id, got float"),
    ),
    Case(
        "id-items-boolean",
        jl({**OK, "reference_context_ids": ["a", True]}),
        Fails(1, "reference_context_ids", "item 1: expected a string or integer id, got a boolean"),
    ),
    Case(
        "id-items-object",
        jl({**OK, "retrieved_context_ids": [{"id": "a"}]}),
        Fails(1, "retrieved_context_ids", "item 0: expected a string or integer id, got an object"),
    ),
    Case(
        "text-items-nested-list",
        jl({**TXT, "retrieved_contexts": [["a", "b"]]}),
        Fails(1, "retrieved_contexts", "item 0: expected a string, got a list"),
        metric="non_llm",
    ),
    Case(
        "text-items-object",
        jl({**TXT, "reference_contexts": [{"text": "a"}]}),
        Fails(1, "reference_contexts", "item 0: expected a string, got an object"),
        metric="non_llm",
    ),
    Case(
        "null-inside-text-list",
        jl({**TXT, "retrieved_contexts": ["a", None]}),
        Fails(1, "retrieved_contexts", "item 1: expected a string"),
        metric="non_llm",
    ),
    Case(
        "null-inside-id-list",
        jl({**OK, "reference_context_ids": [None]}),
        Fails(1, "reference_context_ids", "item 0: expected a string or integer id"),
    ),
    Case(
        "deeply-nested-json",
        jl('{"retrieved_context_ids": ' + "[" * 5_000 + "]" * 5_000 + "}"),
        Fails(1, None, None),
    ),
    Case(
        "integer-too-long-for-python",
        jl('{"id": ' + "1" * 5000 + ', "retrieved_context_ids": []}'),
        Fails(1, None, None),
    ),
    # -- empty lists and strings (README "Edge cases")
    Case(
        "empty-retrieved-ids-id_based",
        jl({**OK, "retrieved_context_ids": []}),
        Scores([unscored("retrieved_context_ids is empty")]),
    ),
    Case(
        "empty-retrieved-ids-id_ranked",
        jl({**OK, "retrieved_context_ids": []}),
        Scores([{"score": 0.0, "verdicts": [], "error": None}]),
        metric="id_ranked",
    ),
    Case(
        "empty-reference-ids-id_based",
        jl({**OK, "reference_context_ids": []}),
        Scores([{"score": 0.0, "error": None}]),
    ),
    Case(
        "empty-reference-ids-id_ranked",
        jl({**OK, "reference_context_ids": []}),
        Scores([{"score": 0.0, "verdicts": [0, 0], "error": None}]),
        metric="id_ranked",
    ),
    Case(
        "empty-retrieved-texts-non_llm",
        jl({**TXT, "retrieved_contexts": []}),
        Scores([{"score": 0.0, "verdicts": [], "error": None}]),
        metric="non_llm",
    ),
    Case(
        "empty-reference-texts-non_llm",
        jl({**TXT, "reference_contexts": []}),
        Scores([unscored("reference_contexts is empty: nothing to compare the chunks with")]),
        metric="non_llm",
    ),
    Case(
        "empty-grades-with-empty-reference-ids",
        jl(
            {
                "retrieved_context_ids": ["a"],
                "reference_context_ids": [],
                "reference_context_grades": [],
            }
        ),
        Scores([{"score": 0.0, "error": None}]),
    ),
    Case(
        "empty-string-chunk-non_llm",
        jl({"retrieved_contexts": ["", "Paris"], "reference_contexts": ["Paris"]}),
        Scores([non_llm(["", "Paris"], ["Paris"])]),
        metric="non_llm",
    ),
    Case(
        "empty-strings-in-unused-text-fields",
        jl({**OK, "user_input": "", "reference": ""}),
        Scores([{"score": 0.5}]),
    ),
    # -- NaN / Infinity literals (Python's json accepts them): a clear error, never a NaN score
    Case(
        "nan-grade",
        jl(
            '{"retrieved_context_ids": ["a"], "reference_context_ids": ["a"], '
            '"reference_context_grades": [NaN]}'
        ),
        Fails(1, "reference_context_grades", "item 0: expected a finite number, got nan"),
    ),
    Case(
        "infinity-grade",
        jl(
            OK,
            '{"retrieved_context_ids": ["a"], "reference_context_ids": ["a", "b"], '
            '"reference_context_grades": [1, -Infinity]}',
        ),
        Fails(2, "reference_context_grades", "item 1: expected a finite number, got -inf"),
    ),
    Case(
        "nan-id-item",
        jl('{"retrieved_context_ids": [NaN], "reference_context_ids": ["a"]}'),
        Fails(1, "retrieved_context_ids", "item 0: expected a string or integer id, got float"),
    ),
    Case(
        "infinity-chunk",
        jl('{"retrieved_contexts": [Infinity], "reference_contexts": ["a"]}'),
        Fails(1, "retrieved_contexts", "item 0: expected a string, got float"),
        metric="non_llm",
    ),
    Case(
        "nan-record-id",
        jl('{"id": NaN, "retrieved_context_ids": ["a"], "reference_context_ids": ["a"]}'),
        Fails(1, "id", "expected a string or integer, got float"),
    ),
    Case(
        "nan-text-field",
        jl('{"user_input": NaN, "retrieved_context_ids": ["a"], "reference_context_ids": ["a"]}'),
        Fails(1, "user_input", "expected a string, got float"),
    ),
    # -- encodings and line endings
    Case(
        "non-utf8-bytes",
        jl(OK) + b'{"user_input": "caf\xe9", "retrieved_context_ids": ["a"]}\n',
        Fails(2, None, "not valid UTF-8"),
    ),
    Case(
        "utf16-file",
        "\ufeff".encode("utf-16-le") + json.dumps(OK).encode("utf-16-le"),
        Fails(1, None, "not valid UTF-8"),
    ),
    Case(
        "utf8-bom-jsonl",
        b"\xef\xbb\xbf" + jl({**OK, "id": "q1"}),
        Scores([{"id": "q1", "score": 0.5}]),
        solo=True,  # a BOM belongs at the start of a file, not inside a shared one
    ),
    Case(
        "utf8-bom-csv",
        b"\xef\xbb\xbf" + csv_bytes(ID_HEADER, ["q1", ["a", "b"], ["b"]]),
        Scores([{"id": "q1", "score": 0.5}]),
        fmt="csv",
    ),
    Case(
        "crlf-jsonl",
        jl({**OK, "id": "crlf-1"}, {**OK, "id": "crlf-2"}).replace(b"\n", b"\r\n"),
        Scores([{"id": "crlf-1", "score": 0.5}, {"id": "crlf-2", "score": 0.5}]),
    ),
    Case(
        "crlf-csv",
        csv_bytes(ID_HEADER, ["q1", ["a", "b"], ["b"]], ["q2", ["b"], ["b"]], newline="\r\n"),
        Scores([{"id": "q1", "score": 0.5}, {"id": "q2", "score": 1.0}]),
        fmt="csv",
    ),
    Case(
        "unicode-line-separators-in-chunk",
        jl(
            {
                "retrieved_contexts": ["Paris\u2028is\u2029in\x85France", "Rome"],
                "reference_contexts": ["Paris\u2028is\u2029in\x85France"],
            }
        ),
        Scores(
            [
                non_llm(
                    ["Paris\u2028is\u2029in\x85France", "Rome"], ["Paris\u2028is\u2029in\x85France"]
                )
            ]
        ),
        metric="non_llm",
    ),
    # -- size
    Case(
        "chunk-10mb-jsonl-non_llm",
        built("d.jsonl", lambda _: jl(BIG_ROW)),
        Scores(
            [{"score": 0.49999999995, "similarities": [0.0, 1.0], "error": None}], max_seconds=30
        ),
        metric="non_llm",
    ),
    Case(
        "chunk-10mb-csv-non_llm",
        built(
            "d.csv",
            lambda _: csv_bytes(
                ["retrieved_contexts", "reference_contexts"],
                [BIG_ROW["retrieved_contexts"], BIG_ROW["reference_contexts"]],
            ),
        ),
        Scores(
            [{"score": 0.49999999995, "similarities": [0.0, 1.0], "error": None}], max_seconds=30
        ),
        metric="non_llm",
        fmt="csv",
    ),
    Case(
        "chunks-10k-id_ranked",
        built(
            "d.jsonl",
            lambda _: jl({"retrieved_context_ids": MANY_IDS, "reference_context_ids": MANY_REF}),
        ),
        Scores([id_ranked(MANY_IDS, MANY_REF)]),
        metric="id_ranked",
    ),
    Case(
        "chunks-10k-non_llm",
        built(
            "d.jsonl",
            lambda _: jl({"retrieved_contexts": MANY_TEXTS, "reference_contexts": MANY_TEXT_REF}),
        ),
        Scores([non_llm(MANY_TEXTS, MANY_TEXT_REF)]),
        metric="non_llm",
    ),
    Case(
        "long-line-without-newline",
        built(
            "d.jsonl",
            lambda _: jl(
                {"retrieved_context_ids": LONG_IDS, "reference_context_ids": LONG_REF}, end=""
            ),
        ),
        Scores([id_based(LONG_IDS, LONG_REF)]),
    ),
    # -- ids: duplicates, int/str collisions, non-scalar
    Case(
        "duplicate-record-ids",
        jl({**OK, "id": "q1"}, {**OK, "id": "q2"}, {**OK, "id": "q1"}),
        Fails(3, "id", "duplicate id 'q1' (first used on line 1)"),
    ),
    Case(
        "int-and-str-record-ids-collide",
        jl({**OK, "id": 1}, {**OK, "id": "1"}),
        Fails(2, "id", "duplicate id '1' (first used on line 1)"),
    ),
    Case(
        "duplicate-chunk-ids-id_based",
        jl({"retrieved_context_ids": ["a", "a", "b"], "reference_context_ids": ["a"]}),
        Scores([{"score": 0.5, "error": None}]),
    ),
    Case(
        "duplicate-chunk-ids-id_ranked",
        jl({"retrieved_context_ids": ["a", "a", "b"], "reference_context_ids": ["a"]}),
        Scores([{"score": 1.0, "verdicts": [1, 0, 0], "error": None}]),
        metric="id_ranked",
    ),
    Case(
        "mixed-int-str-chunk-ids-id_based",
        jl({"retrieved_context_ids": [1, "2", 3], "reference_context_ids": ["1", 2]}),
        Scores([id_based([1, "2", 3], ["1", 2])]),
    ),
    Case(
        "mixed-int-str-chunk-ids-id_ranked",
        jl({"retrieved_context_ids": [3, "1", 1, 2], "reference_context_ids": ["1", 2]}),
        Scores([id_ranked([3, "1", 1, 2], ["1", 2])]),
        metric="id_ranked",
    ),
    Case(
        "record-id-list",
        jl({**OK, "id": ["q1"]}),
        Fails(1, "id", "expected a string or integer, got a list"),
    ),
    Case(
        "record-id-object",
        jl({**OK, "id": {"q": 1}}),
        Fails(1, "id", "expected a string or integer, got an object"),
    ),
    Case(
        "record-id-float",
        jl({**OK, "id": 1.5}),
        Fails(1, "id", "expected a string or integer, got float"),
    ),
    # -- parallel lists and grades
    Case(
        "retrieved-texts-and-ids-differ-in-length",
        jl(
            {
                "retrieved_contexts": ["a", "b"],
                "retrieved_context_ids": ["1"],
                "reference_context_ids": ["1"],
            }
        ),
        Fails(1, "retrieved_context_ids", "has 1 ids but retrieved_contexts has 2 chunks"),
    ),
    Case(
        "grades-not-parallel",
        jl({**OK, "reference_context_grades": [1, 2]}),
        Fails(1, "reference_context_grades", "has 2 grades but reference_context_ids has 1 ids"),
    ),
    Case(
        "grades-without-reference-ids",
        jl({"retrieved_context_ids": ["a"], "reference_context_grades": [1]}),
        Fails(1, "reference_context_grades", "has 1 grades but reference_context_ids has 0 ids"),
    ),
    Case(
        "grades-as-strings",
        jl({**OK, "reference_context_grades": ["2"]}),
        Fails(1, "reference_context_grades", "item 0: expected a finite number, got '2'"),
    ),
    Case(
        "grades-as-booleans",
        jl({**OK, "reference_context_grades": [True]}),
        Fails(1, "reference_context_grades", "item 0: expected a finite number, got True"),
    ),
    Case(
        "grades-as-scalar",
        jl({**OK, "reference_context_grades": 2}),
        Fails(1, "reference_context_grades", "expected a list, got int"),
    ),
    Case(
        "grades-decide-relevance",
        jl(
            {
                "retrieved_context_ids": ["a", "b", "c"],
                "reference_context_ids": ["a", "b"],
                "reference_context_grades": [0, 2.5],
            }
        ),
        Scores([{"score": 1 / 3, "verdicts": [0, 1, 0], "error": None}]),
    ),
    # -- files that are not (valid) JSONL
    Case("empty-file", b"", Fails(None, None, "contains no records")),
    Case("blank-lines-only", b"\n\n   \n\t\r\n\n", Fails(None, None, "contains no records")),
    Case(
        "json-array-on-one-line",
        json.dumps([OK, OK]).encode() + b"\n",
        Fails(1, None, "expected a JSON object, got a list"),
    ),
    Case(
        "pretty-printed-json",
        json.dumps(OK, indent=2).encode() + b"\n",
        Fails(1, None, "not valid JSON"),
    ),
    Case(
        "yaml-file",
        b"- id: q1\n  retrieved_context_ids: [a, b]\n  reference_context_ids: [b]\n",
        Fails(1, None, "not valid JSON"),
    ),
    Case(
        "truncated-last-line",
        jl(OK) + b'{"retrieved_context_ids": ["a", "b"], "refer',
        Fails(2, None, "not valid JSON"),
    ),
    Case(
        "trailing-comma",
        jl(OK, '{"retrieved_context_ids": ["a"], "reference_context_ids": ["a"],}'),
        Fails(2, None, "not valid JSON"),
    ),
    Case(
        "line-is-json-array",
        jl(OK, ["a", "b"], OK),
        Fails(2, None, "expected a JSON object, got a list"),
    ),
    Case(
        "bad-record-after-first-batch",
        jl(OK, OK, OK, OK, {**OK, "retrieved_context_ids": "a"}),
        Fails(5, "retrieved_context_ids", "expected a list, got a string"),
        args=("run.batch_size=2",),
    ),
    # -- paths
    Case("directory-as-path", path_of_directory, Fails(None, None, "is a directory, not a file")),
    Case("missing-path", path_missing, Fails(None, None, "file not found")),
    Case("path-in-missing-directory", path_in_missing_dir, Fails(None, None, "file not found")),
    # -- CSV
    Case(
        "csv-quoting-commas-quotes-newlines",
        csv_bytes(
            ["id", "user_input", "retrieved_contexts", "reference_contexts"],
            [
                'q,"1"',
                'What, "exactly",\nis here?',
                ['Paris, "the" city', "Berlin, Germany"],
                ['Paris, "the" city'],
            ],
            ['q\n"2"', "x", ["a"], ["a"]],
        ),
        Scores(
            [
                {
                    "id": 'q,"1"',
                    **non_llm(['Paris, "the" city', "Berlin, Germany"], ['Paris, "the" city']),
                },
                {"id": 'q\n"2"', **non_llm(["a"], ["a"])},
            ]
        ),
        metric="non_llm",
        fmt="csv",
    ),
    Case(
        "csv-line-number-after-multiline-cell",
        b"id,user_input,retrieved_context_ids,reference_context_ids\n"
        b'q1,"line one\nline two\nline three","[""a""]","[""a""]"\n'
        b'q2,x,oops[,"[""a""]"\n',
        Fails(5, "retrieved_context_ids", "expected a JSON list"),
        fmt="csv",
    ),
    Case(
        "csv-header-missing-a-column",
        b'id,retrieved_context_ids\nq1,"[""a""]","[""a""]"\n',
        Fails(2, None, "has 3 columns but the header has 2"),
        fmt="csv",
    ),
    Case(
        "csv-without-needed-column",
        csv_bytes(["id", "retrieved_context_ids"], ["q1", ["a"]]),
        Scores(
            [{"id": "q1", **unscored("missing field reference_context_ids")}],
            nothing_scored="dataset.fields.reference_context_ids=COLUMN",
        ),
        fmt="csv",
    ),
    Case(
        "csv-extra-columns",
        csv_bytes(["notes", *ID_HEADER, "score"], ["n, b", "q1", ["a", "b"], ["b"], "0.9"]),
        Scores([{"id": "q1", "score": 0.5}]),
        fmt="csv",
    ),
    Case(
        "csv-empty-cell-vs-empty-list",
        csv_bytes(ID_HEADER, ["q1", ["a"], ""], ["q2", ["a"], []]),
        Scores(
            [
                {"id": "q1", **unscored("missing field reference_context_ids")},
                {"id": "q2", "score": 0.0, "error": None},
            ]
        ),
        fmt="csv",
    ),
    Case(
        "csv-python-repr-texts",
        csv_bytes(
            ["user_input", "retrieved_contexts", "reference_contexts"],
            ["q", repr(REPR_CHUNKS), repr(REPR_REF)],
        ),
        Scores([non_llm(REPR_CHUNKS, REPR_REF)]),
        metric="non_llm",
        fmt="csv",
    ),
    Case(
        "csv-python-repr-ids",
        csv_bytes(ID_HEADER, ["q1", repr(["d1", "d2", 3]), repr(["d2", "3"])]),
        Scores([{"id": "q1", **id_ranked(["d1", "d2", 3], ["d2", "3"])}]),
        metric="id_ranked",
        fmt="csv",
    ),
    Case(
        "csv-python-tuple-cell",
        csv_bytes(ID_HEADER, ["q1", "('a', 'b')", ["a"]]),
        Fails(2, "retrieved_context_ids", "expected a list, got tuple"),
        fmt="csv",
    ),
    Case(
        "csv-unterminated-quote",
        b'id,retrieved_context_ids,reference_context_ids\nq1,"[1],[1]\n',
        Fails(2, None, "malformed CSV"),
        fmt="csv",
    ),
    Case(
        "csv-duplicate-header-column",
        b"id,retrieved_context_ids,reference_context_ids,reference_context_ids\n"
        b'q1,"[""a""]","[""a""]","[""b""]"\n',
        Fails(1, "reference_context_ids", None),
        fmt="csv",
    ),
    Case(
        "csv-deeply-nested-cell",
        csv_bytes(ID_HEADER, ["q1", "[" * 5_000 + "]" * 5_000, ["a"]]),
        Fails(2, "retrieved_context_ids", None),
        fmt="csv",
    ),
    Case(
        "csv-nan-grade",
        csv_bytes([*ID_HEADER, "reference_context_grades"], ["q1", ["a"], ["a"], "[NaN]"]),
        Fails(2, "reference_context_grades", "expected a finite number, got nan"),
        fmt="csv",
    ),
    Case("csv-empty-file", b"", Fails(None, None, "contains no records"), fmt="csv"),
    Case(
        "csv-header-only",
        b"id,retrieved_context_ids,reference_context_ids\n",
        Fails(None, None, "contains no records"),
        fmt="csv",
    ),
]


def _case(param: Case | Any) -> Case:
    return param if isinstance(param, Case) else param.values[0]


def _id(param: Case | Any) -> str:
    return _case(param).id


assert len({_id(c) for c in CASES}) == len(CASES), "case ids must be unique"


# -------------------------------------------------------------------------- running


def _job_key(case: Case) -> str:
    """Cheap JSONL scoring cases of one metric share a CLI run (their records concatenated,
    each case checking only its own rows); everything else runs alone."""
    if (
        isinstance(case.expect, Scores)
        and isinstance(case.data, bytes)
        and case.fmt == "jsonl"
        and not case.args
        and not case.solo
        and case.expect.max_seconds is None
    ):
        return f"shared-{case.metric}"
    return case.id


@dataclass
class Outcome:
    path: Path
    result: CliResult
    seconds: float


@dataclass
class Job:
    cases: list[Case] = field(default_factory=list)
    offsets: dict[str, int] = field(default_factory=dict)  # case id -> index of its first row


def _execute(job: Job, tmp: Path) -> Outcome:
    case = job.cases[0]
    if len(job.cases) > 1:
        path = tmp / "d.jsonl"
        parts = [c.data for c in job.cases]
        assert all(isinstance(p, bytes) and p.endswith(b"\n") for p in parts)
        path.write_bytes(b"".join(parts))  # type: ignore[arg-type]
    elif isinstance(case.data, bytes):
        path = tmp / f"d.{case.fmt}"
        path.write_bytes(case.data)
    else:
        path = case.data(tmp)
    started = time.perf_counter()
    result = run_cli(
        f"dataset={case.fmt}",
        f"dataset.path={path}",
        "tracking=none",
        f"metric={case.metric}",
        *case.args,
        cwd=tmp,
    )
    return Outcome(path, result, time.perf_counter() - started)


class Outcomes:
    """The CLI runs of the selected cases, each started on first demand and kept."""

    def __init__(self, jobs: dict[str, Job], tmp_path_factory: pytest.TempPathFactory) -> None:
        self._jobs = jobs
        self._by_case = {c.id: key for key, job in jobs.items() for c in job.cases}
        self._done: dict[str, Outcome] = {}
        self._tmp = tmp_path_factory

    def __getitem__(self, case_id: str) -> tuple[Outcome, Job]:
        key = self._by_case[case_id]
        if key not in self._done:
            self._done[key] = _execute(self._jobs[key], self._tmp.mktemp(key[:40]))
        return self._done[key], self._jobs[key]


@pytest.fixture(scope="module")
def outcomes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Outcomes:
    """Group the selected cases into CLI runs (a run's cases may be spread over the module)."""
    jobs: dict[str, Job] = {}
    for item in request.session.items:
        if not isinstance(item, pytest.Function) or item.module is not request.module:
            continue
        callspec = getattr(item, "callspec", None)  # only parametrized tests have one
        if callspec is None or "case" not in callspec.params:
            continue
        case = callspec.params["case"]
        job = jobs.setdefault(_job_key(case), Job())
        job.offsets[case.id] = sum(
            len(c.expect.rows) for c in job.cases if isinstance(c.expect, Scores)
        )
        job.cases.append(case)
    return Outcomes(jobs, tmp_path_factory)


def _check_fails(case: Case, out: Outcome) -> None:
    result, expect = out.result, case.expect
    assert isinstance(expect, Fails)
    stderr = result.stderr
    assert "Traceback" not in stderr + result.stdout, stderr[-3000:]
    assert result.returncode == 2, f"exit {result.returncode}, stderr: {stderr[-3000:]!r}"
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {stderr[-3000:]!r}"
    prefix = f"error: {out.path}"
    if expect.line is not None:
        prefix += f":{expect.line}"
    prefix += ": "
    if expect.field is not None:
        prefix += f"field '{expect.field}': "
    assert lines[0].startswith(prefix), f"expected {prefix!r}..., got {lines[0]!r}"
    if expect.what is not None:
        assert expect.what in lines[0], f"expected {expect.what!r} in {lines[0]!r}"
    assert not (result.out_dir / "summary.json").exists()
    assert not (result.out_dir / "samples.jsonl").exists()


def _check_scores(case: Case, out: Outcome, offset: int) -> None:
    result, expect = out.result, case.expect
    assert isinstance(expect, Scores)
    assert "Traceback" not in result.stderr + result.stdout, result.stderr[-3000:]
    if expect.nothing_scored is None:
        assert result.returncode == 0, f"exit {result.returncode}: {result.stderr[-3000:]!r}"
        assert "error:" not in result.stderr, result.stderr[-3000:]
    else:
        assert result.returncode == 3, f"exit {result.returncode}: {result.stderr[-3000:]!r}"
        [line] = [x for x in result.stderr.splitlines() if x.startswith("error:")]
        assert line.startswith("error: none of the") and expect.nothing_scored in line, line
    if expect.max_seconds is not None:
        assert out.seconds < expect.max_seconds, f"took {out.seconds:.1f} s"
    all_rows = result.rows()
    # the whole run: every row scored in [0, 1] or unscored with a reason; counts and mean agree
    for row in all_rows:
        score = row["score"]
        if score is None:
            assert isinstance(row["error"], str) and row["error"], row
        else:
            assert isinstance(score, float) and math.isfinite(score) and 0.0 <= score <= 1.0, row
    summary = result.summary()
    scores = [r["score"] for r in all_rows if r["score"] is not None]
    assert (summary["n_samples"], summary["n_scored"], summary["n_unscored"]) == (
        len(all_rows),
        len(scores),
        len(all_rows) - len(scores),
    )
    assert summary["mean"] == (math.fsum(scores) / len(scores) if scores else None)
    # this case's own rows
    rows = all_rows[offset : offset + len(expect.rows)]
    assert len(rows) == len(expect.rows), (
        f"{len(all_rows)} rows in all, this case's start at {offset}"
    )
    for i, (row, want) in enumerate(zip(rows, expect.rows, strict=True)):
        got = {k: row.get(k) for k in want}
        assert got == want, f"row {i} of this case"


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_bad_input(case: Case, outcomes: Outcomes) -> None:
    out, job = outcomes[case.id]
    if isinstance(case.expect, Fails):
        _check_fails(case, out)
    else:
        _check_scores(case, out, job.offsets[case.id])
