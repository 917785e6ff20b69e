"""A TREC run scored against TREC qrels (``dataset=trec``), as trec_eval scores it.

::

    run     q1 Q0 d7 1 12.5 bm25      qid Q0 docid rank score tag, one retrieved document a line
    qrels   q1 0 d7 2                 qid iteration docid grade, one judgment a line

One sample per query of the run that has judgments (trec_eval's default; ``complete=true``
adds the judged queries the run lacks, with nothing retrieved, as ``trec_eval -c``). Each
query's documents are ranked as trec_eval ranks them: by score, highest first, ties by
document id in descending order; the rank column is read but not used. Scores are kept
as C ``float`` before ranking, as trec_eval 9.x and pytrec_eval keep them (``score_type:
double``: as trec_eval 10.0), so scores closer than a float's precision tie. Comment lines
(``#``), blank lines and text after a run line's tag are skipped, a fractional grade is
truncated (as trec_eval does: ``trec_files``). With ``queries``
(a TSV of ``qid<TAB>text`` or BEIR's ``queries.jsonl``) the samples have their questions,
and with ``corpus`` (a documents file, as ``dataset.corpus`` of the file datasets) the
retrieved and relevant documents have their texts, for the string and LLM-judged variants.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from harness.core.capabilities import Splittable, Traced
from harness.core.errors import ConfigError, DatasetError
from harness.core.types import Corpus, Document, RagSample
from harness.core.validation import check_value
from harness.datasets.beir.files import load_answers
from harness.datasets.documents import combined_sha256, corpus_file
from harness.datasets.files import batched
from harness.datasets.reading import file_sha256, setting_path, stat_file
from harness.datasets.trec_files import (
    Judged,
    Ranked,
    ScoreType,
    load_trec_qrels,
    load_trec_queries,
)
from harness.datasets.trec_index import RunIndex
from harness.datasets.trec_table import IdTable, Qrels


def _required(key: str, value: object, what: str) -> Path:
    if value is None or value == "":
        raise ConfigError(f"dataset.{key}: no file given; set dataset.{key}=FILE ({what})")
    return setting_path(f"dataset.{key}", value)


class TrecDataset:
    """A TREC run and its qrels (``dataset=trec``).

    Args:
        run: The run file (``qid Q0 docid rank score tag``).
        qrels: The qrels file (``qid iteration docid grade``).
        queries: The query texts (``qid<TAB>text``, or a ``.jsonl`` of ``{_id, text}``).
        corpus: A documents file (JSONL, Parquet, CSV: ``_id`` or ``id``, ``text``,
            optional ``title``) giving the documents' texts.
        answers: A JSONL file of ``{"query_id", "answer"}``: reference answers for the
            LLM-judged variants (as ``dataset=beir``'s).
        min_grade: The lowest grade that counts as relevant (trec_eval's ``-l``).
        complete: Also score the judged queries the run lacks, as 0 (``trec_eval -c``).
        score_type: How the run's scores are kept before ranking: ``float`` (C float, as
            trec_eval 9.x and pytrec_eval: scores within a float's precision tie, and the
            greater document id wins) or ``double`` (as trec_eval 10.0).
        limit: Use only the first N queries (null: all).
    """

    format = "trec"
    #: Split by sample index (``run.shards``); not read from traces.
    splittable: Splittable | None = None
    traced: Traced | None = None

    def __init__(
        self,
        run: str | os.PathLike[str] | None,
        qrels: str | os.PathLike[str] | None,
        queries: str | os.PathLike[str] | None = None,
        corpus: str | os.PathLike[str] | None = None,
        answers: str | os.PathLike[str] | None = None,
        min_grade: float = 1,
        complete: bool = False,
        limit: int | None = None,
        score_type: ScoreType = "float",
    ) -> None:
        self.run_path = _required("run", run, "qid Q0 docid rank score tag")
        self.qrels_path = _required("qrels", qrels, "qid 0 docid grade")
        self.queries_path = None if queries in (None, "") else setting_path(
            "dataset.queries", queries
        )
        self.documents = corpus_file(corpus)
        self.answers_path = None if answers in (None, "") else setting_path(
            "dataset.answers", answers
        )
        if isinstance(min_grade, bool) or not isinstance(min_grade, (int, float)) or (
            not math.isfinite(min_grade)
        ):
            raise ConfigError(f"dataset.min_grade: expected a finite number, got {min_grade!r}")
        if not isinstance(complete, bool):
            raise ConfigError(f"dataset.complete: expected true or false, got {complete!r}")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or limit < 0):
            raise ConfigError(f"dataset.limit: expected an integer >= 0 or null, got {limit!r}")
        check_value("dataset.score_type", ScoreType, score_type)
        self.min_grade, self.complete, self.limit = float(min_grade), complete, limit
        self.score_type: ScoreType = score_type
        self.source = str(self.run_path)
        self._run: RunIndex | None = None
        self._qrels: Qrels | None = None
        self._ids: IdTable | None = None
        self._queries: dict[str, str] | None = None
        self._answers: dict[str, str] | None = None

    def _files(self) -> list[tuple[str, Path]]:
        files = [("run", self.run_path), ("qrels", self.qrels_path)]
        files += [(k, p) for k, p in (("queries", self.queries_path),
                                      ("answers", self.answers_path)) if p is not None]
        return files

    def check(self) -> None:
        """Fail early, naming the missing file and its setting."""
        for key, path in self._files():
            if not stat_file(path):
                raise DatasetError(str(path), f"file not found (dataset.{key})")
        if self.documents is not None:
            self.documents.check()

    def sha256(self) -> str:
        """A hash of every file read (run, qrels, queries, corpus)."""
        parts = {key: file_sha256(path) for key, path in self._files()}
        if self.documents is not None:
            parts["corpus"] = self.documents.sha256()
        return combined_sha256(parts)

    def corpus(self) -> Corpus | None:
        """The documents of ``dataset.corpus``; None without one."""
        return None if self.documents is None else self.documents.corpus()

    # -- loading (each file checked once; the run indexed, the rest kept) -----------------

    def _load(self) -> tuple[RunIndex, Qrels, dict[str, str]]:
        if self._run is None:
            self._run = RunIndex(self.run_path, self.score_type).build()
            if not len(self._run):
                raise DatasetError(str(self.run_path), "holds no ranked document "
                                   "(lines of qid Q0 docid rank score tag; dataset.run)")
        if self._qrels is None:
            self._qrels = load_trec_qrels(self.qrels_path, self._run.table)
            if not self._qrels:
                raise DatasetError(str(self.qrels_path), "holds no judgment (lines of qid 0 "
                                   "docid grade; dataset.qrels)")
            self._ids = self._run.table
            self._ids.seal()  # ids are only read by index from now on
        if self._queries is None:
            path = self.queries_path
            self._queries = {} if path is None else load_trec_queries(path)
        if self._answers is None:
            self._answers = {} if self.answers_path is None else load_answers(self.answers_path)
        return self._run, self._qrels, self._queries

    def _selected(self, limit: int | None = None) -> Iterator[tuple[str, int]]:
        """``(query id, index)`` of the run's judged queries in run order (then, with
        ``complete``, of the judged queries the run lacks, in qrels order), cut to
        ``limit`` and to ``dataset.limit``: read off the shared table, nothing kept."""
        run, qrels, _ = self._load()
        assert self._ids is not None
        left = min(x for x in (limit, self.limit, len(self._ids)) if x is not None)
        for qid, i in self._ids.items():  # the run's queries first, then the qrels'
            if left <= 0 or (i >= run.count and not self.complete):
                return
            if qrels.has(i):
                left -= 1
                yield qid, i

    def _doc_index(self) -> Mapping[str, Document] | None:
        """The corpus by id (one index, kept: ``CorpusFile.by_id``); None without one."""
        return None if self.documents is None else self.documents.by_id()

    # -- the dataset interface ---------------------------------------------------------

    def estimate_count(self) -> int:
        """How many samples there are."""
        run, qrels, _ = self._load()
        n = qrels.count(0, run.count) + (qrels.count(run.count) if self.complete else 0)
        return n if self.limit is None else min(n, self.limit)

    def samples(self, limit: int | None = None) -> Iterator[RagSample]:
        """One sample per selected query, at most ``limit``."""
        run, qrels, queries = self._load()
        docs = self._doc_index()
        if not self.estimate_count() and self.limit != 0:
            raise DatasetError(
                str(self.run_path),
                f"none of its {len(run)} queries is among the {len(qrels)} judged in "
                f"{self.qrels_path} (e.g. {qrels.first!r}; the run's first is "
                f"{next(self._ids.items())[0] if self._ids else ''!r}): the query ids must match",
            )
        with run.reader() as reader:
            for qid, i, ranked in reader.ranked(self._selected(limit)):
                yield self._sample(qid, ranked, qrels.at(i), queries, docs)

    def _sample(self, qid: str, ranked: Ranked, judged: Judged, queries: dict[str, str],
                docs: Mapping[str, Document] | None) -> RagSample:
        ids = tuple(d for d, _ in ranked)
        return RagSample(
            id=qid,
            user_input=queries.get(qid),
            reference=(self._answers or {}).get(qid),
            retrieved_context_ids=ids,
            retrieved_contexts=None if docs is None else self._texts(qid, ids, docs),
            reference_context_ids=tuple(d for d, _ in judged),
            reference_context_grades=tuple(g for _, g in judged),
            reference_contexts=None if docs is None else tuple(
                docs[d].content for d, g in judged if g >= self.min_grade and d in docs
            ),
        )

    def _texts(self, qid: str, ids: tuple[str, ...],
               docs: Mapping[str, Document]) -> tuple[str, ...]:
        missing = next((d for d in ids if d not in docs), None)
        if missing is not None:
            raise DatasetError(
                str(self.run_path),
                f"query {qid!r} retrieves document {missing!r}, which is not in the corpus "
                f"{self.documents.path if self.documents else ''}; give dataset.corpus the "
                "documents the run was made from",
            )
        return tuple(docs[d].content for d in ids)

    def batches(self, batch_size: int, limit: int | None = None) -> Iterator[list[RagSample]]:
        """Lists of at most ``batch_size`` samples, at most ``limit`` in all."""
        return batched(self.samples(limit), batch_size)

    def describe(self) -> dict[str, Any]:
        """The files, the counts, and what was left out."""
        run, qrels, queries = self._load()
        grades: Counter[str] = Counter()
        with_relevant = 0
        for _, i in self._selected():
            judged = qrels.grades(i)
            grades.update(f"{g:g}" for g in judged)
            with_relevant += any(g >= self.min_grade for g in judged)
        out: dict[str, Any] = {
            "format": self.format,
            "path": str(self.run_path),
            "run": str(self.run_path),
            "qrels": str(self.qrels_path),
            "run_tags": sorted(run.tags)[:10],
            "order": f"score (as C {self.score_type}) descending, ties by document id "
                     "descending (trec_eval)",
            "score_type": self.score_type,
            "queries": self.estimate_count(),
            "queries_with_relevant": with_relevant,
            "run_queries_without_qrels": len(run) - qrels.count(0, len(run)),
            "qrels_queries_missing_from_run": qrels.count(len(run)),
            "complete": self.complete,
            "grades": dict(sorted(grades.items(), key=lambda kv: float(kv[0]))),
            "min_grade": self.min_grade,
        }
        if qrels.fractional:  # as trec_eval reads them; said, as the grades above show
            out["fractional_grades_truncated"] = qrels.fractional
            out["fractional_grades_lines"] = qrels.fractional_lines
        if self.queries_path is not None:
            out["queries_file"] = str(self.queries_path)
            out["queries_without_text"] = sum(1 for q, _ in self._selected() if q not in queries)
        if self.answers_path is not None:
            out["answers"] = str(self.answers_path)
            answers = self._answers or {}
            out["queries_with_answer"] = sum(1 for q, _ in self._selected() if q in answers)
        if self.documents is not None:
            out.update(self.documents.describe(self.samples))  # qrels ids it lacks: counted
        return out
