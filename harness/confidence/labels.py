"""The human labels file (``run.human_labels=FILE``): JSON lines or CSV, one row per
labelled chunk.

Each row names the sample (``id``) and the chunk, by ``context_id`` (the retrieved
document's id), ``rank`` (1-based) or ``context`` (its text; a text cut with ``…``, as
``samples.jsonl`` shows it, names the chunk it starts), and gives the verdict: ``relevant``
(0 or 1; true/false and yes/no are read too) or ``grade`` (a number; relevant when it is at
least ``min_grade``). A row whose verdict is blank (the sheet's empty column, JSON null) is
not a label yet: it is counted, not read. Other columns (``question``, ``reference``, a
note) are ignored, unless one looks like a misspelt column the file lacks (``relevance``
for ``relevant``): that is refused with a did-you-mean, as are a file with no verdict
column, no ``id`` column or no column naming the chunk. A bad row is one ``DatasetError``
naming the file, line and field.

A CSV file's separator is told from its header (``,`` ``;`` tab or ``|``: what spreadsheets
write in different locales). Its cells are read back from spreadsheet-safe form
(``unescape_cell``): the sheet ``harness label`` writes puts a ``'`` before a cell a
spreadsheet would run as a formula.
"""

from __future__ import annotations

import csv
import difflib
import io
import math
import os
from collections.abc import Collection, Iterator, Mapping
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
VERDICT_KEYS = ("relevant", "grade")
#: Every column the reader knows: those it reads, and the sheet's others it ignores.
KNOWN = ("id", *CHUNK_KEYS, *VERDICT_KEYS, "question", "reference", "text_cut")
#: Names people give a column, by the column the reader knows it as (compared in lower
#: case with ``-`` and spaces as ``_``); closer misspellings are found by ``difflib``.
SYNONYMS = {
    "relevant": ("relevance", "is_relevant", "isrelevant", "label", "labels", "human_label",
                 "verdict", "judgment", "judgement", "judged", "rel", "relevancy", "gold",
                 "human", "target", "y", "relevant?"),
    "grade": ("grades", "rating", "score", "relevance_grade", "qrel", "qrels", "level"),
    "id": ("sample_id", "sampleid", "query_id", "queryid", "qid", "question_id", "_id",
           "sample", "sample_name", "uid"),
    "context_id": ("doc_id", "docid", "document_id", "chunk_id", "passage_id", "pid",
                   "contextid", "retrieved_context_id", "corpus_id"),
    "context": ("chunk", "text", "passage", "document", "contexts", "retrieved_context",
                "content", "chunk_text"),
    "rank": ("position", "pos", "ranking", "rank_position", "place"),
}
#: The separators a CSV labels file may use, as ``dataset.delimiter`` names them.
DELIMITERS = (",", ";", "\t", "|")
#: What a cell may start with that a spreadsheet runs as a formula (OWASP, CSV injection),
#: with the full-width forms some locales' spreadsheets take as the same characters.
FORMULA_STARTS = ("=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20")
#: The byte-order marks of encodings other than UTF-8, and their names.
_OTHER_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
               (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))


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
    _check_encoding(file)
    tabular = file.suffix.lower() in (".csv", ".tsv")
    records = _csv_records(file) if tabular else _jsonl_records(file)
    labels, blank, verdicts = [], 0, False
    for line, record in records:
        verdicts = verdicts or any(k in record for k in VERDICT_KEYS)
        label = _label(record, str(file), line, min_grade, cells_are_text=tabular)
        if label is None:
            blank += 1
        else:
            labels.append(label)
    if not labels and not blank:
        raise DatasetError(str(file), "holds no label rows")
    if not verdicts:
        raise DatasetError(str(file), "no row has a 'relevant' (or 'grade') field: give each "
                           "labelled chunk relevant: 1 or 0", field="relevant")
    return LabelFile(str(file), tuple(labels), blank)


def escape_cell(text: str) -> str:
    """``text`` as the sheet's CSV holds it: safe to open in a spreadsheet (OWASP, CSV
    injection). A ``'`` goes before a text a spreadsheet would run as a formula, one
    starting with ``=`` ``+`` ``-`` ``@`` (or their full-width forms), also after leading
    white space, or with a tab, a carriage return or a line feed (a spreadsheet may save a
    leading carriage return as a line feed); and before a text that starts with ``'``
    itself, so that ``unescape_cell`` gives every text back as it was."""
    return "'" + text if _live(text) or text.startswith("'") else text


def unescape_cell(cell: str) -> str:
    """A CSV cell as ``escape_cell`` was given it: one leading ``'`` dropped where
    ``escape_cell`` would have put it (before a formula start or another ``'``); any other
    cell as it is, a spreadsheet having dropped the ``'`` included."""
    rest = cell[1:]
    return rest if cell.startswith("'") and (_live(rest) or rest.startswith("'")) else cell


def _live(text: str) -> bool:
    """Whether a spreadsheet may take ``text`` as a formula."""
    return text[:1] in ("\t", "\r", "\n") or text.lstrip().startswith(FORMULA_STARTS)


