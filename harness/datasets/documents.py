"""A documents file beside a question file (``dataset.corpus=PATH``): the corpus a corpus
retriever (bm25, dense, hybrid, chroma, custom, ...) searches, without a BEIR folder.

One document a record, with ``_id`` (BEIR's ``corpus.jsonl``) or ``id``, ``text`` and an
optional ``title``; other fields are ignored. The format follows the file's name:
``.parquet`` (or ``.pq``), ``.csv``, ``.tsv`` (tab-separated), anything else JSON lines
(``.jsonl``, ``.json``, ``.ndjson``). Every malformed record is a one-line ``DatasetError``
naming the file, line (row) and field; ids must be unique.
"""

from __future__ import annotations

import csv
import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from harness.core.errors import DatasetError
from harness.core.types import Corpus, Document, RagSample
from harness.datasets.fields import MappedColumns
from harness.datasets.parquet import read_parquet
from harness.datasets.reading import (
    allow_large_cells,
    decode_line,
    file_sha256,
    read_lines,
    setting_path,
    stat_file,
)

#: The columns a documents file may name its id by, in order of preference.
ID_COLUMNS = ("_id", "id")


def corpus_format(path: Path) -> str:
    """``parquet``, ``csv``, ``tsv`` or ``jsonl``, from the file's name."""
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix in (".csv", ".tsv"):
        return suffix[1:]
    return "jsonl"


