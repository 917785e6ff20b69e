"""Where the project's files are, and the labels of the bundled dataset."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"
#: Small subsets of the public data sets, shipped with the tests (licences beside them).
TEST_DATA = ROOT / "tests" / "data"
#: Where the full public data sets are when $HARNESS_SHARED_DATA is unset.
DEFAULT_SHARED_DATA = ROOT.parent / "shared" / "data"
#: What a selected ``shared_data`` test says when its data is not there.
SHARED_DATA_MISSING = (
    "the shared_data lane needs the public data sets: put them in ../shared/data beside the "
    "clone or set HARNESS_SHARED_DATA"
)
SAMPLE = ROOT / "harness" / "data" / "sample_rag.jsonl"


def shared_data(name: str = "") -> Path:
    """The full public data sets (or the set ``name`` among them): ``$HARNESS_SHARED_DATA``
    when set, else ``../shared/data`` beside the clone. The one place tests find them: a
    test that reads one is marked ``shared_data`` (tests/conftest.py fails it in one line
    when the folder is missing)."""
    root = Path(os.environ.get("HARNESS_SHARED_DATA") or DEFAULT_SHARED_DATA)
    return root / name if name else root


def sample_rows() -> list[dict[str, Any]]:
    """The records of the bundled dataset."""
    return [json.loads(line) for line in SAMPLE.read_text("utf-8").splitlines()]


def sample_labels() -> dict[str | tuple[str, str], int | float]:
    """Labels for the bundled dataset: a chunk is relevant iff its id is a reference id
    (the test judge's labels, keyed by (question, chunk))."""
    labels: dict[str | tuple[str, str], int | float] = {}
    for row in sample_rows():
        for chunk, cid in zip(row["retrieved_contexts"], row["retrieved_context_ids"], strict=True):
            labels[(row["user_input"], chunk)] = int(cid in row["reference_context_ids"])
    return labels
