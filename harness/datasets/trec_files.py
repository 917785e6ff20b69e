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
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import numpy as np

from harness.core.errors import DatasetError
from harness.datasets.beir.files import load_queries
from harness.datasets.fields import text_problem
from harness.datasets.reading import decode_line, read_lines

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


def _rows(path: Path, columns: tuple[str, ...], more: bool = False
          ) -> Iterator[tuple[int, list[str]]]:
    """``(line, cells)`` of each line that is neither blank nor a comment (first non-blank
    character ``#``): ``len(columns)`` cells, or more with ``more`` (the rest dropped).
    Strict UTF-8 decoding leaves no lone surrogate to check for."""
    width = len(columns)
    for number, raw in read_lines(path):
        cells = decode_line(raw, path, number).split()
        if not cells or cells[0].startswith("#"):
            continue
        if len(cells) != width and not (more and len(cells) > width):
            then = ", then anything" if more else ""
            raise DatasetError(
                str(path),
                f"expected {width} whitespace-separated columns ({' '.join(columns)}"
                f"{then}), got {len(cells)}",
                line=number,
            )
        yield number, cells[:width]


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


def load_run(path: Path, score_type: ScoreType = "float") -> tuple[dict[str, Ranked], set[str]]:
    """``{query id: documents best first}`` (queries in order of first appearance) and
    the run's tags; a document listed twice for a query is an error, as in trec_eval."""
    run: dict[str, dict[str, tuple[float, int]]] = {}
    tags: set[str] = set()
    for line, (qid, _, did, rank, score, tag) in _rows(path, RUN_COLUMNS, more=True):
        try:
            int(rank)
        except ValueError:
            raise DatasetError(
                str(path), f"expected an integer rank, got {rank!r}", line=line, field="rank"
            ) from None
        value = _number(path, score, line, "score")
        docs = run.setdefault(qid, {})
        if did in docs:
            raise DatasetError(
                str(path),
                f"query {qid!r} lists document {did!r} again (first on line {docs[did][1]}); "
                "a run ranks each document once (trec_eval refuses duplicate docs): keep one",
                line=line, field="doc_id",
            )
        docs[did] = (value, line)
        tags.add(tag)
    ordered = {q: trec_order([(d, s) for d, (s, _) in docs.items()], score_type)
               for q, docs in run.items()}
    return ordered, tags


def load_trec_qrels(path: Path) -> tuple[dict[str, Judged], list[int]]:
    """``{query id: judged documents}`` and the lines whose grade had a fraction (truncated,
    as trec_eval does); a document judged twice for a query is an error, as in trec_eval."""
    qrels: dict[str, dict[str, tuple[float, int]]] = {}
    fractional: list[int] = []
    for line, (qid, _, did, grade_text) in _rows(path, QRELS_COLUMNS):
        grade, cut = _grade(path, grade_text, line)
        if cut:
            fractional.append(line)
        judged = qrels.setdefault(qid, {})
        if did in judged:
            before, at = judged[did]
            said = (f"judged {grade:g} here and {before:g} on line {at}" if grade != before
                    else f"judged again (first on line {at})")
            raise DatasetError(
                str(path),
                f"query {qid!r}, document {did!r} {said}; trec_eval refuses a document "
                "judged twice: keep one judgment",
                line=line, field="relevance" if grade != before else "doc_id",
            )
        judged[did] = (float(grade), line)
    return {q: [(d, g) for d, (g, _) in docs.items()] for q, docs in qrels.items()}, fractional


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
