"""Readers of TREC files: a run (``qid Q0 docid rank score tag``), qrels (``qid 0 docid
grade``) and queries (``qid<TAB>text``, or BEIR's ``queries.jsonl``). Columns are separated
by any whitespace (CR included), as trec_eval reads them; each malformed line is a one-line
``DatasetError`` naming the file, line and column.

What trec_eval accepts, we accept, and read as it does: a line whose first non-blank
character is ``#`` is a comment (trec_eval 10.0); blank lines are skipped; a run line's
columns after the tag are ignored (trec_eval 9 and 10); a fractional grade is truncated
toward zero (trec_eval's ``atol``: ``2.5`` is 2). What it refuses, we refuse: a document
listed twice for a query of the run, a document judged twice for a query of the qrels.
"""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import numpy as np

from harness.core.errors import DatasetError
from harness.datasets.beir.files import load_queries
from harness.datasets.fields import text_problem
from harness.datasets.reading import decode_line, read_lines
from harness.datasets.trec_table import IdTable, Qrels

#: One query's retrieved documents: ``(document id, score)``, best first.
Ranked = list[tuple[str, float]]
#: One query's judged documents: ``(document id, grade)``, in file order.
Judged = list[tuple[str, float]]
#: How a run's scores are kept before ranking: C ``float`` (trec_eval 9.x, pytrec_eval)
#: or ``double`` (trec_eval 10.0).
ScoreType = Literal["float", "double"]

RUN_COLUMNS = ("query_id", "Q0", "doc_id", "rank", "score", "tag")
QRELS_COLUMNS = ("query_id", "iteration", "doc_id", "relevance")
#: A grade as ``atol`` reads it whole: an integer, optionally with a fraction to drop.
_GRADE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)")


def _cells(path: Path, raw: bytes, number: int, columns: tuple[str, ...], more: bool = False
           ) -> list[str] | None:
    """The cells of a line (None for a blank or comment line, first non-blank character
    ``#``): ``len(columns)`` cells, or more with ``more`` (the rest dropped). Strict UTF-8
    decoding leaves no lone surrogate to check for."""
    cells = decode_line(raw, path, number).split()
    if not cells or cells[0].startswith("#"):
        return None
    width = len(columns)
    if len(cells) != width and not (more and len(cells) > width):
        then = ", then anything" if more else ""
        raise DatasetError(
            str(path),
            f"expected {width} whitespace-separated columns ({' '.join(columns)}"
            f"{then}), got {len(cells)}",
            line=number,
        )
    return cells[:width]


def _rows(path: Path, columns: tuple[str, ...], more: bool = False
          ) -> Iterator[tuple[int, list[str]]]:
    """``(line, cells)`` of each line that is neither blank nor a comment (``_cells``)."""
    for number, raw in read_lines(path):
        cells = _cells(path, raw, number, columns, more)
        if cells is not None:
            yield number, cells


