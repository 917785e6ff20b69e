"""Where the project's files are, and the labels of the bundled dataset."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "conf"
SHARED = ROOT.parent / "shared"
SAMPLE = ROOT / "harness" / "data" / "sample_rag.jsonl"


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
