"""Any collection of the ``ir_datasets`` package (``dataset=ir_datasets dataset.name=ID``).

``ir_datasets`` (https://ir-datasets.com) names hundreds of IR collections by id
(``beir/scifact/test``, ``msmarco-passage/trec-dl-2019/judged``, ...) and keeps what it
downloads in its home folder (``$IR_DATASETS_HOME``, else ``~/.ir_datasets``). This dataset
reads an id's documents, queries and qrels through its API into the samples
``dataset=beir`` makes (``BeirDataset``: one sample per judged query, in query order, the
judged documents and their grades, the relevant texts). The package is an extra:
``pip install 'harness-context-precision[ir]'``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from harness.core.errors import ConfigError, DatasetError, HarnessError, closest
from harness.core.text import one_line, text_problem
from harness.core.types import Document
from harness.datasets.beir.dataset import BeirDataset
from harness.datasets.beir.files import Judged, documents_key

MISSING_PACKAGE = (
    "dataset=ir_datasets needs the ir-datasets package: "
    "pip install 'harness-context-precision[ir]'"
)


def ir_datasets_module() -> ModuleType:
    """The ``ir_datasets`` package, or a one-line ``ConfigError`` saying how to install it."""
    try:
        import ir_datasets  # type: ignore[import-untyped, import-not-found, unused-ignore]
    except ImportError:
        raise ConfigError(MISSING_PACKAGE) from None
    module: ModuleType = ir_datasets
    return module


class IrDatasetsDataset(BeirDataset):
    """One ``ir_datasets`` id with qrels, as ``dataset=beir`` reads a BEIR folder.

    A document's text is ``"title\\n\\ntext"`` (``Document.content``) when its record has a
    ``text`` field (BEIR, MS MARCO, ...), else ir_datasets' ``default_text()``; a query's is
    its ``text`` field, else ``default_text()``. Nothing is downloaded by the harness itself:
    what ir_datasets cannot fetch or find in its home folder is a one-line error naming it.

    Args:
        name: The ir_datasets id, e.g. ``beir/scifact/test`` (``ir_datasets list`` names
            them); it must have qrels and queries, and documents for a corpus retriever.
        limit: Use only the first N judged queries (null: all).
        min_grade: The lowest grade whose document text goes into ``reference_contexts``.
        answers: A JSONL file of ``{"query_id": ..., "answer": ...}`` giving reference
            answers (``reference``), for the LLM-judged variants.
        corpus_limit: Load only the first N documents, plus every document judged for the
            selected queries (null: all).
    """

    format = "ir_datasets"

    def __init__(
        self,
        name: str,
        limit: int | None = None,
        min_grade: float = 1,
        answers: str | os.PathLike[str] | None = None,
        corpus_limit: int | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip() or text_problem(name) is not None:
            raise ConfigError(
                f"dataset.name: expected an ir_datasets id such as beir/scifact/test, got {name!r}"
            )
        super().__init__(name, "test", limit, min_grade, answers, corpus_limit)
        self.name = name.strip()
        self.source = f"ir_datasets:{self.name}"
        self._dataset: Any = None

    # -- where things are, for messages ---------------------------------------------------

    @property
    def corpus_path(self) -> Path:
        return Path(f"{self.source} (docs)")

    @property
    def queries_path(self) -> Path:
        return Path(f"{self.source} (queries)")

    @property
    def qrels_path(self) -> Path:
        return Path(f"{self.source} (qrels)")

    def _handle(self) -> Any:
        """ir_datasets' dataset object; a ``ConfigError`` for an id it does not know or
        one without queries and qrels."""
        if self._dataset is None:
            ir = ir_datasets_module()
            known = list(ir.registry)
            with self._reading("dataset"):
                try:
                    dataset = ir.load(self.name)
                except KeyError:
                    dataset = None
            if dataset is None:
                raise ConfigError(
                    f"dataset.name: ir_datasets has no dataset {self.name!r}"
                    f"{closest(self.name, known)}; `ir_datasets list` names them all"
                )
            lacking = [p for p in ("queries", "qrels") if not getattr(dataset, f"has_{p}")()]
            if lacking:
                subsets = [k for k in known if k.startswith(f"{self.name}/")][:4]
                hint = f" (its subsets: {', '.join(subsets)})" if subsets else ""
                raise ConfigError(
                    f"dataset.name: ir_datasets' {self.name!r} has no "
                    f"{' and no '.join(lacking)}; name a collection with both{hint}"
                )
            self._dataset = dataset
        return self._dataset

    @contextlib.contextmanager
    def _reading(self, what: str) -> Iterator[None]:
        """ir_datasets' own log lines kept quiet, and whatever it raises as one line."""
        ir = ir_datasets_module()
        logger: logging.Logger = ir.log.easy().logger()
        level = logger.level
        logger.setLevel(logging.ERROR)
        try:
            yield
        except HarnessError:
            raise
        except Exception as e:
            if not _fetching(e):
                raise DatasetError(
                    self.source, f"ir_datasets could not read its {what} ({_why(e)})"
                ) from None
            home = ir.util.home_path()
            raise DatasetError(
                self.source,
                f"ir_datasets could not fetch its {what} ({_why(e)}); ir_datasets keeps its "
                f"files in {home} (set IR_DATASETS_HOME to move it): place them there, or run "
                "where it can download them",
            ) from None
        finally:
            logger.setLevel(level)

    # -- the dataset interface (the rest is BeirDataset's) ------------------------------

    def check(self) -> None:
        """Fail early: the package, the id, and its queries and qrels (fetched now)."""
        self._handle()
        self._load_queries()
        self._load_qrels()
        if self.answers_path is not None:
            self._load_answers()

    def sha256(self) -> str:
        """Content hash of what was read: queries, qrels and documents (and answers)."""
        outer = hashlib.sha256()
        parts = {
            "queries": json.dumps(self._load_queries(), ensure_ascii=False, sort_keys=True),
            "qrels": json.dumps(self._load_qrels(), ensure_ascii=False, sort_keys=True),
            "docs": documents_key(self._load_documents()),
            "answers": json.dumps(self._load_answers(), ensure_ascii=False, sort_keys=True),
        }
        for label, text in parts.items():
            outer.update(f"{label} {hashlib.sha256(text.encode()).hexdigest()}\n".encode())
        return outer.hexdigest()

    def _load_queries(self) -> dict[str, str]:
        if self._queries is None:
            dataset = self._handle()
            queries: dict[str, str] = {}
            with self._reading("queries"):
                for query in dataset.queries_iter():
                    qid = str(query.query_id)
                    queries[qid] = self._text(query, "query", qid)
            self._queries = queries
        return self._queries

    def _load_qrels(self) -> dict[str, Judged]:
        if self._qrels is None:
            dataset = self._handle()
            grades: dict[str, dict[str, float]] = {}
            with self._reading("qrels"):
                for qrel in dataset.qrels_iter():
                    qid, did, grade = str(qrel.query_id), str(qrel.doc_id), float(qrel.relevance)
                    judged = grades.setdefault(qid, {})
                    if judged.setdefault(did, grade) != grade:
                        raise DatasetError(
                            str(self.qrels_path), f"query {qid!r}, document {did!r} judged "
                            f"{grade:g} and {judged[did]:g}", field="relevance")
            self._qrels = {q: list(docs.items()) for q, docs in grades.items()}
        return self._qrels

    def _load_documents(self) -> list[Document]:
        if self._documents is None:
            dataset = self._handle()
            if not dataset.has_docs():
                raise ConfigError(
                    f"dataset.name: ir_datasets' {self.name!r} has no documents for a corpus "
                    "retriever to search"
                )
            keep: set[str] = set()
            if self.corpus_limit is not None:
                qrels = self._load_qrels()
                keep = {d for q in self._selected() for d, _ in qrels[q]}
            docs: list[Document] = []
            seen, count = set(), 0
            with self._reading("documents"):
                for doc in dataset.docs_iter():
                    count += 1
                    did = str(doc.doc_id)
                    if did in seen:
                        raise DatasetError(str(self.corpus_path), f"duplicate id {did!r}")
                    seen.add(did)
                    if self.corpus_limit is None or len(docs) < self.corpus_limit or did in keep:
                        docs.append(self._document(doc, did))
            if not docs:
                raise DatasetError(str(self.corpus_path), "contains no documents")
            self._documents, self._docs, self._corpus_lines = docs, {d.id: d for d in docs}, count
        return self._documents

    def describe(self) -> dict[str, Any]:
        """BeirDataset's counts, with the id, the package's version and its home folder."""
        out = super().describe()
        del out["split"]
        ir = ir_datasets_module()
        out.update({"path": self.source, "name": self.name, "ir_datasets": ir.__version__,
                    "ir_datasets_home": str(ir.util.home_path())})
        return out

    # -- records ----------------------------------------------------------------------

    def _document(self, doc: Any, did: str) -> Document:
        if "text" in doc._fields:
            title = getattr(doc, "title", "") or ""
            return Document(did, self._checked(title, "title", did),
                            self._checked(doc.text, "text", did))
        return Document(did, "", self._checked(doc.default_text(), "text", did))

    def _text(self, record: Any, kind: str, rid: str) -> str:
        text = record.text if "text" in record._fields else record.default_text()
        return self._checked(text, f"{kind} text", rid)

    def _checked(self, value: object, field: str, rid: str) -> str:
        if not isinstance(value, str):
            raise DatasetError(self.source, f"{rid!r}: expected a string, got "
                               f"{type(value).__name__}", field=field)
        problem = text_problem(value)
        if problem is not None:
            raise DatasetError(self.source, f"{rid!r}: {problem}", field=field)
        return value


def _fetching(error: BaseException) -> bool:
    """Whether ``error`` is ir_datasets failing to get a file (requests' errors and a
    missing local file are ``OSError``s; all its sources failing, a ``RuntimeError``)."""
    return isinstance(error, OSError) or (
        isinstance(error, RuntimeError) and "download" in str(error).lower()
    )


def _why(error: BaseException) -> str:
    """``Type: message`` on one line, short."""
    text = one_line(str(error), 200)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
