"""The human labels file (``run.human_labels=FILE``): JSON lines or CSV, one row per
labelled chunk.

Each row names the sample (``id``) and the chunk, by ``context_id`` (the retrieved
document's id), ``rank`` (1-based) or ``context`` (its text; a text cut with ``…``, as
``samples.jsonl`` shows it, names the chunk it starts), and gives the verdict: ``relevant``
(0 or 1; true/false and yes/no are read too) or ``grade`` (a number; relevant when it is at
least ``min_grade``). A row whose verdict is blank (the sheet's empty column, JSON null) is
not a label yet: it is counted, not read. Other columns (``question``, ``reference``, a
note) are ignored. A bad row is one ``DatasetError`` naming the file, line and field.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.core.errors import DatasetError
from harness.datasets.reading import (
    allow_large_cells,
    decode_line,
    load_json,
    read_lines,
    setting_path,
    stat_file,
)

SETTING = "run.human_labels"
#: The columns that name the chunk, in the order they are tried.
CHUNK_KEYS = ("context_id", "context", "rank")
_YES = {"1", "true", "yes", "y", "relevant"}
_NO = {"0", "false", "no", "n", "irrelevant", "not relevant"}


@dataclass(frozen=True)
class Label:
    """One human verdict on one chunk of one sample."""

    sample_id: str
    relevant: int
    line: int
    context_id: str | None = None
    context: str | None = None
    rank: int | None = None
    grade: float | None = None


@dataclass(frozen=True)
class LabelFile:
    """What a labels file holds: its labels, how many rows had no verdict yet, and how many
    were not read as labels (human feedback on MLflow traces that fits no shape)."""

    path: str
    labels: tuple[Label, ...]
    blank: int
    skipped: int = 0


def read_labels(path: str | os.PathLike[str], min_grade: float = 1.0) -> LabelFile:
    """Read a labels file: ``.csv`` (or ``.tsv``) as CSV with a header, anything else as
    JSON lines; a UTF-8 BOM and line separators inside texts (U+2028) are read as the
    dataset readers read them.

    Args:
        path: The file (the value of ``run.human_labels``).
        min_grade: The lowest ``grade`` that counts as relevant (the dataset's).

    Returns:
        The labels in file order, and the count of rows without a verdict.
    """
    file = setting_path(SETTING, path)
    if not stat_file(file):
        raise DatasetError(str(file), f"file not found (set by {SETTING})")
    tabular = file.suffix.lower() in (".csv", ".tsv")
    records = _csv_records(file) if tabular else _jsonl_records(file)
    labels, blank = [], 0
    for line, record in records:
        label = _label(record, str(file), line, min_grade, cells_are_text=tabular)
        if label is None:
            blank += 1
        else:
            labels.append(label)
    if not labels and not blank:
        raise DatasetError(str(file), "holds no label rows")
    return LabelFile(str(file), tuple(labels), blank)


def _jsonl_records(path: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    for number, raw in read_lines(path):
        text = decode_line(raw, path, number)
        if not text.strip():
            continue
        record = load_json(text, path, number)
        if not isinstance(record, dict):
            raise DatasetError(
                str(path), f"expected one JSON object per line, got {type(record).__name__}",
                line=number,
            )
        yield number, record


def _csv_records(path: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    allow_large_cells()
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    # csv needs the text whole across line breaks inside quoted cells; the file is decoded
    # line by line (BOM dropped, a bad byte named by its line) and the lines joined
    text = "".join(decode_line(raw, path, n) for n, raw in read_lines(path))
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = next(reader, None)
        if header is None:
            return
        header = [h.strip() for h in header]
        for name in header:
            if header.count(name) > 1:
                raise DatasetError(str(path), "appears more than once in the header",
                                   line=1, field=name)
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise DatasetError(
                    str(path), f"has {len(row)} columns but the header has {len(header)}",
                    line=reader.line_num,
                )
            yield reader.line_num, dict(zip(header, row, strict=True))
    except csv.Error as e:
        raise DatasetError(str(path), f"malformed CSV ({e})", line=reader.line_num) from None


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _label(
    record: Mapping[str, Any], path: str, line: int, min_grade: float, cells_are_text: bool
) -> Label | None:
    def bad(field: str, message: str) -> DatasetError:
        return DatasetError(path, message, line=line, field=field)

    sample = record.get("id")
    if _blank(sample):
        raise bad("id", "missing: name the sample the chunk belongs to")
    if isinstance(sample, bool) or not isinstance(sample, (str, int)):
        raise bad("id", f"expected the sample's id (a string or an integer), got {sample!r}")
    relevant = _verdict(record, min_grade, bad)
    chunk = {k: record.get(k) for k in CHUNK_KEYS if not _blank(record.get(k))}
    if not chunk:
        raise bad("context_id", "missing: name the chunk by context_id, rank or context")
    context_id = chunk.get("context_id")
    if context_id is not None and (
        isinstance(context_id, bool) or not isinstance(context_id, (str, int))
    ):
        raise bad("context_id", f"expected a string, got {context_id!r}")
    context = chunk.get("context")
    if context is not None and not isinstance(context, str):
        raise bad("context", f"expected the chunk's text, got {type(context).__name__}")
    rank = _rank(chunk.get("rank"), cells_are_text, bad)
    if relevant is None:
        return None
    return Label(
        str(sample), relevant[0], line,
        context_id=None if context_id is None else str(context_id),
        context=context, rank=rank, grade=relevant[1],
    )


def _rank(value: Any, cells_are_text: bool, bad: Any) -> int | None:
    if value is None:
        return None
    if cells_are_text and isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise bad("rank", f"expected a whole number from 1, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise bad("rank", f"expected a whole number from 1 (rank 1 first), got {value!r}")
    return value


def _verdict(
    record: Mapping[str, Any], min_grade: float, bad: Any
) -> tuple[int, float | None] | None:
    """``(relevant, grade)``; None when the row has no verdict yet."""
    relevant, grade = record.get("relevant"), record.get("grade")
    if not _blank(relevant) and not _blank(grade):
        raise bad("grade", "give relevant or grade, not both")
    if not _blank(grade):
        number = _number(grade)
        if number is None:
            raise bad("grade", f"expected a number, got {grade!r}")
        return int(number >= min_grade), number
    if _blank(relevant):
        return None
    if isinstance(relevant, bool):
        return int(relevant), None
    if isinstance(relevant, (int, float)) and relevant in (0, 1):
        return int(relevant), None
    if isinstance(relevant, str) and relevant.strip().lower() in _YES | _NO:
        return int(relevant.strip().lower() in _YES), None
    raise bad(
        "relevant",
        f"expected 0 or 1, got {relevant!r}; for graded labels use a 'grade' column "
        f"(relevant from grade {min_grade:g})",
    )


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)
