"""Samples handed over in memory (the Python API): plain dicts in ragas's field names,
ragas's legacy names, or deepeval ``LLMTestCase`` names (``input``, ``actual_output``,
``expected_output``, ``retrieval_context``)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from harness.datasets.files import batched
from harness.datasets.records import RecordParser, field_map
from harness.types import Corpus, RagSample


@runtime_checkable
class _PydanticModel(Protocol):
    """A pydantic v2 model (ragas ``SingleTurnSample``, deepeval ``LLMTestCase``)."""

    def model_dump(self) -> Mapping[str, Any]: ...


@runtime_checkable
class _PandasRow(Protocol):
    """An object with ``to_dict`` (a pandas ``Series``, e.g. a row of ``iterrows()``)."""

    def to_dict(self) -> Mapping[str, Any]: ...


@runtime_checkable
class _PydanticV1Model(Protocol):
    """A pydantic v1 model."""

    def dict(self) -> Mapping[str, Any]: ...


def as_record(sample: Any) -> Mapping[str, Any]:
    """A dict, or the fields of an object with ``model_dump``/``to_dict``/``dict``, else its
    ``__dict__`` (ragas ``SingleTurnSample``, deepeval ``LLMTestCase``, dataclasses)."""
    if isinstance(sample, Mapping):
        return sample
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

    def __init__(
        self, records: Sequence[Any], fields: Mapping[str, str] | None = None, name: str = "records"
    ) -> None:
        self.records = [as_record(r) for r in records]
        self.fields = field_map(fields)
        self.name = name
        self.source = name

    def check(self) -> None:
        """Nothing to open."""

    def estimate_count(self) -> int:
        """The number of records."""
        return len(self.records)

    def samples(self, limit: int | None = None) -> Iterator[RagSample]:
        """Validated samples; record ``i`` is "line" ``i + 1`` in messages."""
        parser = RecordParser(self.name, self.fields, cells_are_text=False)
        for i, raw in enumerate(self.records[:limit]):
            yield parser.parse(raw, i, i + 1)

    def batches(self, batch_size: int, limit: int | None = None) -> Iterator[list[RagSample]]:
        """Lists of at most ``batch_size`` samples."""
        return batched(self.samples(limit), batch_size)

    def corpus(self) -> Corpus | None:
        """None: records in memory have no corpus to search."""
        return None

    def sha256(self) -> str:
        """Hash of the records' JSON."""
        text = json.dumps(self.records, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def describe(self) -> dict[str, Any]:
        """Where the data came from."""
        return {"format": self.format, "path": self.name, "records": len(self.records)}
