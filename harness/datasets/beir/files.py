"""Readers of the files in a BEIR folder: each raises a one-line ``DatasetError`` naming the
file, line and field of the first malformed record."""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from harness.core.errors import DatasetError
from harness.core.types import Document
from harness.datasets.fields import text_problem
from harness.datasets.reading import decode_line, file_kind, load_json, read_lines, stat_file

_QRELS_HEADER = ("query-id", "corpus-id", "score")

#: Judgments of one query: ``(document id, grade)`` in qrels order.
Judged = list[tuple[str, float]]


def check_folder(folder: Path, files: Sequence[tuple[str, Path]]) -> None:
    """Raise a ``DatasetError`` naming the missing or unreadable folder or file.

    Args:
        folder: The BEIR folder.
        files: ``(label, path)`` of each file the dataset reads (label ``qrels/<split>.tsv``
            or ``answers`` for those with their own advice).
    """
    try:
        mode: int | None = os.stat(folder).st_mode
    except (FileNotFoundError, NotADirectoryError):
        mode = None
    except OSError as e:
        raise DatasetError(str(folder), f"cannot open ({e.strerror or e})") from None
    if mode is None:
        where = "" if folder.is_absolute() else f" (resolved from {os.getcwd()})"
        raise DatasetError(
            str(folder),
            f"folder not found{where}; set dataset.path=DIR to a BEIR folder with "
            "corpus.jsonl, queries.jsonl and qrels/<split>.tsv (dataset=scifact, trec_dl19 "
            "and dbpedia_entity look in $HARNESS_SHARED_DATA, else ../shared/data; "
            "dataset=scifact_mini is bundled, dataset=ir_datasets downloads)",
        )
    if not stat.S_ISDIR(mode):
        raise DatasetError(
            str(folder),
            f"is {file_kind(mode)}, not a BEIR folder (corpus.jsonl, queries.jsonl, qrels/)",
        )
    for label, file in files:
        if stat_file(file):
            continue
        if label.startswith("qrels/"):
            splits = sorted(p.stem for p in (folder / "qrels").glob("*.tsv"))
            have = (
                f"the splits here are {', '.join(splits)} (dataset.split=...)"
                if splits
                else "there is no qrels/<split>.tsv in this folder"
            )
            raise DatasetError(str(file), f"file not found; {have}")
        if label == "answers":
            raise DatasetError(str(file), "file not found (dataset.answers)")
        raise DatasetError(
            str(file),
            "file not found; a BEIR folder holds corpus.jsonl, queries.jsonl and "
            "qrels/<split>.tsv",
        )


def documents_key(documents: Sequence[Document]) -> str:
    """Content hash of documents (ids, titles, texts), for index caches.

    It changes when and only when the indexed text changes: not with the queries, the
    qrels or ``corpus.jsonl``'s metadata fields.
    """
    hasher = hashlib.sha256()
    for doc in documents:
        hasher.update(json.dumps([doc.id, doc.title, doc.text], ensure_ascii=False).encode())
        hasher.update(b"\n")
    return hasher.hexdigest()


def load_queries(path: Path) -> dict[str, str]:
    """``{query id: text}`` from ``queries.jsonl``, in file order; ids must be unique."""
    queries: dict[str, str] = {}
    first: dict[str, int] = {}
    for line, record in read_jsonl(path):
        qid = id_field(path, record, "_id", line)
        text = text_field(path, record, "text", line, required=True)
        _check_unique(path, qid, line, first)
        queries[qid] = text
    return queries


def load_qrels(path: Path) -> dict[str, Judged]:
    """``{query id: judged documents}``; a repeated row must repeat its grade."""
    qrels: dict[str, dict[str, tuple[float, int]]] = {}
    for line, (qid, did, grade) in read_qrels(path):
        judged = qrels.setdefault(qid, {})
        if did in judged:
            before, at = judged[did]
            if before != grade:
                raise DatasetError(
                    str(path),
                    f"query {qid!r}, document {did!r} judged {grade:g} here and "
                    f"{before:g} on line {at}",
                    line=line,
                    field="score",
                )
            continue
        judged[did] = (grade, line)
    return {q: [(d, g) for d, (g, _) in docs.items()] for q, docs in qrels.items()}


def load_answers(path: Path) -> dict[str, str]:
    """``{query id: reference answer}`` from a JSONL file of ``{query_id, answer}``."""
    answers: dict[str, str] = {}
    for line, record in read_jsonl(path):
        qid = id_field(path, record, "query_id", line)
        answers[qid] = text_field(path, record, "answer", line, required=True)
    return answers


