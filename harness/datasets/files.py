"""JSONL and CSV datasets, read as a stream so that files of any size fit in memory."""

from __future__ import annotations

import csv
import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from harness.datasets.records import RecordParser, field_map
from harness.errors import DatasetError
from harness.types import Corpus, RagSample

_BLOCK = 1 << 20


def decode_line(raw: bytes, path: str | os.PathLike[str], number: int) -> str:
    """Line ``number`` (1-based) of ``path`` as text: UTF-8, a leading BOM dropped."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DatasetError(
            str(path),
            f"not valid UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1}); "
            "save the file as UTF-8",
            line=number,
        ) from None
    return text[1:] if number == 1 and text.startswith("\ufeff") else text


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
    """

    format = "file"
    #: The lowest reference grade that counts as relevant.
    min_grade: float = 1.0

    def __init__(
        self, path: str | os.PathLike[str] | None, fields: Mapping[str, str] | None = None
    ) -> None:
        if path is None or str(path) == "":
            raise DatasetError(f"dataset={self.format}", "no file given; set dataset.path=FILE")
        self.path = Path(path).expanduser()
        self.source = str(self.path)
        self.fields = field_map(fields)
        self._hasher = hashlib.sha256()
        self._complete = False

    def check(self) -> None:
        """Fail early, before any work, when the file cannot be read."""
        if not self.path.is_file():
            what = "is a directory, not a file" if self.path.is_dir() else "file not found"
            raise DatasetError(str(self.path), what)
        if not os.access(self.path, os.R_OK):
            raise DatasetError(str(self.path), "file is not readable")

    def estimate_count(self) -> int:
        """Roughly how many records the file holds (its line count), for progress bars."""
        lines, last = 0, b"\n"
        with open(self.path, "rb") as f:
            while block := f.read(_BLOCK):
                lines += block.count(b"\n")
                last = block[-1:]
        return lines + (last != b"\n") - (self.format == "csv")

    def describe(self) -> dict[str, Any]:
        """What a reader of the outputs needs to know about the data."""
        return {"format": self.format, "path": str(self.path)}

    def corpus(self) -> Corpus | None:
        """None: a file of samples has no corpus to search."""
        return None

    def sha256(self) -> str:
        """Content hash of the whole file (computed while reading when read to the end)."""
        if self._complete:
            return self._hasher.hexdigest()
        hasher = hashlib.sha256()
        with open(self.path, "rb") as f:
            while block := f.read(_BLOCK):
                hasher.update(block)
        return hasher.hexdigest()

    def _lines(self) -> Iterator[tuple[int, str]]:
        """Yield ``(1-based line number, decoded line with its newline)``."""
        self._hasher, self._complete = hashlib.sha256(), False
        number = 0
        with open(self.path, "rb") as f:
            rest = b""
            while block := f.read(_BLOCK):
                self._hasher.update(block)
                parts = (rest + block).split(b"\n")
                rest = parts.pop()
                for part in parts:
                    number += 1
                    yield number, self._decode(part + b"\n", number)
            if rest:
                number += 1
                yield number, self._decode(rest, number)
        self._complete = True

    def _decode(self, raw: bytes, number: int) -> str:
        return decode_line(raw, self.path, number)

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
                return
            if not text.strip():
                continue
            try:
                raw = json.loads(text)
            except json.JSONDecodeError as e:
                raise DatasetError(
                    str(self.path), f"not valid JSON ({e.msg} at column {e.colno})", line=number
                ) from None
            except (ValueError, RecursionError) as e:  # a 5,000-digit number, deep nesting
                what = "nested too deeply" if isinstance(e, RecursionError) else str(e)
                raise DatasetError(
                    str(self.path), f"not valid JSON ({what})", line=number
                ) from None
            yield parser.parse(raw, number - 1, number)
            count += 1


class CsvDataset(FileDataset):
    """A CSV file with a header row (``dataset=csv``).

    List fields (``retrieved_contexts``, ids, ...) hold a JSON list, or the Python-literal
    list that ragas's ``to_csv`` writes. An empty cell means the field is absent. A row
    without ``id`` gets its 0-based row index.

    Args:
        path: The file to read.
        fields: Harness field -> column name.
        delimiter: The column separator.
    """

    format = "csv"

    def __init__(
        self,
        path: str | os.PathLike[str] | None,
        fields: Mapping[str, str] | None = None,
        delimiter: str = ",",
    ) -> None:
        super().__init__(path, fields)
        self.delimiter = delimiter

    def samples(self, limit: int | None = None) -> Iterator[RagSample]:
        """Yield validated samples in file order, at most ``limit``."""
        parser = RecordParser(str(self.path), self.fields, cells_are_text=True)
        _allow_large_cells()
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


def _allow_large_cells() -> None:
    """Lift the csv module's 128 KiB cell limit: a chunk may be megabytes long."""
    import sys

    limit = sys.maxsize
    while True:
        try:
            csv.field_size_limit(limit)
            return
        except OverflowError:
            limit //= 2


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
        import pyarrow.parquet as pq

        parser = RecordParser(str(self.path), self.fields, cells_are_text=False)
        try:
            reader = pq.ParquetFile(self.path)
        except Exception as e:  # pyarrow raises ArrowInvalid and others
            raise DatasetError(str(self.path), f"not a readable Parquet file ({e})") from None
        index = 0
        for batch in reader.iter_batches(batch_size=4096):
            for raw in batch.to_pylist():
                if limit is not None and index >= limit:
                    return
                yield parser.parse(raw, index, index + 1)
                index += 1

    def estimate_count(self) -> int:
        """The row count from the file's metadata."""
        import pyarrow.parquet as pq

        try:
            return int(pq.ParquetFile(self.path).metadata.num_rows)
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
