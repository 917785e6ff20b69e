"""Samples handed over in memory (the Python API): plain dicts in ragas's field names,
ragas's legacy names, or deepeval ``LLMTestCase`` names (``input``, ``actual_output``,
``expected_output``, ``retrieval_context``)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from harness.datasets.files import batched
from harness.datasets.records import RecordParser, field_map
from harness.types import RagSample


def as_record(sample: Any) -> Mapping[str, Any]:
    """A dict, or the fields of an object with ``model_dump``/``to_dict``/``__dict__``
    (ragas ``SingleTurnSample``, deepeval ``LLMTestCase``)."""
    if isinstance(sample, Mapping):
        return sample
    for method in ("model_dump", "to_dict", "dict"):
        if callable(getattr(sample, method, None)):
            return dict(getattr(sample, method)())
    return dict(vars(sample))


class RecordsDataset:
    """A dataset over records already in memory.

    Args:
        records: The samples, in order (dicts or objects with their fields).
        fields: Harness field -> record key, where the keys differ.
        name: Shown in outputs.
    """

    format = "records"

    def __init__(
        self, records: Sequence[Any], fields: Mapping[str, str] | None = None, name: str = "records"
    ) -> None:
        self.records = [as_record(r) for r in records]
        self.fields = field_map(fields)
        self.name = name

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

    def sha256(self) -> str:
        """Hash of the records' JSON."""
        text = json.dumps(self.records, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def describe(self) -> dict[str, Any]:
        """Where the data came from."""
        return {"format": self.format, "path": self.name, "records": len(self.records)}
