"""Datasets in BEIR layout: a corpus, queries and graded relevance judgments (``dataset=beir``).

A BEIR folder holds::

    corpus.jsonl         {"_id": "d1", "title": "...", "text": "..."}   one document a line
    queries.jsonl        {"_id": "q1", "text": "..."}                   one query a line
    qrels/<split>.tsv    query-id <TAB> corpus-id <TAB> score            header line first

This is the layout of ``beir.datasets.data_loader.GenericDataLoader``. Scores are graded
relevance (e.g. 0/1/2); a row with score 0 is a **judged negative**: kept as grade 0 (it is a
known non-relevant document, which graded metrics and judge studies need), and never
counted as relevant by a metric with ``min_grade >= 1``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.datasets.files import batched, decode_line
from harness.errors import ConfigError, DatasetError
from harness.retrievers.base import Document
from harness.types import RagSample

_BLOCK = 1 << 20
_QRELS_HEADER = ("query-id", "corpus-id", "score")


class BeirDataset:
    """One split of a BEIR folder, one sample per query that has judgments.

    Samples come in ``queries.jsonl`` order; queries without qrels in the split are
    skipped. Each sample has:

    - ``id``: the query id; ``user_input``: the query text;
    - ``reference_context_ids``: every judged document of the query, in qrels order,
      judged negatives (score 0) included; ``reference_context_grades``: their scores as
      floats, parallel to the ids;
    - ``reference_contexts``: the texts of the judged documents with grade >=
      ``min_grade`` that are in the corpus, in qrels order. A document's text is
      ``"title\\n\\ntext"``, or ``text`` alone when the title is empty (``Document.content``,
      the same text the retrievers index). So this list is **not** parallel to the ids;
      ``reference`` is the query's answer when an ``answers`` file is given;
    - no ``retrieved_*`` fields: a corpus retriever (``retriever=bm25``, ...) fills them.

    Args:
        path: The BEIR folder (relative paths are resolved from the current directory).
        split: The qrels file to use, ``qrels/<split>.tsv``.
        limit: Use only the first N judged queries (null: all).
        min_grade: The lowest grade whose document text goes into ``reference_contexts``.
            The id metrics have their own ``metric.min_grade``.
        answers: A JSONL file of ``{"query_id": ..., "answer": ...}`` giving reference
            answers (``reference``), for the LLM-judged variants.
        corpus_limit: Load only the first N documents of ``corpus.jsonl`` **plus every
            document judged for the selected queries**, so that relevant documents stay
            retrievable in a quick run over a small corpus (null: the whole corpus).
    """

    format = "beir"

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        split: str = "test",
        limit: int | None = None,
        min_grade: float = 1,
        answers: str | os.PathLike[str] | None = None,
        corpus_limit: int | None = None,
    ) -> None:
        if path is None or str(path) == "":
            raise DatasetError("dataset=beir", "no folder given; set dataset.path=DIR")
        if not isinstance(split, str) or not split or "/" in split or "\\" in split:
            raise ConfigError(f"dataset.split: expected a split name such as test, got {split!r}")
        for name, value in (("limit", limit), ("corpus_limit", corpus_limit)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise ConfigError(f"dataset.{name}: expected a number >= 0 or null, got {value!r}")
        if (
            isinstance(min_grade, bool)
            or not isinstance(min_grade, (int, float))
            or not math.isfinite(min_grade)
        ):
            raise ConfigError(f"dataset.min_grade: expected a number, got {min_grade!r}")
        self.path = Path(path).expanduser()
        self.split, self.limit, self.min_grade = split, limit, float(min_grade)
        self.answers_path = None if answers in (None, "") else Path(answers).expanduser()  # type: ignore[arg-type]
        self.corpus_limit = corpus_limit
        self._queries: dict[str, str] | None = None
        self._qrels: dict[str, list[tuple[str, float]]] | None = None
        self._qrels_rows = 0
        self._answers: dict[str, str] | None = None
        self._corpus: list[Document] | None = None
        self._docs: dict[str, Document] | None = None
        self._corpus_key: str | None = None
        self._corpus_lines = 0

    # -- files -------------------------------------------------------------------------

    @property
    def corpus_path(self) -> Path:
        return self.path / "corpus.jsonl"

    @property
    def queries_path(self) -> Path:
        return self.path / "queries.jsonl"

    @property
    def qrels_path(self) -> Path:
        return self.path / "qrels" / f"{self.split}.tsv"

    def _files(self) -> list[tuple[str, Path]]:
        files = [
            ("corpus.jsonl", self.corpus_path),
            ("queries.jsonl", self.queries_path),
            (f"qrels/{self.split}.tsv", self.qrels_path),
        ]
        if self.answers_path is not None:
            files.append(("answers", self.answers_path))
        return files

    def check(self) -> None:
        """Fail early, naming the missing folder or file."""
        if not self.path.exists():
            where = "" if self.path.is_absolute() else f" (resolved from {os.getcwd()})"
            raise DatasetError(
                str(self.path),
                f"folder not found{where}; set dataset.path=DIR to a BEIR folder with "
                "corpus.jsonl, queries.jsonl and qrels/<split>.tsv (dataset=scifact, trec_dl19 "
                "and dbpedia_entity look in $HARNESS_SHARED_DATA, else ../shared/data)",
            )
        if not self.path.is_dir():
            raise DatasetError(
                str(self.path), "is a file, not a BEIR folder (corpus.jsonl, queries.jsonl, qrels/)"
            )
        for label, file in self._files():
            if file.is_file():
                if not os.access(file, os.R_OK):
                    raise DatasetError(str(file), "file is not readable")
                continue
            if label.startswith("qrels/"):
                splits = sorted(p.stem for p in (self.path / "qrels").glob("*.tsv"))
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

    def sha256(self) -> str:
        """Content hash of the data: corpus, queries and the split's qrels (and answers).

        The sha256 of the lines ``"<name> <sha256 of the file>"``, one per file.
        """
        outer = hashlib.sha256()
        for label, file in self._files():
            outer.update(f"{label} {_file_sha256(file)}\n".encode())
        return outer.hexdigest()

    def corpus_key(self) -> str:
        """Content hash of the loaded documents (ids, titles, texts), for index caches.

        It changes when and only when the indexed text changes: not with the queries, the
        qrels or ``corpus.jsonl``'s metadata fields.
        """
        if self._corpus_key is None:
            hasher = hashlib.sha256()
            for doc in self.corpus():
                hasher.update(
                    json.dumps([doc.id, doc.title, doc.text], ensure_ascii=False).encode()
                )
                hasher.update(b"\n")
            self._corpus_key = hasher.hexdigest()
        return self._corpus_key

    # -- loading -----------------------------------------------------------------------

    def _load_queries(self) -> dict[str, str]:
        if self._queries is None:
            queries: dict[str, str] = {}
            first: dict[str, int] = {}
            for line, record in _jsonl(self.queries_path):
                qid = _id_field(self.queries_path, record, "_id", line)
                text = _text_field(self.queries_path, record, "text", line, required=True)
                if qid in first:
                    raise DatasetError(
                        str(self.queries_path),
                        f"duplicate id {qid!r} (first used on line {first[qid]})",
                        line=line,
                        field="_id",
                    )
                first[qid] = line
                queries[qid] = text
            self._queries = queries
        return self._queries

    def _load_qrels(self) -> dict[str, list[tuple[str, float]]]:
        if self._qrels is None:
            qrels: dict[str, dict[str, tuple[float, int]]] = {}
            rows = 0
            for line, (qid, did, grade) in _qrels(self.qrels_path):
                judged = qrels.setdefault(qid, {})
                if did in judged:
                    before, at = judged[did]
                    if before != grade:
                        raise DatasetError(
                            str(self.qrels_path),
                            f"query {qid!r}, document {did!r} judged {grade:g} here and "
                            f"{before:g} on line {at}",
                            line=line,
                            field="score",
                        )
                    continue
                judged[did] = (grade, line)
                rows += 1
            self._qrels = {q: [(d, g) for d, (g, _) in docs.items()] for q, docs in qrels.items()}
            self._qrels_rows = rows
        return self._qrels

    def _load_answers(self) -> dict[str, str]:
        if self._answers is None:
            answers: dict[str, str] = {}
            if self.answers_path is not None:
                for line, record in _jsonl(self.answers_path):
                    qid = _id_field(self.answers_path, record, "query_id", line)
                    answers[qid] = _text_field(
                        self.answers_path, record, "answer", line, required=True
                    )
            self._answers = answers
        return self._answers

    def _selected(self) -> list[str]:
        """The judged query ids, in queries.jsonl order, cut to ``limit``."""
        queries, qrels = self._load_queries(), self._load_qrels()
        ids = [q for q in queries if q in qrels]
        return ids if self.limit is None else ids[: self.limit]

    def corpus(self) -> list[Document]:
        """The documents, in corpus order (loaded once, then kept)."""
        if self._corpus is None:
            keep: set[str] | None = None
            if self.corpus_limit is not None:
                qrels = self._load_qrels()
                keep = {d for q in self._selected() for d, _ in qrels[q]}
            docs: list[Document] = []
            first: dict[str, int] = {}
            lines = 0
            for line, record in _jsonl(self.corpus_path):
                lines += 1
                did = _id_field(self.corpus_path, record, "_id", line)
                if did in first:
                    raise DatasetError(
                        str(self.corpus_path),
                        f"duplicate id {did!r} (first used on line {first[did]})",
                        line=line,
                        field="_id",
                    )
                first[did] = line
                title = _text_field(self.corpus_path, record, "title", line, required=False)
                text = _text_field(self.corpus_path, record, "text", line, required=True)
                if keep is None or len(docs) < self.corpus_limit or did in keep:  # type: ignore[operator]
                    docs.append(Document(did, title, text))
            if not docs:
                raise DatasetError(str(self.corpus_path), "contains no documents")
            self._corpus, self._corpus_lines = docs, lines
            self._docs = {d.id: d for d in docs}
        return self._corpus

    def _doc_index(self) -> dict[str, Document]:
        self.corpus()
        assert self._docs is not None
        return self._docs

    # -- the dataset interface ---------------------------------------------------------

    def estimate_count(self) -> int:
        """How many samples there are (judged queries, after ``limit``)."""
        return len(self._selected())

    def samples(self, limit: int | None = None) -> Iterator[RagSample]:
        """Yield one sample per judged query, in queries.jsonl order, at most ``limit``."""
        queries, qrels, answers = self._load_queries(), self._load_qrels(), self._load_answers()
        docs = self._doc_index()
        selected = self._selected()
        if limit is not None:
            selected = selected[:limit]
        for qid in selected:
            judged = qrels[qid]
            yield RagSample(
                id=qid,
                user_input=queries[qid],
                reference=answers.get(qid),
                reference_contexts=tuple(
                    docs[d].content for d, g in judged if g >= self.min_grade and d in docs
                ),
                reference_context_ids=tuple(d for d, _ in judged),
                reference_context_grades=tuple(g for _, g in judged),
            )

    def batches(self, batch_size: int, limit: int | None = None) -> Iterator[list[RagSample]]:
        """Yield lists of at most ``batch_size`` samples, at most ``limit`` in all."""
        return batched(self.samples(limit), batch_size)

    def describe(self) -> dict[str, Any]:
        """What a reader of the outputs needs to know about the data, with its gaps."""
        queries, qrels = self._load_queries(), self._load_qrels()
        docs = self._doc_index()
        selected = self._selected()
        grades: Counter[str] = Counter()
        missing_docs: set[str] = set()
        judged_rows = missing_rows = 0
        for qid in selected:
            for did, grade in qrels[qid]:
                grades[f"{grade:g}"] += 1
                judged_rows += 1
                if did not in docs:
                    missing_rows += 1
                    missing_docs.add(did)
        relevant = sum(1 for q in selected if any(g >= self.min_grade for _, g in qrels[q]))
        out: dict[str, Any] = {
            "format": self.format,
            "path": str(self.path),
            "split": self.split,
            "queries": len(selected),
            "queries_with_relevant": relevant,
            "documents": len(docs),
            "corpus_lines": self._corpus_lines,
            "qrels": judged_rows,
            "grades": dict(sorted(grades.items(), key=lambda kv: float(kv[0]))),
            "min_grade": self.min_grade,
            # Judged documents absent from the corpus: they still count for recall, but
            # no retriever can return them (and they have no reference text).
            "qrels_docs_missing_from_corpus": len(missing_docs),
            "qrels_rows_missing_from_corpus": missing_rows,
            "qrels_queries_missing_from_queries": sum(1 for q in qrels if q not in queries),
            "corpus_limit": self.corpus_limit,
        }
        if missing_docs:
            out["qrels_docs_missing_examples"] = sorted(missing_docs)[:5]
        if self.answers_path is not None:
            answers = self._load_answers()
            out["answers"] = str(self.answers_path)
            out["queries_with_answer"] = sum(1 for q in selected if q in answers)
        return out


# -- readers ---------------------------------------------------------------------------


def _file_sha256(path: Path) -> str:
    hasher = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_BLOCK):
            hasher.update(block)
    return hasher.hexdigest()


def _decoded_lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(1-based line number, text)`` for each line; a DatasetError on bad UTF-8."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed by the with below
    except OSError as e:
        raise DatasetError(str(path), f"cannot open ({e.strerror})") from None
    with f:
        for number, raw in enumerate(f, start=1):
            yield number, decode_line(raw, path, number)


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, text in _decoded_lines(path):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except ValueError as e:
            raise DatasetError(
                str(path), f"not valid JSON ({e.msg} at column {e.colno})", line=number
            ) from None
        if not isinstance(record, dict):
            raise DatasetError(
                str(path), f"expected a JSON object, got {type(record).__name__}", line=number
            )
        yield number, record


def _id_field(path: Path, record: dict[str, Any], field: str, line: int) -> str:
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
    return value


def _text_field(
    path: Path, record: dict[str, Any], field: str, line: int, *, required: bool
) -> str:
    value = record.get(field)
    if value is None:
        if required:
            raise DatasetError(str(path), "missing", line=line, field=field)
        return ""
    if not isinstance(value, str):
        raise DatasetError(
            str(path), f"expected a string, got {type(value).__name__}", line=line, field=field
        )
    return value


def _qrels(path: Path) -> Iterator[tuple[int, tuple[str, str, float]]]:
    """``(line, (query id, doc id, grade))`` per row; the header line is recognised and skipped.

    The header is the first non-blank line when its score column is not a number (BEIR
    writes ``query-id corpus-id score``); a file without one loses no judgment.
    """
    first = True
    for number, text in _decoded_lines(path):
        text = text.rstrip("\r\n")
        if not text.strip():
            continue
        cells = text.split("\t")
        if first:
            first = False
            if len(cells) == 3 and (
                tuple(c.strip().lower() for c in cells) == _QRELS_HEADER or not _is_number(cells[2])
            ):
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


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False
