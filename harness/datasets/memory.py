"""Samples handed over in memory (the Python API): plain dicts in ragas's field names,
ragas's legacy names, or deepeval ``LLMTestCase`` names (``input``, ``actual_output``,
``expected_output``, ``retrieval_context``)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from harness.core.capabilities import Splittable, Traced
from harness.core.errors import ConfigError, DatasetError
from harness.core.types import STRATUM, Corpus, RagSample
from harness.datasets.fields import MappedColumns, field_map
from harness.datasets.files import batched
from harness.datasets.records import RecordParser

#: How messages name a mapping: the ``fields`` argument of ``harness.evaluate``.
_MAPPED_BY = "fields[{!r}]"


@runtime_checkable
class _PydanticModel(Protocol):
    """A pydantic v2 model (ragas ``SingleTurnSample``, deepeval ``LLMTestCase``)."""

    def model_dump(self) -> Mapping[str, Any]: ...


@runtime_checkable
class _PandasRow(Protocol):
    """An object with ``to_dict`` (a pandas ``Series``, e.g. a row of ``iterrows()``)."""

    def to_dict(self) -> Mapping[str, Any]: ...


@runtime_checkable
class _DataFrame(Protocol):
    """A pandas ``DataFrame``: iterating one yields its column names, not its rows."""

    def iterrows(self) -> Iterator[Any]: ...


@runtime_checkable
class _PydanticV1Model(Protocol):
    """A pydantic v1 model."""

    def dict(self) -> Mapping[str, Any]: ...


def as_record(sample: Any) -> Mapping[str, Any]:
    """A dict, or the fields of an object with ``model_dump``/``to_dict``/``dict``, else its
    ``__dict__`` (ragas ``SingleTurnSample``, deepeval ``LLMTestCase``, dataclasses)."""
    if isinstance(sample, Mapping):
        return sample if isinstance(sample, dict) else dict(sample)
    if isinstance(sample, _PydanticModel):
        return dict(sample.model_dump())
    if isinstance(sample, _PandasRow):
        return dict(sample.to_dict())
    if isinstance(sample, _PydanticV1Model):
        return dict(sample.dict())
    return dict(vars(sample))


class RecordsDataset:
    """A dataset over records already in memory.

    Args:
        records: The samples, in order (dicts or objects with their fields).
        fields: Harness field -> record key, where the keys differ.
        name: Shown in outputs.
    """

    format = "records"
    #: The lowest reference grade that counts as relevant.
    min_grade: float = 1.0
    #: Split by sample index; not read from traces.
    splittable: Splittable | None = None
    traced: Traced | None = None

    def __init__(
        self, records: Sequence[Any], fields: Mapping[str, str] | None = None, name: str = "records"
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ConfigError(f"name: expected a non-empty string, got {name!r}")
        self.name = name
        self.source = name
        self.records = _as_records(records, name)
        self.fields = field_map(fields)

    def check(self) -> None:
        """Raise ``DatasetError`` for a mapped key (``fields``) that no record has."""
        if self.records:
            keys = {k for r in self.records for k in r if isinstance(k, str)}
            MappedColumns(self.name, self.fields, _MAPPED_BY).check(keys, "in no record")

    def stratify(self, column: str) -> None:
        """Give each sample the value of ``column`` as its ``stratum`` (``run.strata``)."""
        self.fields = field_map({**self.fields, STRATUM: column})

    def estimate_count(self) -> int:
        """The number of records."""
        return len(self.records)

    def samples(self, limit: int | None = None) -> Iterator[RagSample]:
        """Validated samples; record ``i`` is "line" ``i + 1`` in messages."""
        parser = RecordParser(self.name, self.fields, cells_are_text=False, mapped_by=_MAPPED_BY)
        for i, raw in enumerate(self.records[:limit]):
            yield parser.parse(raw, i, i + 1)

    def batches(self, batch_size: int, limit: int | None = None) -> Iterator[list[RagSample]]:
        """Lists of at most ``batch_size`` samples."""
        return batched(self.samples(limit), batch_size)

    def corpus(self) -> Corpus | None:
        """None: records in memory have no corpus to search."""
        return None

    def sha256(self) -> str:
        """Hash of the records' JSON (of their ``repr`` when they have no JSON form)."""
        try:
            text = json.dumps(self.records, sort_keys=True, ensure_ascii=False, default=str)
        except (TypeError, ValueError, RecursionError):  # keys not strings, a cycle
            text = repr(self.records)
        # a lone surrogate in a key no field reads is no reason to fail
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def first_record(self) -> dict[str, Any]:
        """The first record, for lines naming its keys."""
        first = self.records[0] if self.records else None
        return dict(first) if isinstance(first, Mapping) else {}

    def describe(self) -> dict[str, Any]:
        """Where the data came from."""
        return {"format": self.format, "path": self.name, "records": len(self.records)}


def _as_records(records: Any, name: str) -> list[Mapping[str, Any]]:
    """The records as mappings; a ``DatasetError`` naming the first that is not a record
    (record ``i`` is "line" ``i + 1``)."""
    if isinstance(records, _DataFrame):
        raise DatasetError(
            name, "expected a list of records, got a DataFrame; pass df.to_dict('records')"
        )
    if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Iterable):
        raise DatasetError(
            name,
            "expected a list of records (dicts or objects with fields), got "
            f"{type(records).__name__}",
        )
    out = []
    for i, record in enumerate(records):
        try:
            out.append(as_record(record))
        except TypeError:  # vars() of an object without fields: None, a number, a string
            raise DatasetError(
                name,
                f"expected a dict or an object with fields, got {type(record).__name__}",
                line=i + 1,
            ) from None
    return out
