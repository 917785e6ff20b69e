"""Reading Parquet row by row with pyarrow: every failure, in the footer or in a row group
far into the file, a one-line ``DatasetError`` naming the file and the row."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.core.errors import DatasetError
from harness.datasets.fields import MappedColumns
from harness.datasets.reading import open_regular

#: Rows converted to Python at a time.
BATCH = 4096


def _first_line(error: BaseException) -> str:
    lines = [x.strip() for x in str(error).splitlines() if x.strip()]
    return lines[0] if lines else type(error).__name__


def read_parquet(
    path: Path, columns: MappedColumns, limit: int | None = None
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(0-based row, record)`` for each row of a Parquet file, at most ``limit``.

    Row ``n`` is "line" ``n + 1`` in messages. The mapped ``columns`` are checked against
    the file's schema first. Strings are UTF-8 in Arrow, so no text read here can hold a
    lone surrogate: bytes that are not UTF-8 are reported with their row and column.
    """
    import pyarrow.parquet as pq

    with open_regular(path) as f:
        try:
            reader = pq.ParquetFile(f)
            names = reader.schema_arrow.names
            groups = reader.metadata.num_row_groups
        except Exception as e:  # pyarrow raises ArrowInvalid, OSError and others
            what = _first_line(e)
            raise DatasetError(str(path), f"not a readable Parquet file ({what})") from None
        columns.check(names, "not a column of the file")
        index = 0
        for group in range(groups):
            batches = reader.iter_batches(batch_size=BATCH, row_groups=[group])
            where = f"row group {group + 1} of {groups}"
            while (rows := _next_rows(batches, path, where, index)) is not None:
                for raw in rows:
                    if limit is not None and index >= limit:
                        return
                    yield index, raw
                    index += 1


def _next_rows(batches: Iterator[Any], path: Path, where: str, index: int) -> list[Any] | None:
    """The next batch as Python records (from row ``index`` of the file, in the row group
    ``where``), None at the end of the row group."""
    try:
        batch = next(batches)
    except StopIteration:
        return None
    except Exception as e:
        raise DatasetError(
            str(path),
            f"cannot read the rows from here on, in {where} ({_first_line(e)}); the file is "
            "damaged: write it again",
            line=index + 1,
        ) from None
    try:
        rows: list[Any] = batch.to_pylist()
    except Exception as e:
        raise _unconvertible(batch, path, index, e) from None
    return rows


def _unconvertible(batch: Any, path: Path, index: int, error: Exception) -> DatasetError:
    """The error naming the first row and column of ``batch`` that has no Python value."""
    for i in range(batch.num_rows):
        for name in batch.schema.names:
            try:
                batch.column(name)[i].as_py()
            except UnicodeDecodeError as e:
                return DatasetError(
                    str(path),
                    f"not valid UTF-8 ({e.reason} at byte {e.start}); write the strings as UTF-8",
                    line=index + i + 1,
                    field=name,
                )
            except Exception as e:
                return DatasetError(
                    str(path), f"cannot read the value ({_first_line(e)})",
                    line=index + i + 1, field=name,
                )
    return DatasetError(str(path), f"cannot read the rows ({_first_line(error)})", line=index + 1)
