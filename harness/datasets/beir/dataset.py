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
import math
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.core.capabilities import Splittable, Traced
from harness.core.errors import ConfigError, DatasetError
from harness.core.types import Corpus, Document, RagSample
from harness.datasets.beir.files import (
    Judged,
    check_folder,
    documents_key,
    load_answers,
    load_documents,
    load_qrels,
    load_queries,
)
from harness.datasets.fields import text_problem
from harness.datasets.files import batched
from harness.datasets.reading import file_sha256, setting_path


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
    #: Split by sample index (``run.shards``); not read from traces.
    splittable: Splittable | None = None
    traced: Traced | None = None

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
        _check_settings(split, limit, corpus_limit, min_grade)
        self.path = setting_path("dataset.path", path)
        self.source = str(self.path)
        self.split, self.limit, self.min_grade = split, limit, float(min_grade)
        self.answers_path = (
            None if answers is None or answers == "" else setting_path("dataset.answers", answers)
        )
        self.corpus_limit = corpus_limit
        self._queries: dict[str, str] | None = None
        self._qrels: dict[str, Judged] | None = None
        self._answers: dict[str, str] | None = None
        self._documents: list[Document] | None = None
        self._docs: dict[str, Document] = {}
        self._corpus: Corpus | None = None
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
        check_folder(self.path, self._files())

    def sha256(self) -> str:
        """Content hash of the data: corpus, queries and the split's qrels (and answers).

        The sha256 of the lines ``"<name> <sha256 of the file>"``, one per file.
        """
        outer = hashlib.sha256()
        for label, file in self._files():
            outer.update(f"{label} {file_sha256(file)}\n".encode())
        return outer.hexdigest()

    # -- loading (each file once, then kept) -------------------------------------------

    def _load_queries(self) -> dict[str, str]:
        if self._queries is None:
            self._queries = load_queries(self.queries_path)
        return self._queries

    def _load_qrels(self) -> dict[str, Judged]:
        if self._qrels is None:
            self._qrels = load_qrels(self.qrels_path)
        return self._qrels

    def _load_answers(self) -> dict[str, str]:
        if self._answers is None:
            path = self.answers_path
            self._answers = {} if path is None else load_answers(path)
        return self._answers

    def _selected(self) -> list[str]:
        """The judged query ids, in queries.jsonl order, cut to ``limit``."""
        queries, qrels = self._load_queries(), self._load_qrels()
        ids = [q for q in queries if q in qrels]
        return ids if self.limit is None else ids[: self.limit]

    def _load_documents(self) -> list[Document]:
        """The documents, in corpus order (with ``corpus_limit``: the first N and the
        judged ones)."""
        if self._documents is None:
            keep: set[str] = set()
            if self.corpus_limit is not None:
                qrels = self._load_qrels()
                keep = {d for q in self._selected() for d, _ in qrels[q]}
            docs, self._corpus_lines = load_documents(self.corpus_path, self.corpus_limit, keep)
            self._documents, self._docs = docs, {d.id: d for d in docs}
        return self._documents

    def _doc_index(self) -> dict[str, Document]:
        self._load_documents()
        return self._docs

    # -- the dataset interface ---------------------------------------------------------

    def corpus(self) -> Corpus:
        """The documents, in corpus order, keyed by their content hash (``documents_key``:
        it changes when the indexed text does, not with queries, qrels or metadata)."""
        if self._corpus is None:
            docs = self._load_documents()
            judged = sorted({d for q in self._selected() for d, _ in self._load_qrels()[q]})
            if docs and judged and all(d not in self._docs for d in judged):
                from harness.datasets.documents import nearest

                raise DatasetError(  # ids spelt otherwise, or another dataset's qrels
                    str(self.qrels_path), f"none of the {len(judged)} documents it judges is "
                    f"in {self.corpus_path} (a judged id: {judged[0]!r}; a corpus id: "
                    f"{nearest(judged[0], [d.id for d in docs])!r}); the qrels and the corpus "
                    "must name documents alike", field="corpus-id")
            self._corpus = Corpus(docs, documents_key(docs))
        return self._corpus

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


def _check_settings(
    split: object, limit: object, corpus_limit: object, min_grade: object
) -> None:
    """A ``ConfigError`` naming the first bad setting."""
    if (
        not isinstance(split, str)
        or not split.strip()
        or any(c in split for c in "/\\\x00")
        or text_problem(split) is not None
    ):
        raise ConfigError(
            f"dataset.split: expected a split name such as test (qrels/<split>.tsv), "
            f"got {split!r}"
        )
    for name, value in (("limit", limit), ("corpus_limit", corpus_limit)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 0
        ):
            raise ConfigError(f"dataset.{name}: expected an integer >= 0 or null, got {value!r}")
    if (
        isinstance(min_grade, bool)
        or not isinstance(min_grade, (int, float))
        or not math.isfinite(min_grade)
    ):
        raise ConfigError(f"dataset.min_grade: expected a finite number, got {min_grade!r}")