def load_documents(
    path: Path, limit: int | None = None, keep: set[str] | frozenset[str] = frozenset()
) -> tuple[list[Document], int]:
    """The documents of ``corpus.jsonl`` and its record count.

    Args:
        path: The corpus file.
        limit: Keep only the first ``limit`` documents, plus those in ``keep`` (null: all).
        keep: Ids kept beyond ``limit``.
    """
    docs: list[Document] = []
    first: dict[str, int] = {}
    lines = 0
    for line, record in read_jsonl(path):
        lines += 1
        did = id_field(path, record, "_id", line)
        _check_unique(path, did, line, first)
        title = text_field(path, record, "title", line, required=False)
        text = text_field(path, record, "text", line, required=True)
        if limit is None or len(docs) < limit or did in keep:
            docs.append(Document(did, title, text))
    if not docs:
        raise DatasetError(str(path), "contains no documents")
    return docs, lines


def _check_unique(path: Path, record_id: str, line: int, first: dict[str, int]) -> None:
    if record_id in first:
        raise DatasetError(
            str(path),
            f"duplicate id {record_id!r} (first used on line {first[record_id]})",
            line=line,
            field="_id",
        )
    first[record_id] = line


def decoded_lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(1-based line number, text)`` for each line; a DatasetError on bad UTF-8, a read
    error, or a file that changes while it is read."""
    for number, raw in read_lines(path):
        yield number, decode_line(raw, path, number)


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, record)`` for each non-blank line, which must hold a JSON object."""
    for number, text in decoded_lines(path):
        if not text.strip():
            continue
        record = load_json(text, path, number)
        if not isinstance(record, dict):
            raise DatasetError(
                str(path), f"expected a JSON object, got {type(record).__name__}", line=number
            )
        yield number, record


def id_field(path: Path, record: dict[str, Any], field: str, line: int) -> str:
    """The non-empty string or integer id in ``record[field]``, as a string."""
    value = record.get(field)
    if value is None:
        raise DatasetError(str(path), "missing", line=line, field=field)
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise DatasetError(
            str(path), f"expected a string or integer id, got {value!r}", line=line, field=field
        )
    value = str(value)
    if not value:
        raise DatasetError(str(path), "empty id", line=line, field=field)
    return _text(path, value, field, line)


def text_field(
    path: Path, record: dict[str, Any], field: str, line: int, *, required: bool
) -> str:
    """The string in ``record[field]``; ``""`` when absent and not ``required``."""
    value = record.get(field)
    if value is None:
        if required:
            raise DatasetError(str(path), "missing", line=line, field=field)
        return ""
    if not isinstance(value, str):
        raise DatasetError(
            str(path), f"expected a string, got {type(value).__name__}", line=line, field=field
        )
    return _text(path, value, field, line)


def _text(path: Path, value: str, field: str, line: int) -> str:
    """``value``, or a ``DatasetError`` when it cannot be written as UTF-8."""
    problem = text_problem(value)
    if problem is not None:
        raise DatasetError(str(path), problem, line=line, field=field)
    return value


def read_qrels(path: Path) -> Iterator[tuple[int, tuple[str, str, float]]]:
    """``(line, (query id, doc id, grade))`` per row; the header line is recognised and skipped.

    The header is the first non-blank line when it names the columns (BEIR writes
    ``query-id corpus-id score``; ``_is_header``); any other first line is a judgment, and
    one whose score is not a number is refused, naming the line, never dropped unseen.
    """
    first = True
    for number, line in decoded_lines(path):
        text = line.rstrip("\r\n")
        if not text.strip():
            continue
        cells = text.split("\t")
        if first:
            first = False
            if len(cells) == 3 and _is_header(cells):
                continue
        if len(cells) != 3:
            raise DatasetError(
                str(path),
                f"expected 3 tab-separated columns (query-id, corpus-id, score), got {len(cells)}",
                line=number,
            )
        qid, did, score = (c.strip() for c in cells)
        if not qid:
            raise DatasetError(str(path), "empty id", line=number, field="query-id")
        if not did:
            raise DatasetError(str(path), "empty id", line=number, field="corpus-id")
        if not _is_number(score):
            raise DatasetError(
                str(path), f"expected a number, got {score!r}", line=number, field="score"
            )
        yield number, (qid, did, float(score))


#: Names a header's score column goes by (besides BEIR's ``score``).
_SCORE_NAMES = {"score", "relevance", "rel", "label", "grade", "judgment", "judgement"}


def _is_header(cells: Sequence[str]) -> bool:
    """Whether a qrels file's first line names its columns rather than judging a document:
    BEIR's header, a score column named as such, or both id columns named ``...id``."""
    names = tuple(c.strip().lower() for c in cells)
    if names == _QRELS_HEADER or names[2] in _SCORE_NAMES:
        return True
    ids = all(n.replace("_", "").replace("-", "").endswith("id") for n in names[:2])
    return ids and not _is_number(names[2])


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False