def _number(path: Path, text: str, line: int, field: str) -> float:
    """``text`` as a finite number; a ``DatasetError`` naming the line and column."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if value - value != 0:  # NaN or infinite
        raise DatasetError(str(path), f"expected a number, got {text!r}", line=line, field=field)
    return value


def _grade(path: Path, text: str, line: int) -> tuple[int, bool]:
    """``(grade, had a fraction)``: ``text`` truncated toward zero, as trec_eval's ``atol``
    reads a grade (``2.5`` is 2, ``-0.5`` is 0); a form ``atol`` would read otherwise than
    written (``1e3``, ``0x10``, ``nan``) is a ``DatasetError``."""
    if not _GRADE.fullmatch(text):
        raise DatasetError(
            str(path), f"expected an integer grade, got {text!r}", line=line, field="relevance"
        )
    whole, dot, fraction = text.partition(".")
    value = int(whole) if whole.strip("+-") else 0
    return value, bool(dot) and fraction.strip("0") != ""


def kept_scores(scores: list[float], score_type: ScoreType = "float") -> list[float]:
    """The scores as trec_eval keeps them: rounded to C ``float`` (trec_eval 9.x and
    pytrec_eval: ``12.3456784`` and ``12.3456781`` are then equal, and beyond 3.4e38 a
    score is infinite) or kept as ``double`` (trec_eval 10.0)."""
    if score_type == "double":
        return list(scores)
    with np.errstate(over="ignore"):
        return [float(s) for s in np.asarray(scores, dtype=np.float64).astype(np.float32)]


def trec_order(ranked: Ranked, score_type: ScoreType = "float") -> Ranked:
    """trec_eval's ranking: score (as ``kept_scores`` keeps it) descending, ties by
    document id descending (its ``strcmp`` on the ids; Python compares code points, the
    order of UTF-8 bytes). The rank column is ignored, as trec_eval ignores it. The pairs
    keep the scores as written."""
    kept = kept_scores([s for _, s in ranked], score_type)
    by_id = sorted(zip(kept, ranked, strict=True), key=lambda pair: pair[1][0], reverse=True)
    return [pair for _, pair in sorted(by_id, key=lambda kp: -kp[0])]


def run_cells(path: Path, raw: bytes, number: int) -> tuple[str, str, float, str] | None:
    """``(query id, document id, score, tag)`` of a run line, checked (None for a blank or
    comment line); the columns after the tag are ignored, as trec_eval ignores them."""
    cells = _cells(path, raw, number, RUN_COLUMNS, more=True)
    if cells is None:
        return None
    qid, _, did, rank, score, tag = cells
    try:
        int(rank)
    except ValueError:
        raise DatasetError(
            str(path), f"expected an integer rank, got {rank!r}", line=number, field="rank"
        ) from None
    return qid, did, _number(path, score, number, "score"), tag


class QueryIds:
    """The ids of a ``dict`` table by index, once no id is looked up any more: UTF-8 in one
    byte buffer with each id's end (``trec_table.IdTable`` holds them so from the start)."""

    def __init__(self, table: dict[str, int]) -> None:
        """Take the ids of ``table`` (numbered ``0 .. len - 1`` in its order) and empty it."""
        self._text = bytearray()
        self._ends = array("q")
        for qid in table:
            self._text += qid.encode("utf-8")
            self._ends.append(len(self._text))
        if len(self._text) < 1 << 32:
            self._ends = array("I", self._ends)
        table.clear()

    def __len__(self) -> int:
        return len(self._ends)

    def items(self) -> Iterator[tuple[str, int]]:
        """``(query id, index)`` in index order."""
        text, start = self._text, 0
        for i, end in enumerate(self._ends):
            yield text[start:end].decode("utf-8"), i
            start = end


def _first_judgment(path: Path, qid: str, did: str) -> int:
    """The line of the first judgment of ``did`` for ``qid`` (for an error message)."""
    return next(n for n, (q, _, d, _) in _rows(path, QRELS_COLUMNS) if q == qid and d == did)


def load_trec_qrels(path: Path, table: IdTable | None = None) -> Qrels:
    """The judgments, their queries numbered by ``table`` (``Qrels``; grades with a fraction
    truncated, as trec_eval does, and counted); a document judged twice for a query is an
    error, as in trec_eval."""
    qrels = Qrels(table)
    current: str | None = None
    judged: dict[str, float] = {}  # the current query's, with those of its earlier lines
    for line, (qid, _, did, grade_text) in _rows(path, QRELS_COLUMNS):
        grade, cut = _grade(path, grade_text, line)
        if cut:
            qrels.fractional += 1
            if qrels.fractional <= 5:
                qrels.fractional_lines.append(line)
        if qid != current:
            if current is not None:
                qrels.put(current, judged)
            current = qid
            judged = dict(qrels[qid]) if qid in qrels else {}
        if did in judged:
            before, at = judged[did], _first_judgment(path, qid, did)
            said = (f"judged {grade:g} here and {before:g} on line {at}" if grade != before
                    else f"judged again (first on line {at})")
            raise DatasetError(
                str(path),
                f"query {qid!r}, document {did!r} {said}; trec_eval refuses a document "
                "judged twice: keep one judgment",
                line=line, field="relevance" if grade != before else "doc_id",
            )
        judged[did] = float(grade)
    if current is not None:
        qrels.put(current, judged)
    return qrels


def load_trec_queries(path: Path) -> dict[str, str]:
    """``{query id: text}``: BEIR's ``queries.jsonl`` (``.jsonl``/``.json``), else a TSV of
    ``qid<TAB>text`` (MS MARCO, ir_datasets); ids must be unique."""
    if path.suffix.lower() in (".jsonl", ".json"):
        return load_queries(path)
    queries: dict[str, str] = {}
    first: dict[str, int] = {}
    for number, raw in read_lines(path):
        text = decode_line(raw, path, number).rstrip("\r\n")
        if not text.strip():
            continue
        qid, tab, query = text.partition("\t")
        qid = qid.strip()
        if not tab or not qid or not query.strip():
            raise DatasetError(
                str(path), "expected query_id<TAB>text (or a .jsonl file of {_id, text})",
                line=number,
            )
        for field, value in (("query_id", qid), ("text", query)):
            problem = text_problem(value)
            if problem is not None:
                raise DatasetError(str(path), problem, line=number, field=field)
        if qid in first:
            raise DatasetError(
                str(path), f"duplicate id {qid!r} (first used on line {first[qid]})",
                line=number, field="query_id",
            )
        first[qid] = number
        queries[qid] = query.strip()
    return queries
