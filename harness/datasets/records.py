"""Turn one raw record (a dict from JSON, CSV, Parquet or memory) into a validated
``RagSample``. Every text a sample carries passes ``text_problem`` here."""

from __future__ import annotations

import ast
import contextlib
import json
import math
from collections.abc import Mapping
from typing import Any

from harness.core.errors import DatasetError, closest
from harness.core.text import all_writable
from harness.core.types import SAMPLE_FIELDS, STRATUM, RagSample
from harness.datasets.fields import ALIASES, LEGACY_LIST, MappedColumns, text_problem
from harness.datasets.seen_ids import SeenIds

_TEXT = ("user_input", "reference", "response")
_TEXTS = ("retrieved_contexts", "reference_contexts")
_IDS = ("retrieved_context_ids", "reference_context_ids")
_GRADES = "reference_context_grades"
_LONG = "integer id too long (over 4,300 digits)"


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


class RecordParser:
    """Validates records of one file; raises ``DatasetError`` naming file, line and field.

    ``columns`` notes whether each column the user mapped (``dataset.fields``) appears: a
    reader with a header calls ``columns.check``, a stream ``columns.finish`` at its end.

    Args:
        path: The file, for messages.
        fields: Harness field -> source column (see ``field_map``).
        cells_are_text: True for CSV, whose list cells hold JSON (or Python-literal) lists.
        mapped_by: How messages name the setting of a mapping, ``{}`` standing for the
            harness field.
        unit: What the ``line`` given to ``parse`` counts: ``line`` (of a file), or
            ``row`` (a record of a JSON document, 1-based).
        seen: The ids met so far, for refusing a repeated one (a test passes one with its
            own hash function; default: a new ``SeenIds``).
    """

    def __init__(
        self,
        path: str,
        fields: Mapping[str, str],
        cells_are_text: bool,
        mapped_by: str = "dataset.fields.{}",
        unit: str = "line",
        seen: SeenIds | None = None,
    ) -> None:
        self.path, self.fields, self.cells_are_text = path, fields, cells_are_text
        self.mapped_by, self.unit = mapped_by, unit
        self._pairs = [
            (ours, fields[ours], ALIASES.get(ours, ()) if fields[ours] == ours else ())
            for ours in SAMPLE_FIELDS
        ]
        self._seen = SeenIds() if seen is None else seen
        self.columns = MappedColumns(path, fields, mapped_by)
        plain = (fields["id"], fields[_IDS[0]], fields[_IDS[1]])
        aliases = {alias for names in ALIASES.values() for alias in names}
        # columns of a record of ids only, checked in one step (``_ids_only``)
        self._plain = None if cells_are_text or aliases.intersection(plain) else plain
        self._plain_keys = frozenset(plain)
        #: run.strata's column: each sample's ``stratum`` (records then take the full path)
        self._stratum = fields.get(STRATUM)
        if self._stratum is not None:
            self._plain = None

    def parse(self, raw: Any, index: int, line: int) -> RagSample:
        """Validate ``raw`` (record ``index``, 0-based; ``line``, 1-based) into a sample."""
        if not isinstance(raw, dict):
            raise self._error(f"expected a JSON object, got {_type_name(raw)}", line)
        if self.columns.unseen:
            self.columns.note(raw)
        if self._plain is not None and raw.keys() <= self._plain_keys:
            sample = self._ids_only(raw, index, line)
            if sample is not None:
                return sample
        values: dict[str, Any] = {}
        for ours, theirs, aliases in self._pairs:
            value = raw.get(theirs)
            if value is None and aliases and not raw.keys().isdisjoint(aliases):
                value = self._alias(raw, aliases, line)
            if self.cells_are_text and value == "":
                value = None
            if value is None:
                continue
            values[ours] = self._convert(ours, value, line)
        self._check_parallel(values, line)
        sample_id = self._id(raw.get(self.fields["id"]), index, line)
        if self._stratum is not None:
            values["stratum"] = self._stratum_of(raw, self._stratum, line)
        return RagSample(id=sample_id, **values)

    def _stratum_of(self, raw: dict[str, Any], column: str, line: int) -> str:
        """The record's value of ``run.strata``'s column, as text (a number or a boolean
        as JSON writes it); a record without one, or with a list or an object, is refused."""
        value = raw.get(column)
        if value is None or value == "":
            keys = [k for k in raw if isinstance(k, str)]
            said = "is empty" if column in raw else "is missing"
            hint = "" if column in raw else closest(column, keys)
            raise self._error(f"column {column!r} (run.strata) {said}: every record needs "
                              f"its stratum{hint}", line, column)
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float) and not (isinstance(value, float) and
                                                   not math.isfinite(value)):
            return json.dumps(value)
        if isinstance(value, str) and text_problem(value) is None:
            return value
        raise self._error(f"column {column!r} (run.strata) holds {_type_name(value)}: a "
                          "stratum is one text or number", line, column)

    def _ids_only(self, raw: dict[str, Any], index: int, line: int) -> RagSample | None:
        """A record of an id and two lists of string ids (a retrieval run's usual line),
        checked at C speed; ``None`` sends any other to the field-by-field path, which
        checks it and names what is wrong."""
        assert self._plain is not None
        id_column, retrieved_column, reference_column = self._plain
        retrieved, reference = raw.get(retrieved_column), raw.get(reference_column)
        if not (type(retrieved) is list and type(reference) is list
                and all_writable(retrieved) and all_writable(reference)):
            return None
        return RagSample(id=self._id(raw.get(id_column), index, line),
                         retrieved_context_ids=tuple(retrieved),
                         reference_context_ids=tuple(reference))

    # -- values ------------------------------------------------------------------------

    def _error(self, message: str, line: int, column: str | None = None) -> DatasetError:
        row = self.unit == "row"
        return DatasetError(
            self.path, message, field=column, line=None if row else line, row=line if row else None
        )

    def _fail(
        self, field: str, message: str, line: int, column: str | None = None
    ) -> DatasetError:
        return self._error(message, line, column or self.fields[field])

    def _alias(self, raw: dict[str, Any], aliases: tuple[str, ...], line: int) -> Any:
        """The value of the first of ``aliases`` that ``raw`` has; ragas's legacy
        ``ground_truths`` (a list of answers) gives its first, as ragas's own conversion
        (``handle_deprecated_ground_truths``) does."""
        for alias in aliases:
            value = raw.get(alias)
            if value is None:
                continue
            if alias != LEGACY_LIST:
                return value
            if self.cells_are_text and isinstance(value, str):
                value = None if value == "" else self._cell_list("reference", value, line)
            if not isinstance(value, list):
                problem = f"expected a list of reference answers, got {_type_name(value)}"
            elif value and not isinstance(value[0], str):
                problem = f"item 0: expected a string, got {_type_name(value[0])}"
            else:
                return value[0] if value else None
            raise self._fail("reference", problem, line, LEGACY_LIST)
        return None

    def _check_items(self, field: str, items: tuple[str, ...], line: int) -> tuple[str, ...]:
        if all_writable(items):
            return items
        for i, item in enumerate(items):
            problem = text_problem(item)
            if problem is not None:
                raise self._fail(field, f"item {i}: {problem}", line)
        return items

    def _convert(self, field: str, value: Any, line: int) -> Any:
        if field in _TEXT:
            if not isinstance(value, str):
                raise self._fail(field, f"expected a string, got {_type_name(value)}", line)
            if not value.isascii() and (problem := text_problem(value)) is not None:
                raise self._fail(field, problem, line)
            return value
        if self.cells_are_text and isinstance(value, str):
            value = self._cell_list(field, value, line)
        if not isinstance(value, list):
            raise self._fail(field, f"expected a list, got {_type_name(value)}", line)
        if field != _GRADES:  # the common cases, checked at C speed
            kinds = set(map(type, value))
            if kinds <= {str}:
                return self._check_items(field, tuple(value), line)
            if field in _IDS and kinds <= {str, int}:
                with contextlib.suppress(ValueError):  # an int too long for str: below
                    return self._check_items(field, tuple(map(str, value)), line)
        if field in _TEXTS:
            for i, item in enumerate(value):
                if not isinstance(item, str):
                    raise self._fail(
                        field, f"item {i}: expected a string, got {_type_name(item)}", line
                    )
            return self._check_items(field, tuple(value), line)
        if field in _IDS:
            out = []
            for i, item in enumerate(value):
                if isinstance(item, bool) or not isinstance(item, (str, int)):
                    raise self._fail(
                        field,
                        f"item {i}: expected a string or integer id, got {_type_name(item)}",
                        line,
                    )
                try:
                    out.append(str(item))
                except ValueError:  # only from memory: JSON and CSV stop at such numbers
                    raise self._fail(field, f"item {i}: {_LONG}", line) from None
            return self._check_items(field, tuple(out), line)
        grades = []
        for i, item in enumerate(value):
            if isinstance(item, bool) or not isinstance(item, (int, float)) or not math.isfinite(
                item
            ):
                raise self._fail(field, f"item {i}: expected a finite number, got {item!r}", line)
            grades.append(float(item))
        return tuple(grades)
    def _cell_list(self, field: str, text: str, line: int) -> Any:
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            pass
        try:
            # ragas's to_csv writes lists as Python reprs: ['a', 'b']
            return ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise self._fail(
                field, "expected a JSON list such as [\"a\", \"b\"], got unparseable text", line
            ) from None

    def _check_parallel(self, values: dict[str, Any], line: int) -> None:
        texts, ids = values.get("retrieved_contexts"), values.get("retrieved_context_ids")
        if texts is not None and ids is not None and len(texts) != len(ids):
            raise self._fail(
                "retrieved_context_ids",
                f"has {len(ids)} ids but retrieved_contexts has {len(texts)} chunks; "
                "they must be parallel lists",
                line,
            )
        grades = values.get(_GRADES)
        if grades is not None:
            ref_ids = values.get("reference_context_ids")
            if ref_ids is None or len(ref_ids) != len(grades):
                raise self._fail(
                    _GRADES,
                    f"has {len(grades)} grades but reference_context_ids has "
                    f"{0 if ref_ids is None else len(ref_ids)} ids; they must be parallel lists",
                    line,
                )

    def _id(self, raw_id: Any, index: int, line: int) -> str:
        if raw_id is None or (self.cells_are_text and raw_id == ""):
            sample_id = str(index)
        elif isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):
            raise self._fail("id", f"expected a string or integer, got {_type_name(raw_id)}", line)
        else:
            try:
                sample_id = str(raw_id)
            except ValueError:
                raise self._fail("id", _LONG, line) from None
            problem = text_problem(sample_id)
            if problem is not None:
                raise self._fail("id", problem, line)
        first = self._seen.first(sample_id, line)
        if first is not None:
            raise self._fail(
                "id", f"duplicate id {sample_id!r} (first used on {self.unit} {first})", line
            )
        return sample_id

