"""Readers of TREC files: a run (``qid Q0 docid rank score tag``), qrels (``qid 0 docid
grade``) and queries (``qid<TAB>text``, or BEIR's ``queries.jsonl``). Columns are separated
by any whitespace, as trec_eval reads them; each malformed line is a one-line
``DatasetError`` naming the file, line and column."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

from harness.core.errors import DatasetError
from harness.datasets.beir.files import load_queries
from harness.datasets.fields import text_problem
from harness.datasets.reading import decode_line, read_lines

#: One query's retrieved documents: ``(document id, score)``, best first.
Ranked = list[tuple[str, float]]
#: One query's judged documents: ``(document id, grade)``, in file order.
Judged = list[tuple[str, float]]

RUN_COLUMNS = ("query_id", "Q0", "doc_id", "rank", "score", "tag")
QRELS_COLUMNS = ("query_id", "iteration", "doc_id", "relevance")


def _rows(path: Path, columns: tuple[str, ...]) -> Iterator[tuple[int, list[str]]]:
    """``(line, cells)`` of each non-blank line, which must have ``len(columns)`` cells
    (strict UTF-8 decoding leaves no lone surrogate to check for)."""
    width = len(columns)
    for number, raw in read_lines(path):
        cells = decode_line(raw, path, number).split()
        if len(cells) != width:
            if not cells:
                continue
            raise DatasetError(
                str(path),
                f"expected {width} whitespace-separated columns ({' '.join(columns)}), "
                f"got {len(cells)}",
                line=number,
            )
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


def trec_order(ranked: Ranked) -> Ranked:
    """trec_eval's ranking: score descending, ties by document id descending (its
    ``strcmp`` on the ids; Python compares code points, the order of UTF-8 bytes). The
    rank column is ignored, as trec_eval ignores it."""
    by_id = sorted(ranked, key=lambda pair: pair[0], reverse=True)
    return sorted(by_id, key=lambda pair: -pair[1])


def load_run(path: Path) -> tuple[dict[str, Ranked], set[str]]:
    """``{query id: documents best first}`` (queries in order of first appearance) and
    the run's tags; a document listed twice for a query is an error."""
    run: dict[str, dict[str, tuple[float, int]]] = {}
    tags: set[str] = set()
    for line, (qid, _, did, rank, score, tag) in _rows(path, RUN_COLUMNS):
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
                "a run ranks each document once",
                line=line, field="doc_id",
            )
        docs[did] = (value, line)
        tags.add(tag)
    ordered = {q: trec_order([(d, s) for d, (s, _) in docs.items()]) for q, docs in run.items()}
    return ordered, tags


def load_trec_qrels(path: Path) -> dict[str, Judged]:
    """``{query id: judged documents}``; a repeated judgment must repeat its grade."""
    qrels: dict[str, dict[str, tuple[float, int]]] = {}
    for line, (qid, _, did, grade_text) in _rows(path, QRELS_COLUMNS):
        grade = _number(path, grade_text, line, "relevance")
        judged = qrels.setdefault(qid, {})
        if did in judged and judged[did][0] != grade:
            before, at = judged[did]
            raise DatasetError(
                str(path),
                f"query {qid!r}, document {did!r} judged {grade:g} here and {before:g} on "
                f"line {at}",
                line=line, field="relevance",
            )
        judged.setdefault(did, (grade, line))
    return {q: [(d, g) for d, (g, _) in docs.items()] for q, docs in qrels.items()}


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
