"""Turn one raw record (a dict from JSON or CSV) into a validated ``RagSample``."""

from __future__ import annotations

import ast
import json
import math
from collections.abc import Mapping
from typing import Any

from harness.errors import ConfigError, DatasetError, closest
from harness.types import SAMPLE_FIELDS, RagSample

_TEXT = ("user_input", "reference", "response")
_TEXTS = ("retrieved_contexts", "reference_contexts")
_IDS = ("retrieved_context_ids", "reference_context_ids")
_GRADES = "reference_context_grades"

#: Field names of ragas's legacy schema and of deepeval's ``LLMTestCase``, recognised
#: without a mapping when the ragas (current) name is absent.
ALIASES: dict[str, tuple[str, ...]] = {
    "user_input": ("question", "input"),
    "response": ("answer", "actual_output"),
    "reference": ("ground_truth", "expected_output"),
    "retrieved_contexts": ("contexts", "retrieval_context"),
    "reference_contexts": ("context",),
}


def field_map(fields: Mapping[str, str] | None) -> dict[str, str]:
    """Validate a user's ``harness field -> source column`` mapping; fill in the identity."""
    mapping = {f: f for f in ("id", *SAMPLE_FIELDS)}
    for ours, theirs in (fields or {}).items():
        if theirs is None and ours in mapping:
            continue
        if ours not in mapping:
            raise ConfigError(
                f"dataset.fields: unknown field {ours!r}{closest(ours, list(mapping))}; "
                f"the fields are {', '.join(mapping)}"
            )
        if not isinstance(theirs, str) or not theirs:
            raise ConfigError(f"dataset.fields.{ours}: expected a column name, got {theirs!r}")
        mapping[ours] = theirs
    return mapping


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


class RecordParser:
    """Validates records of one file; raises ``DatasetError`` naming file, line and field.

    Args:
        path: The file, for messages.
        fields: Harness field -> source column (see ``field_map``).
        cells_are_text: True for CSV, whose list cells hold JSON (or Python-literal) lists.
    """

    def __init__(self, path: str, fields: Mapping[str, str], cells_are_text: bool) -> None:
        self.path, self.fields, self.cells_are_text = path, fields, cells_are_text
        self._pairs = [
            (ours, fields[ours], ALIASES.get(ours, ()) if fields[ours] == ours else ())
            for ours in SAMPLE_FIELDS
        ]
        self._seen: dict[str, int] = {}

    def parse(self, raw: Any, index: int, line: int) -> RagSample:
        """Validate ``raw`` (record ``index``, 0-based; ``line``, 1-based) into a sample."""
        if not isinstance(raw, dict):
            raise DatasetError(
                self.path, f"expected a JSON object, got {_type_name(raw)}", line=line
            )
        values: dict[str, Any] = {}
        for ours, theirs, aliases in self._pairs:
            value = raw.get(theirs)
            if value is None and aliases and not raw.keys().isdisjoint(aliases):
                value = next((raw[a] for a in aliases if raw.get(a) is not None), None)
            if self.cells_are_text and value == "":
                value = None
            if value is None:
                continue
            values[ours] = self._convert(ours, value, line)
        self._check_parallel(values, line)
        sample_id = self._id(raw.get(self.fields["id"]), index, line)
        return RagSample(id=sample_id, **values)

    def _fail(self, field: str, message: str, line: int) -> DatasetError:
        return DatasetError(self.path, message, line=line, field=self.fields[field])

    def _convert(self, field: str, value: Any, line: int) -> Any:
        if field in _TEXT:
            if not isinstance(value, str):
                raise self._fail(field, f"expected a string, got {_type_name(value)}", line)
            return value
        if self.cells_are_text and isinstance(value, str):
            value = self._cell_list(field, value, line)
        if not isinstance(value, list):
            raise self._fail(field, f"expected a list, got {_type_name(value)}", line)
        if field != _GRADES:  # the common cases, checked at C speed
            kinds = set(map(type, value))
            if kinds <= {str}:
                return tuple(value)
            if field in _IDS and kinds <= {str, int}:
                return tuple(map(str, value))
        if field in _TEXTS:
            for i, item in enumerate(value):
                if not isinstance(item, str):
                    raise self._fail(
                        field, f"item {i}: expected a string, got {_type_name(item)}", line
                    )
            return tuple(value)
        if field in _IDS:
            out = []
            for i, item in enumerate(value):
                if isinstance(item, bool) or not isinstance(item, (str, int)):
                    raise self._fail(
                        field,
                        f"item {i}: expected a string or integer id, got {_type_name(item)}",
                        line,
                    )
                out.append(str(item))
            return tuple(out)
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
            sample_id = str(raw_id)
        first = self._seen.setdefault(sample_id, line)
        if first != line:
            raise self._fail("id", f"duplicate id {sample_id!r} (first used on line {first})", line)
        return sample_id
