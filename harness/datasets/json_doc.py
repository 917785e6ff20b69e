"""``dataset=json``: a JSON file as ragas, Hugging Face ``datasets`` and pandas save one.

- by columns: ``{"question": [...], "contexts": [[...], ...], "ground_truths": [[...]]}``
  (``Dataset.to_dict()`` then ``json.dump``; pandas ``to_json()``: columns keyed by row);
- a list of records: ``[{"user_input": ..., ...}, ...]`` (``to_list``, ``orient="records"``);
- JSON lines, one record per line (``Dataset.to_json()``, ragas's ``to_jsonl``).

A document is read whole (JSON lines stream). Records of a document are named by their
1-based row in messages (``english.json: row 3: field 'question': ...``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from harness.core.errors import DatasetError
from harness.core.types import RagSample
from harness.datasets.fields import columnar
from harness.datasets.files import JsonlDataset
from harness.datasets.reading import decode_line, load_json, read_lines
from harness.datasets.records import RecordParser, _type_name


class JsonDataset(JsonlDataset):
    """One JSON document (by columns, or a list of records), or JSON lines (``dataset=json``).

    A record without ``id`` gets its 0-based row index. ragas's legacy names are read as
    everywhere (``question``, ``answer``, ``contexts``, ``ground_truth``); its list
    ``ground_truths`` gives its first answer as ``reference``, as ragas's conversion does.
    """

    format = "json"

    def read_samples(self, limit: int | None = None) -> Iterator[RagSample]:
        """Yield validated samples in file order, at most ``limit``."""
        lines = self._lines()
        head: list[str] = []
        for _, text in lines:
            head.append(text)
            if text.strip():
                break
        else:
            return  # an empty file: no samples
        first = head[-1]
        start = len(head)
        raw = _try_json(first)
        if isinstance(raw, dict) and not columnar(raw, self.fields):
            yield from self._json_lines(raw, start, lines, limit)
            return
        text = "".join(head) + "".join(t for _, t in lines)
        document = load_json(text, self.path, document=True)
        parser = RecordParser(str(self.path), self.fields, cells_are_text=False, unit="row")
        records = self._records(document, parser)
        for index, record in enumerate(records[:limit] if limit is not None else records):
            yield parser.parse(record, index, index + 1)
        parser.columns.finish()

    def estimate_count(self) -> int:
        """The line count for JSON lines; 0 (unknown) for a document."""
        try:
            for number, line in read_lines(self.path):
                if text := decode_line(line, self.path, number).strip():
                    raw = _try_json(text)
                    if isinstance(raw, dict) and not columnar(raw, self.fields):
                        return super().estimate_count()
                    break
        except DatasetError:
            pass
        return 0

    def _json_lines(
        self, raw: dict[str, Any], number: int, lines: Iterator[tuple[int, str]],
        limit: int | None,
    ) -> Iterator[RagSample]:
        """JSON lines, the first record (on line ``number``) already parsed as ``raw``."""
        parser = RecordParser(str(self.path), self.fields, cells_are_text=False)
        if limit is not None and limit <= 0:
            return
        yield parser.parse(raw, number - 1, number)
        count = 1
        for number, text in lines:
            if limit is not None and count >= limit:
                break
            if not text.strip():
                continue
            yield parser.parse(load_json(text, self.path, number), number - 1, number)
            count += 1
        parser.columns.finish()

    def _records(self, document: Any, parser: RecordParser) -> list[Any]:
        """The records of a document: its list, or its columns zipped into rows."""
        if isinstance(document, list):
            return document
        if not isinstance(document, dict):
            raise DatasetError(
                str(self.path),
                f"expected an object of columns, a list of records or JSON lines, got "
                f"{_type_name(document)}",
            )
        if not columnar(document, self.fields):
            return [document]  # one record, written over several lines
        parser.columns.check(list(document), "not a column of the file")
        return rows_of(document, str(self.path))


def rows_of(columns: dict[str, Any], path: str) -> list[dict[str, Any]]:
    """Records from equal-length columns: lists, or objects keyed by row (pandas)."""
    values: dict[str, list[Any]] = {}
    keys: tuple[str, list[str]] | None = None
    for name, column in columns.items():
        if isinstance(column, dict):
            if keys is None:
                keys = (name, list(column))
            elif list(column) != keys[1]:
                raise DatasetError(
                    path,
                    f"columns {keys[0]!r} and {name!r} are keyed by different rows; a "
                    "column-oriented file needs the same rows in every column",
                )
            column = list(column.values())
        if not isinstance(column, list):
            raise DatasetError(
                path,
                f"column {name!r} is not a list (it holds {json.dumps(column)[:40]}); a "
                "column-oriented file holds one value per row in every column",
            )
        values[name] = column
    names = list(values)
    for name in names[1:]:
        if len(values[name]) != len(values[names[0]]):
            raise DatasetError(
                path,
                f"columns {names[0]!r} ({len(values[names[0]])} values) and {name!r} "
                f"({len(values[name])} values) differ in length; a column-oriented file "
                "holds one value per row in every column",
            )
    count = len(values[names[0]]) if names else 0
    return [{name: values[name][i] for name in names} for i in range(count)]


def _try_json(text: str) -> Any:
    """``text`` parsed, or None when it is not a whole JSON value."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None
