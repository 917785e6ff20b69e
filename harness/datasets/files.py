"""JSONL, CSV and Parquet datasets, read as a stream so that files of any size fit in memory."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from harness.core.capabilities import Span, Splittable
from harness.core.errors import ConfigError, DatasetError
from harness.core.types import RagSample
from harness.datasets import splitting
from harness.datasets.filebase import FileDataset, batched, first_record
from harness.datasets.parquet import read_parquet
from harness.datasets.reading import (
    allow_large_cells,
    decode_line,
    load_json,
    open_regular,
)
from harness.datasets.records import RecordParser

_DECODE = msgspec.json.decode

__all__ = [
    "CsvDataset", "FileDataset", "JsonlDataset", "ParquetDataset", "SampleDataset", "batched",
    "decode_line",
]


class JsonlDataset(FileDataset):
    """One JSON object per line, fields named as in ragas (``dataset=jsonl``).

    Blank lines are skipped. A record without ``id`` gets its 0-based line index.
    """

    format = "jsonl"

    def read_samples(self, limit: int | None = None) -> Iterator[RagSample]:
        """Yield validated samples in file order, at most ``limit``."""
        parser = RecordParser(str(self.path), self.fields, cells_are_text=False)
        count = 0
        for number, raw in self._raw_lines():
            if limit is not None and count >= limit:
                break
            if count:  # valid UTF-8 and JSON, read from the bytes: the common line
                try:
                    record = _DECODE(raw)
                except (msgspec.MsgspecError, ValueError, RecursionError):
                    pass
                else:
                    yield parser.parse(record, number - 1, number)
                    count += 1
                    continue
            text = decode_line(raw, self.path, number)  # what is wrong, named as it is
            if not text.strip():
                continue
            if count == 0 and self.format == "jsonl":
                yield first_record(parser, text, self.path, number)
            else:
                yield parser.parse(load_json(text, self.path, number), number - 1, number)
            count += 1
        parser.columns.finish()

    @property
    def splittable(self) -> Splittable | None:
        """It splits itself at line ends (``run.shards``)."""
        return self

    def split_spans(self, count: int, limit: int | None) -> list[Span]:
        """``Splittable``: byte ranges of the file ending at line ends (``run.shards``)."""
        return splitting.byte_spans(self.path, count, limit)

    def split_part(self, span: Span) -> splitting.JsonlSpan:
        """``Splittable``: the lines of ``span``, read and validated as the whole file's."""
        return splitting.JsonlSpan(self, span)

    def check_split(self, seen: Sequence[Any]) -> None:
        """``Splittable``: ids unique across the parts, each mapped column in some record."""
        splitting.check_split(self, seen)


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

    def read_samples(self, limit: int | None = None) -> Iterator[RagSample]:
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

    def read_samples(self, limit: int | None = None) -> Iterator[RagSample]:
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
