"""What every file dataset shares (``harness.datasets.files``, the JSON-lines shards of
``harness.datasets.splitting``): streaming, content hash, record-count estimate."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from harness.core.capabilities import Splittable, Traced
from harness.core.errors import DatasetError
from harness.core.types import STRATUM, Corpus, RagSample
from harness.datasets.corpus_texts import fill_from_corpus
from harness.datasets.documents import combined_sha256, corpus_file
from harness.datasets.fields import DOCUMENT_HINT, columnar, field_map
from harness.datasets.reading import (
    Signature,
    count_lines,
    decode_line,
    file_sha256,
    load_json,
    read_lines,
    setting_path,
    stat_file,
)
from harness.datasets.records import RecordParser


def batched(samples: Iterable[RagSample], size: int) -> Iterator[list[RagSample]]:
    """Lists of at most ``size`` consecutive samples (``itertools.batched`` from 3.12)."""
    batch: list[RagSample] = []
    for sample in samples:
        batch.append(sample)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


class FileDataset:
    """Common reading machinery: streaming, content hash, record-count estimate.

    Args:
        path: The file to read.
        fields: Harness field -> column name, for files that use other names,
            e.g. ``{user_input: question, retrieved_contexts: contexts}``.
        corpus: A documents file (``harness.datasets.documents``) for a corpus retriever.
    """

    format = "file"
    #: The lowest reference grade that counts as relevant.
    min_grade: float = 1.0
    #: The column separator (CSV files set their own).
    delimiter = ","

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        fields: Mapping[str, str] | None = None,
        corpus: str | os.PathLike[str] | None = None,
    ) -> None:
        if path is None or (isinstance(path, (str, os.PathLike)) and os.fspath(path) == ""):
            raise DatasetError(f"dataset={self.format}", "no file given; set dataset.path=FILE")
        self.path = setting_path("dataset.path", path)
        self.source = str(self.path)
        self.fields = field_map(fields)
        self.documents = corpus_file(corpus)
        self._hasher = hashlib.sha256()
        self._complete = False
        self._signature: Signature | None = None

    def check(self) -> None:
        """Fail early, before any work, when the file cannot be read."""
        if not stat_file(self.path):
            raise DatasetError(str(self.path), "file not found")
        if self.documents is not None:
            self.documents.check()

    def estimate_count(self) -> int:
        """Roughly how many records the file holds (its line count), for progress bars; 0
        when the file cannot be read (reading the samples then says why, and where)."""
        try:
            return count_lines(self.path) - (self.format == "csv")
        except DatasetError:
            return 0

    @property
    def splittable(self) -> Splittable | None:
        """Split by sample index (a JSON-lines file splits itself: ``JsonlDataset``)."""
        return None

    @property
    def traced(self) -> Traced | None:
        """Not read from traces."""
        return None

    def stratify(self, column: str) -> None:
        """Give each sample the value of ``column`` as its ``stratum`` (``run.strata``)."""
        self.fields = field_map({**self.fields, STRATUM: column})

    def first_record(self) -> dict[str, Any]:
        """The file's first record as the file holds it, for lines naming its columns."""
        from harness.datasets.columns import file_record

        return file_record(self.path, self.format, self.fields, self.delimiter)

    def describe(self) -> dict[str, Any]:
        """What a reader of the outputs needs to know about the data."""
        out: dict[str, Any] = {"format": self.format, "path": str(self.path)}
        if self.documents is None:
            return out
        return {**out, **self.documents.describe(self.read_samples)}

    def corpus(self) -> Corpus | None:
        """The documents of ``dataset.corpus``; None without one. A ``DatasetError`` when
        no reference id of the samples is among them (``CorpusFile.check_references``)."""
        if self.documents is None:
            return None
        corpus = self.documents.corpus()
        self.documents.check_references(self.read_samples, self.fields["reference_context_ids"])
        return corpus

    def sha256(self) -> str:
        """Content hash of the whole file (computed while reading when read to the end;
        otherwise read again, and a ``DatasetError`` if it changed since)."""
        data = self._hasher.hexdigest() if self._complete else file_sha256(
            self.path, self._signature
        )
        if self.documents is None:
            return data
        return combined_sha256({"data": data, "corpus": self.documents.sha256()})

    def _opened(self, signature: Signature) -> None:
        self._signature = signature

    def _lines(self) -> Iterator[tuple[int, str]]:
        """Yield ``(1-based line number, decoded line with its newline)``."""
        for number, raw in self._raw_lines():
            yield number, decode_line(raw, self.path, number)

    def _raw_lines(self) -> Iterator[tuple[int, bytes]]:
        """Yield ``(1-based line number, line with its newline, as bytes)``, hashing the
        file on the way."""
        self._hasher, self._complete = hashlib.sha256(), False
        yield from read_lines(self.path, self._hasher.update, self._opened)
        self._complete = True

    def samples(self, limit: int | None = None) -> Iterator[RagSample]:
        """Yield validated samples in file order, at most ``limit``; with a corpus, each
        with the reference and retrieved texts it names by id only, looked up there
        (``harness.datasets.corpus_texts``)."""
        read = self.read_samples(limit)
        if self.documents is None:
            return read
        return fill_from_corpus(read, self.documents.by_id, self.min_grade)

    def read_samples(self, limit: int | None = None) -> Iterator[RagSample]:
        """Yield the file's samples as written, validated, at most ``limit``."""
        raise NotImplementedError

    def batches(self, batch_size: int, limit: int | None = None) -> Iterator[list[RagSample]]:
        """Yield lists of at most ``batch_size`` samples, at most ``limit`` in all."""
        return batched(self.samples(limit), batch_size)


def first_record(parser: RecordParser, text: str, path: Path, number: int) -> RagSample:
    """The first record of a JSON-lines file; where it fails because the file is one JSON
    document (a ragas column-oriented file, a list of records), the error says so."""
    raw: Any = None
    try:
        raw = load_json(text, path, number)
        return parser.parse(raw, number - 1, number)
    except DatasetError as e:
        if text.lstrip()[:1] in ("{", "[") and (
            raw is None or isinstance(raw, list) or columnar(raw, parser.fields)
        ):
            e.args = (f"{e}; {DOCUMENT_HINT}",)
        raise
