"""``run.strata``: the dataset column whose value each sample carries as its stratum.

Set when the parts are built, before any work: a dataset without columns (TREC, BEIR,
traces) is refused, and so is a column its first record does not have (with a did-you-mean).
Each row of ``samples.jsonl`` then carries ``stratum`` after its ``id``; with human labels
the ``confidence`` block is stratified (``harness.confidence.strata``), and ``harness label
--by`` draws per stratum from those rows.
"""

from __future__ import annotations

from typing import Any

from harness.core.errors import ConfigError, closest
from harness.core.protocols import Dataset
from harness.core.text import text_problem
from harness.core.types import RagSample
from harness.run.confidence import put_after


def stratify(dataset: Dataset, column: Any, who: str) -> None:
    """Tell ``dataset`` to give each sample ``column``'s value, or refuse in one line."""
    if not isinstance(column, str) or not column or text_problem(column) is not None:
        raise ConfigError(f"run.strata: expected the name of a dataset column, got {column!r}")
    if dataset.stratify is None:
        raise ConfigError(
            f"run.strata: the dataset {dataset.source} ({who}) has no columns to stratify by; "
            "strata need a dataset read from records (dataset=jsonl, csv, json or parquet, "
            "or records in Python)")
    first = dataset.first_record()
    if first and column not in first:
        names = sorted(k for k in first if isinstance(k, str))
        listed = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
        raise ConfigError(
            f"run.strata: the dataset {dataset.source} has no column {column!r} in its first "
            f"record{closest(column, names)}; its columns are {listed}")
    dataset.stratify(column)


def with_stratum(sample: RagSample, row: dict[str, Any]) -> None:
    """Put the sample's ``stratum`` right after the row's ``id``."""
    if sample.stratum is not None:
        put_after(row, "id", "stratum", sample.stratum)
