"""A file's first record as the file holds it (column -> value), for messages that name
the columns a file has: read apart from the samples, only when a message needs it
(``Dataset.columns``)."""

from __future__ import annotations

import csv
import itertools
import json
from collections.abc import Mapping
from typing import Any

from harness.datasets.fields import ALIASES, columnar

#: Column names that most likely hold the questions, in order of preference.
QUESTION_LIKE = ("query", "question", "questions", "queries", "prompt", "user_query",
                 "query_text", "question_text", "q", "text")


def file_record(path: Any, kind: str, fields: Mapping[str, str],
                 delimiter: str = ",") -> dict[str, Any]:
    """The first record of the ``kind`` file at ``path`` (``jsonl``, ``json``, ``csv``,
    ``parquet``), or ``{}`` when it cannot be told (another kind, an unreadable file)."""
    try:
        return _first(path, kind, fields, delimiter)
    except Exception:  # only a hint: the samples' own reading says what is wrong
        return {}


def _first(path: Any, kind: str, fields: Mapping[str, str], delimiter: str) -> dict[str, Any]:
    if kind == "parquet":
        import pyarrow.parquet as pq

        rows = pq.ParquetFile(path).iter_batches(batch_size=1)
        return dict(next(rows).to_pylist()[0])
    with open(path, encoding="utf-8-sig", newline="") as f:
        if kind == "csv":
            reader = csv.reader(f, delimiter=delimiter)
            header, row = next(reader), next(reader, [])
            return dict(itertools.zip_longest(header, row, fillvalue=""))
        if kind not in ("jsonl", "json", "sample"):
            return {}
        text = f.read() if kind == "json" else next((t for t in f if t.strip()), "")
    raw = json.loads(text)
    if isinstance(raw, list):
        raw = raw[0] if raw else {}
    if isinstance(raw, dict) and columnar(raw, fields):
        return {k: _first_of(v) for k, v in raw.items()}
    return raw if isinstance(raw, dict) else {}


def _first_of(column: Any) -> Any:
    if isinstance(column, list):
        return column[0] if column else None
    if isinstance(column, dict):
        return next(iter(column.values()), None)
    return column


def question_column(record: Mapping[str, Any], fields: Mapping[str, str]) -> str | None:
    """The column of ``record`` that most likely holds the questions: a text column that
    no harness field names (one named like a question first), or ``None``."""
    taken = set(fields.values()) | {a for names in ALIASES.values() for a in names}
    texts = [k for k, v in record.items()
             if isinstance(k, str) and k not in taken and isinstance(v, str) and v.strip()]
    for name in QUESTION_LIKE:
        found = next((k for k in texts if k.lower() == name), None)
        if found is not None:
            return found
    return texts[0] if len(texts) == 1 else None
