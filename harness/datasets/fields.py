"""The harness's field names, the user's mapping of them to columns (``dataset.fields``),
and the check every text of a sample passes (``text_problem``)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from harness.core.errors import ConfigError, DatasetError, closest
from harness.core.text import text_problem as text_problem  # the check lives there
from harness.core.types import SAMPLE_FIELDS, STRATUM

#: Column names kept for the hint of a mapping that matches no column.
_MAX_KEYS = 1000

#: Field names of ragas's legacy schema and of deepeval's ``LLMTestCase``, recognised
#: without a mapping when the ragas (current) name is absent.
ALIASES: dict[str, tuple[str, ...]] = {
    "user_input": ("question", "input"),
    "response": ("answer", "actual_output"),
    "reference": ("ground_truth", "expected_output", "ground_truths"),
    "retrieved_contexts": ("contexts", "retrieval_context"),
    "reference_contexts": ("context",),
}

#: ragas's legacy (v0.1) list of reference answers: its first becomes ``reference``.
LEGACY_LIST = "ground_truths"

#: What a JSON-lines reader says when the file is one JSON document.
DOCUMENT_HINT = (
    "the file looks like one JSON document (ragas's column-oriented {\"question\": [...], "
    "...} or a list of records), not JSON lines: read it with dataset=json"
)

#: Fields that hold one value (a text or an id) per record.
_ONE_VALUE = ("id", "user_input", "reference", "response")


def columnar(raw: object, fields: Mapping[str, str]) -> bool:
    """Whether a JSON object is a dataset by columns (``{"question": [...], ...}``, or
    pandas's ``to_json``, columns keyed by row) rather than one record: a known field
    holds an object, a one-value field a list, or a list field a list of lists."""
    if not isinstance(raw, dict):
        return False
    one = {fields[f] for f in _ONE_VALUE} | {
        a for f in _ONE_VALUE for a in ALIASES.get(f, ()) if a != LEGACY_LIST
    }
    many = {fields[f] for f in SAMPLE_FIELDS if f not in _ONE_VALUE} | {
        a for f, names in ALIASES.items() for a in names if a not in one
    }
    for key, value in raw.items():
        if key in one and isinstance(value, (list, dict)):
            return True
        if key in many and (
            isinstance(value, dict)
            or isinstance(value, list) and bool(value) and isinstance(value[0], list)
        ):
            return True
    return False


def field_map(fields: Mapping[str, str] | None) -> dict[str, str]:
    """Validate a user's ``harness field -> source column`` mapping; fill in the identity."""
    mapping = {f: f for f in ("id", *SAMPLE_FIELDS)}
    if fields is None:
        return mapping
    if not isinstance(fields, Mapping):
        raise ConfigError(
            f"dataset.fields: expected a mapping of harness field to column name, got {fields!r}"
        )
    for ours, theirs in fields.items():
        if theirs is None and ours in mapping:
            continue
        if ours == STRATUM and isinstance(theirs, str) and text_problem(theirs) is None:
            mapping[ours] = theirs  # run.strata's column, carried to a shard's reader
            continue
        if ours not in mapping:
            raise ConfigError(
                f"dataset.fields: unknown field {ours!r}{closest(str(ours), list(mapping))}; "
                f"the fields are {', '.join(mapping)}"
            )
        if not isinstance(theirs, str) or not theirs:
            quote = (
                f" (for a column named {theirs}, quote it: dataset.fields.{ours}=\"'{theirs}'\")"
                if isinstance(theirs, (int, float)) and not isinstance(theirs, bool)
                else ""
            )
            raise ConfigError(
                f"dataset.fields.{ours}: expected a column name, got {theirs!r}{quote}"
            )
        problem = text_problem(theirs)
        if problem is not None:
            raise ConfigError(f"dataset.fields.{ours}: the column name {problem}")
        mapping[ours] = theirs
    return mapping


class MappedColumns:
    """Whether each column the user mapped appears in the data: a reader with a header
    calls ``check``; a stream calls ``note`` per record and ``finish`` at its end.

    Args:
        path: The file, for messages.
        fields: Harness field -> source column (see ``field_map``).
        mapped_by: How messages name a mapping's setting, ``{}`` standing for the field.
    """

    def __init__(self, path: str, fields: Mapping[str, str], mapped_by: str) -> None:
        self.path, self.mapped_by = path, mapped_by
        # mapped column -> harness field, until a record (or the header) has the column
        self.unseen = {theirs: ours for ours, theirs in fields.items()
                       if theirs != ours or ours == STRATUM}
        self._keys: set[str] = set()
        self._count = 0

    def note(self, raw: Mapping[Any, Any]) -> None:
        """Record that a record with ``raw``'s keys was read (call only while ``unseen``)."""
        self._count += 1
        for column in [c for c in self.unseen if c in raw]:
            del self.unseen[column]
        if self.unseen and len(self._keys) < _MAX_KEYS:
            self._keys.update(k for k in raw if isinstance(k, str))

    def absorb(self, other: MappedColumns) -> None:
        """Take in what a reader of another part of the same stream noted (a shard)."""
        self._count += other._count
        self.unseen = {c: f for c, f in self.unseen.items() if c in other.unseen}
        if self.unseen and len(self._keys) < _MAX_KEYS:
            self._keys.update(other._keys)

    def check(self, columns: Collection[str], where: str, line: int | None = None) -> None:
        """Raise ``DatasetError`` for a mapped column not in ``columns`` (a header, a
        schema), which are ``where`` ("not in the header")."""
        for column in self.unseen:
            if column not in columns:
                raise DatasetError(self.path, self._missing(column, where, columns), line=line)
        self.unseen.clear()

    def finish(self) -> None:
        """At the end of a stream: raise ``DatasetError`` for a mapped column that no
        record had (nothing is said when no record was read)."""
        if self.unseen and self._count:
            column = next(iter(self.unseen))
            where = f"in no record ({self._count} read)"
            raise DatasetError(self.path, self._missing(column, where, self._keys))

    def _missing(self, column: str, where: str, columns: Collection[str]) -> str:
        ours = self.unseen[column]
        setting = "run.strata" if ours == STRATUM else self.mapped_by.format(ours)
        names = sorted(c for c in columns if isinstance(c, str) and text_problem(c) is None)
        listed = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
        have = f"; the columns are {listed}" if names else ""
        return f"column {column!r} (mapped by {setting}) is {where}{closest(column, names)}{have}"