class CorpusFile:
    """The documents of one file, read once (on first use) and kept.

    Args:
        path: The documents file (``dataset.corpus``).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.format = corpus_format(path)
        self._corpus: Corpus | None = None
        self._records = 0
        self._by_id: dict[str, Document] | None = None
        self._refs: tuple[set[str], set[str], set[str]] | None = None

    def check(self) -> None:
        """A ``DatasetError`` when the file is missing or is not a readable file."""
        if not stat_file(self.path):
            raise DatasetError(
                str(self.path), "file not found (dataset.corpus: a JSONL, Parquet or CSV file "
                "of documents with _id or id, text and an optional title)"
            )

    def corpus(self) -> Corpus:
        """The documents in file order, keyed by their content (``documents_key``)."""
        if self._corpus is None:
            # the BEIR readers' checks; imported here, as harness.datasets.beir imports
            # harness.datasets.files, which imports this module
            from harness.datasets.beir.files import documents_key

            self.check()
            docs: list[Document] = []
            first: dict[str, int] = {}
            for line, record in self._records_of():
                self._records += 1
                docs.append(_document(self.path, record, line, first))
            if not docs:
                raise DatasetError(str(self.path), "contains no documents (dataset.corpus)")
            self._corpus = Corpus(docs, documents_key(docs))
        return self._corpus

    def by_id(self) -> Mapping[str, Document]:
        """The documents by id: one index of the documents ``corpus`` read (shared by every
        caller: the corpus retrievers' documents, looked up, never read again)."""
        if self._by_id is None:
            self._by_id = {d.id: d for d in self.corpus().documents}
        return self._by_id

    def sha256(self) -> str:
        """The sha256 of the file's bytes."""
        return file_sha256(self.path)

    def describe(
        self, samples: Callable[[], Iterable[RagSample]] | None = None
    ) -> dict[str, Any]:
        """The file, its format, how many documents it holds and, given the ``samples``,
        how many of their reference ids it lacks (no retriever can return those: a corpus
        whose ids are spelled otherwise than the questions' scores 0 everywhere) and how many
        retrieved ids of samples without retrieved texts (said only when some are: such a
        sample gets no texts from the corpus, ``harness.datasets.corpus_texts``)."""
        docs = self.corpus().documents
        out: dict[str, Any] = {
            "corpus": str(self.path), "corpus_format": self.format, "documents": len(docs),
        }
        if samples is None:
            return out
        try:
            referenced, missing, unretrieved = self._references(samples)
        except DatasetError:
            return out  # the run already read them; a file changed since is said elsewhere
        out["reference_ids"] = len(referenced)
        out["reference_ids_missing_from_corpus"] = len(missing)
        if missing:
            out["reference_ids_missing_examples"] = sorted(missing)[:5]
        if unretrieved:
            out["retrieved_ids_missing_from_corpus"] = len(unretrieved)
            out["retrieved_ids_missing_examples"] = sorted(unretrieved)[:5]
        return out

    def check_references(
        self, samples: Callable[[], Iterable[RagSample]], field: str = "reference_context_ids"
    ) -> None:
        """A ``DatasetError`` naming ``field`` (the samples' column of reference ids) when
        the samples name reference ids and none of them is a document id of the corpus:
        written in another form (``os/path/join`` for ``os.path.join``), or another corpus.
        Some missing are counted (``describe``) and said on the console."""
        referenced, missing, _ = self._references(samples)
        if not referenced or len(missing) < len(referenced):
            return
        theirs = sorted(referenced)[0]
        ours = nearest(theirs, [d.id for d in self.corpus().documents])
        raise DatasetError(
            _source(samples), f"none of the {len(referenced)} reference ids is a document id "
            f"of the corpus {self.path} (a reference id: {theirs!r}; a corpus id: {ours!r}); "
            "write them as the corpus does, or give dataset.corpus the documents they name",
            field=field,
        )

    def _references(
        self, samples: Callable[[], Iterable[RagSample]]
    ) -> tuple[set[str], set[str], set[str]]:
        """The reference ids the samples name, those the corpus lacks, and the retrieved
        ids it lacks of samples that give ids without texts (read once)."""
        if self._refs is None:
            known = self.by_id()
            referenced: set[str] = set()
            unretrieved: set[str] = set()
            for sample in samples():
                referenced.update(sample.reference_context_ids or ())
                if sample.retrieved_contexts is None and sample.retrieved_context_ids:
                    unretrieved.update(d for d in sample.retrieved_context_ids if d not in known)
            self._refs = referenced, {d for d in referenced if d not in known}, unretrieved
        return self._refs

    def _records_of(self) -> Iterator[tuple[int, dict[str, Any]]]:
        if self.format == "parquet":
            columns = MappedColumns(str(self.path), {}, "dataset.corpus")
            for index, raw in read_parquet(self.path, columns):
                yield index + 1, raw
        elif self.format in ("csv", "tsv"):
            yield from _csv_records(self.path, "\t" if self.format == "tsv" else ",")
        else:
            from harness.datasets.beir.files import read_jsonl

            yield from read_jsonl(self.path)


def _document(path: Path, record: dict[str, Any], line: int, first: dict[str, int]) -> Document:
    """The document in ``record``; a ``DatasetError`` naming the line and field."""
    from harness.datasets.beir.files import id_field, text_field

    name = next((c for c in ID_COLUMNS if record.get(c) not in (None, "")), None)
    if name is None:
        raise DatasetError(
            str(path), "missing (a document needs _id or id)", line=line, field=ID_COLUMNS[0]
        )
    did = id_field(path, record, name, line)
    if did in first:
        raise DatasetError(
            str(path), f"duplicate id {did!r} (first used on line {first[did]})",
            line=line, field=name,
        )
    first[did] = line
    title = text_field(path, record, "title", line, required=False)
    text = text_field(path, record, "text", line, required=True)
    return Document(did, title, text)


def _csv_records(path: Path, delimiter: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line, record)`` for each data row of a CSV file with a header; an empty cell is
    an absent field."""
    allow_large_cells()
    lines = (decode_line(raw, path, number) for number, raw in read_lines(path))
    reader = csv.reader(lines, delimiter=delimiter, strict=True)
    try:
        header = next(reader, None)
        if header is None:
            return
        if not any(c in header for c in ID_COLUMNS) or "text" not in header:
            raise DatasetError(
                str(path), f"the header {header[:6]!r} lacks _id (or id) and text columns",
                line=1,
            )
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise DatasetError(
                    str(path), f"has {len(row)} columns but the header has {len(header)}",
                    line=reader.line_num,
                )
            record = {k: v for k, v in zip(header, row, strict=True) if v != ""}
            yield reader.line_num, record
    except csv.Error as e:
        raise DatasetError(str(path), f"malformed CSV ({e})", line=reader.line_num) from None


def nearest(name: str, ids: list[str], scan: int = 5000) -> str:
    """The id among (the first ``scan`` of) ``ids`` most like ``name``, for a hint."""
    import difflib

    shown = ids[:scan]
    match = difflib.get_close_matches(name, shown, n=1, cutoff=0.0)
    return match[0] if match else ids[0]


def _source(samples: Callable[[], Iterable[RagSample]]) -> str:
    """The file ``samples`` (a dataset's bound ``samples``) reads, for messages."""
    return str(getattr(getattr(samples, "__self__", None), "source", "the dataset"))


def corpus_file(value: object) -> CorpusFile | None:
    """The documents file ``dataset.corpus`` names, or ``None`` when it names none."""
    if value is None or value == "":
        return None
    return CorpusFile(setting_path("dataset.corpus", value))


def combined_sha256(parts: dict[str, str]) -> str:
    """The sha256 of the lines ``"<label> <sha256>"`` (the data file and its corpus)."""
    outer = hashlib.sha256()
    for label, digest in parts.items():
        outer.update(f"{label} {digest}\n".encode())
    return outer.hexdigest()