def _check_encoding(path: Path) -> None:
    """A file saved as UTF-16 or UTF-32 (a spreadsheet's "Unicode text") is one line
    naming the encoding, not a complaint about its first byte."""
    with open(path, "rb") as f:
        head = f.read(4)
    for bom, name in _OTHER_BOMS:
        if head.startswith(bom):
            raise DatasetError(str(path), f"is {name} (its byte-order mark says so); save it as "
                               "UTF-8 (a spreadsheet's \"CSV UTF-8\")", line=1)


def _jsonl_records(path: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    checked: set[frozenset[str]] = set()
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
        keys = frozenset(record)
        if keys not in checked:
            _check_columns(list(record), str(path), number, header=False)
            checked.add(keys)
        yield number, record


def _csv_records(path: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    allow_large_cells()
    # csv needs the text whole across line breaks inside quoted cells; the file is decoded
    # line by line (BOM dropped, a bad byte named by its line) and the lines joined
    text = "".join(decode_line(raw, path, n) for n, raw in read_lines(path))
    tsv = path.suffix.lower() == ".tsv"
    delimiter = sniff(text.split("\n", 1)[0], "\t" if tsv else ",")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = next(reader, None)
        if header is None:
            return
        header = [h.replace("\ufeff", "").strip() for h in header]
        for name in header:
            if header.count(name) > 1:
                raise DatasetError(str(path), "appears more than once in the header",
                                   line=1, field=name)
        _check_columns(header, str(path), 1, header=True)
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise DatasetError(
                    str(path), f"has {len(row)} columns but the header has {len(header)}"
                    f"{_separator_hint(delimiter)}", line=reader.line_num,
                )
            cells = (unescape_cell(c) for c in row)
            yield reader.line_num, dict(zip(header, cells, strict=True))
    except csv.Error as e:
        raise DatasetError(str(path), f"malformed CSV ({e})", line=reader.line_num) from None


def sniff(header: str, default: str = ",") -> str:
    """The separator of a CSV labels file, told from its header line: of ``,`` ``;`` tab
    and ``|``, the one that splits it into the most column names the reader knows, then
    into the most columns; ``default`` when none splits it."""
    order = (default, *(d for d in DELIMITERS if d != default))
    best, score = default, (0, 1)
    for delimiter in order:
        try:
            cells = next(csv.reader([header], delimiter=delimiter), [])
        except csv.Error:
            continue
        names = {_norm(c.replace("\ufeff", "")) for c in cells}
        got = (len(names & set(KNOWN)), len(cells))
        if got > score:
            best, score = delimiter, got
    return best


def _separator_hint(delimiter: str) -> str:
    shown = "a tab" if delimiter == "\t" else repr(delimiter)
    return (f" (columns read as separated by {shown}, from the header; a cell holding the "
            "separator must be quoted)")


def _norm(name: str) -> str:
    return name.strip().lower().replace("-", "_").replace(" ", "_")


#: The roles a labels file's columns fill, and the columns that fill each.
_ROLES = (("id", ("id",)), ("chunk", CHUNK_KEYS), ("verdict", VERDICT_KEYS))


def _check_columns(names: Collection[str], path: str, line: int, header: bool) -> None:
    """Refuse a CSV ``header`` (or a JSON line's keys) that misspells a column the file
    lacks, with a did-you-mean, and a header with no verdict, ``id`` or chunk column (a
    JSON line without them is refused or counted as its row is read)."""
    given = set(names)
    for _, columns in _ROLES:
        for column in columns:  # another spelling of a column that is not there
            if column in given:
                continue
            for name in given - set(KNOWN):
                if _norm(name) == column:
                    raise _did_you_mean(path, line, name, column)
    for role, columns in _ROLES:
        if given & set(columns):
            continue
        for name in sorted(given - set(KNOWN)):  # the role unfilled: a name for it?
            meant = _meant(name, columns)
            if meant is not None:
                raise _did_you_mean(path, line, name, meant)
        if header:
            raise DatasetError(path, _lacks(role, names), line=line, field=columns[0])


def _meant(name: str, columns: Collection[str]) -> str | None:
    """The column of ``columns`` that ``name`` most likely means: another name people
    give it, or a close misspelling."""
    norm = _norm(name)
    for column in columns:
        if norm in SYNONYMS.get(column, ()):
            return column
    close = difflib.get_close_matches(norm, list(columns), n=1, cutoff=0.75)
    return close[0] if close else None


def _did_you_mean(path: str, line: int, name: str, column: str) -> DatasetError:
    return DatasetError(path, f"is not a column the labels file reads; did you mean "
                        f"{column!r}? (rename it)", line=line, field=name)


def _lacks(role: str, names: Collection[str]) -> str:
    has = ", ".join(repr(n) for n in names) or "none"
    return {
        "id": "missing: no 'id' column naming the sample each row labels",
        "chunk": "missing: no column naming the chunk (context_id, rank or context)",
        "verdict": "missing: no 'relevant' column (nor 'grade') for the verdicts; add one "
                   "and fill it in (1 relevant, 0 not)",
    }[role] + f"; the columns: {has}"


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
