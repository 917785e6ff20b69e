"""JSONL, CSV and Parquet datasets, read as a stream so that files of any size fit in memory."""

from __future__ import annotations

import csv
import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from harness.core.errors import ConfigError, DatasetError
from harness.core.types import Corpus, RagSample
from harness.datasets.documents import combined_sha256, corpus_file
from harness.datasets.fields import DOCUMENT_HINT, columnar, field_map
from harness.datasets.parquet import read_parquet
from harness.datasets.reading import (
    Signature,
    allow_large_cells,
    count_lines,
    decode_line,
    file_sha256,
    load_json,
    open_regular,
    read_lines,
    setting_path,
    stat_file,
)
from harness.datasets.records import RecordParser

__all__ = [
    "CsvDataset", "FileDataset", "JsonlDataset", "ParquetDataset", "SampleDataset", "batched",
    "decode_line",
]


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

    def describe(self) -> dict[str, Any]:
        """What a reader of the outputs needs to know about the data."""
        out: dict[str, Any] = {"format": self.format, "path": str(self.path)}
        return out if self.documents is None else {**out, **self.documents.describe(self.samples)}

    def corpus(self) -> Corpus | None:
        """The documents of ``dataset.corpus``; None without one. A ``DatasetError`` when
        no reference id of the samples is among them (``CorpusFile.check_references``)."""
        if self.documents is None:
            return None
        corpus = self.documents.corpus()
        self.documents.check_references(self.samples, self.fields["reference_context_ids"])
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
        self._hasher, self._complete = hashlib.sha256(), False
        for number, raw in read_lines(self.path, self._hasher.update, self._opened):
            yield number, decode_line(raw, self.path, number)
        self._complete = True

    def samples(self, limit: int | None = None) -> Iterator[RagSample]:
        """Yield validated samples in file order, at most ``limit``."""
        raise NotImplementedError

    def batches(self, batch_size: int, limit: int | None = None) -> Iterator[list[RagSample]]:
        """Yield lists of at most ``batch_size`` samples, at most ``limit`` in all."""
        return batched(self.samples(limit), batch_size)


class JsonlDataset(FileDataset):
    """One JSON object per line, fields named as in ragas (``dataset=jsonl``).

    Blank lines are skipped. A record without ``id`` gets its 0-based line index.
    """

    format = "jsonl"

    def samples(self, limit: int | None = None) -> Iterator[RagSample]:
        """Yield validated samples in file order, at most ``limit``."""
        parser = RecordParser(str(self.path), self.fields, cells_are_text=False)
        count = 0
        for number, text in self._lines():
            if limit is not None and count >= limit:
                break
            if not text.strip():
                continue
            if count == 0 and self.format == "jsonl":
                yield first_record(parser, text, self.path, number)
            else:
                yield parser.parse(load_json(text, self.path, number), number - 1, number)
            count += 1
        parser.columns.finish()


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


def csv_delimiter(value: object) -> str:
    """The one-character column separator ``dataset.delimiter`` names (``\\t``: a tab)."""
    if value == "\\t":
        return "\t"
    if not isinstance(value, str) or len(value) != 1 or value in '\r\n"':
        raise ConfigError(
            "dataset.delimiter: expected one character other than a quote or a newline, "
            f"such as ',' ';' '|' or '\\t' (a tab), got {value!r}"
        )
    return value


class CsvDataset(FileDataset):
    """A CSV file with a header row (``dataset=csv``).

    List fields (``retrieved_contexts``, ids, ...) hold a JSON list, or the Python-literal
    list that ragas's ``to_csv`` writes. An empty cell means the field is absent. A row
    without ``id`` gets its 0-based row index.

    Args:
        path: The file to read.
        fields: Harness field -> column name.
        delimiter: The column separator: one character; ``\\t`` for a tab.
        corpus: A documents file for a corpus retriever.
    """

    format = "csv"

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        fields: Mapping[str, str] | None = None,
        delimiter: str = ",",
        corpus: str | os.PathLike[str] | None = None,
    ) -> None:
        super().__init__(path, fields, corpus)
        self.delimiter = csv_delimiter(delimiter)

    def samples(self, limit: int | None = None) -> Iterator[RagSample]:
        """Yield validated samples in file order, at most ``limit``."""
        parser = RecordParser(str(self.path), self.fields, cells_are_text=True)
        allow_large_cells()
        lines = self._lines()
        reader = csv.reader((text for _, text in lines), delimiter=self.delimiter, strict=True)
        try:
            header = next(reader, None)
            if header is None:
                return
            seen: set[str] = set()
            for name in header:
                if name in seen:
                    raise DatasetError(
                        str(self.path), "appears more than once in the header", line=1, field=name
                    )
                seen.add(name)
            parser.columns.check(seen, "not in the header", line=1)
            for index, row in enumerate(reader):
                if limit is not None and index >= limit:
                    return
                if len(row) != len(header):
                    if not any(cell.strip() for cell in row):
                        continue
                    raise DatasetError(
                        str(self.path),
                        f"has {len(row)} columns but the header has {len(header)}",
                        line=reader.line_num,
                    )
                yield parser.parse(dict(zip(header, row, strict=True)), index, reader.line_num)
        except csv.Error as e:
            raise DatasetError(
                str(self.path), f"malformed CSV ({e})", line=reader.line_num
            ) from None


class ParquetDataset(FileDataset):
    """A Parquet file (``dataset=parquet``), e.g. ragas's ``EvaluationDataset.to_pandas()``
    saved with ``to_parquet``: list columns hold lists. Read in row batches with pyarrow.

    Args:
        path: The file to read.
        fields: Harness field -> column name.
    """

    format = "parquet"

    def samples(self, limit: int | None = None) -> Iterator[RagSample]:
        """Yield validated samples in file order, at most ``limit`` (row n is "line" n+1)."""
        parser = RecordParser(str(self.path), self.fields, cells_are_text=False)
        for index, raw in read_parquet(self.path, parser.columns, limit):
            yield parser.parse(raw, index, index + 1)

    def estimate_count(self) -> int:
        """The row count from the file's metadata (0 when it cannot be read)."""
        import pyarrow.parquet as pq

        try:
            with open_regular(self.path) as f:
                return int(pq.ParquetFile(f).metadata.num_rows)
        except Exception:
            return 0


class SampleDataset(JsonlDataset):
    """The small dataset bundled with the package (``dataset=sample``, the default).

    30 hand-written questions with every field any variant needs; see
    ``harness/data/SOURCE.md`` for its source and licence (CC0).
    """

    format = "sample"

    def __init__(self) -> None:
        super().__init__(Path(__file__).resolve().parents[1] / "data" / "sample_rag.jsonl")


def jsonl_file(dataset: object) -> JsonlDataset | None:
    """``dataset`` when it is a JSONL file, which can be split at line ends by byte ranges
    (``harness.shards``); else ``None``."""
    return dataset if isinstance(dataset, JsonlDataset) else None
