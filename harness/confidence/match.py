"""Tie the rows of a labels file to the chunks a run retrieved.

A label names its chunk by ``context_id`` (every chunk of the sample with that id),
``context`` (every chunk with that text; a text cut with ``…`` names the chunks it starts,
either way round, since ``samples.jsonl`` cuts texts) or ``rank``, tried in that order. A
sample counts as labelled when every one of its retrieved chunks has a verdict. Labels for
samples or chunks the run does not have, and samples labelled in part, are counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from harness.confidence.labels import Label, LabelFile
from harness.core.errors import DatasetError

CUT = "…"


@dataclass(frozen=True)
class RunSample:
    """One sample as the run retrieved it: per chunk, rank 1 first, its document id and
    its text (None where the run does not know it; a text may end in ``…``, cut)."""

    id: str
    context_ids: tuple[str | None, ...]
    contexts: tuple[str | None, ...] = ()

    def __len__(self) -> int:
        return max(len(self.context_ids), len(self.contexts))


@dataclass(frozen=True)
class Judged:
    """One sample as a variant scored it: its score (None: unscored) and chunk verdicts."""

    id: str
    score: float | None
    verdicts: tuple[float | None, ...] | None = None


@dataclass
class Matched:
    """Human verdicts per fully labelled sample (rank order), and what did not fit."""

    verdicts: dict[str, tuple[int, ...]] = field(default_factory=dict)
    rows: int = 0            # label rows with a verdict
    blank: int = 0           # rows without a verdict yet
    used: int = 0            # rows that matched at least one chunk
    unknown_samples: int = 0  # rows naming a sample the run does not have
    unknown_chunks: int = 0  # rows naming no chunk of their sample
    partial_samples: int = 0  # samples with some, not all, chunks labelled

    def counts(self) -> dict[str, int]:
        """The counts the summary reports beside the interval."""
        return {
            "label_rows": self.rows, "blank_rows": self.blank, "matched_rows": self.used,
            "unknown_samples": self.unknown_samples, "unknown_chunks": self.unknown_chunks,
            "partially_labelled_samples": self.partial_samples,
            "labelled_samples": len(self.verdicts),
        }


def same_text(label: str, chunk: str) -> bool:
    """True when a label's text names the chunk: equal, or one is the other cut at ``…``."""
    label, chunk = label.strip(), chunk.strip()
    if label == chunk:
        return True
    if label.endswith(CUT) and len(label) > 1 and chunk.startswith(label[:-1]):
        return True
    return chunk.endswith(CUT) and len(chunk) > 1 and label.startswith(chunk[:-1])


def chunks_of(label: Label, sample: RunSample) -> list[int]:
    """The 0-based ranks of ``sample``'s chunks that ``label`` names."""
    if label.context_id is not None:
        return [i for i, c in enumerate(sample.context_ids) if c == label.context_id]
    if label.context is not None:
        text = label.context
        return [i for i, c in enumerate(sample.contexts) if c is not None and same_text(text, c)]
    if label.rank is not None and label.rank <= len(sample):
        return [label.rank - 1]
    return []


def match(labels: LabelFile, samples: Iterable[RunSample]) -> Matched:
    """Human verdicts for the run's samples; a ``DatasetError`` naming both lines when two
    rows give one chunk different verdicts."""
    by_id = {s.id: s for s in samples}
    out = Matched(rows=len(labels.labels), blank=labels.blank)
    given: dict[str, dict[int, tuple[int, int]]] = {}  # sample -> rank -> (verdict, line)
    for label in labels.labels:
        sample = by_id.get(label.sample_id)
        if sample is None:
            out.unknown_samples += 1
            continue
        ranks = chunks_of(label, sample)
        if not ranks:
            out.unknown_chunks += 1
            continue
        out.used += 1
        seen = given.setdefault(sample.id, {})
        for rank in ranks:
            before = seen.get(rank)
            if before is not None and before[0] != label.relevant:
                raise DatasetError(
                    labels.path,
                    f"sample {sample.id!r}, rank {rank + 1}: line {before[1]} says "
                    f"{before[0]}, this line {label.relevant}; keep one verdict per chunk",
                    line=label.line, field="relevant",
                )
            seen[rank] = (label.relevant, label.line)
    for sample_id, seen in given.items():
        size = len(by_id[sample_id])
        if len(seen) == size:
            out.verdicts[sample_id] = tuple(seen[r][0] for r in range(size))
        else:
            out.partial_samples += 1
    return out


def run_sample(row: dict[str, Any]) -> RunSample:
    """A ``samples.jsonl`` row as a ``RunSample``: its ``chunks`` (``id``, ``text``), or
    where the row has none, its ``retrieved_context_ids``."""
    chunks = row.get("chunks")
    if isinstance(chunks, list):
        ids = tuple(_text(c.get("id")) if isinstance(c, dict) else None for c in chunks)
        texts = tuple(_text(c.get("text")) if isinstance(c, dict) else None for c in chunks)
        return RunSample(str(row["id"]), ids, texts)
    retrieved = row.get("retrieved_context_ids")
    ids = tuple(_text(i) for i in retrieved) if isinstance(retrieved, list) else ()
    if not ids and isinstance(row.get("verdicts"), list):
        ids = (None,) * len(row["verdicts"])
    return RunSample(str(row["id"]), ids)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def judged(row: dict[str, Any], variant: str | None = None) -> Judged:
    """How one variant scored a ``samples.jsonl`` row: the row's own ``score`` and
    ``verdicts``, or with several variants those under ``variants.<name>``."""
    source = row if variant is None else (row.get("variants") or {}).get(variant)
    if not isinstance(source, dict):
        return Judged(str(row["id"]), None)
    score, verdicts = source.get("score"), source.get("verdicts")
    return Judged(
        str(row["id"]), None if score is None else float(score),
        tuple(verdicts) if isinstance(verdicts, list) else None,
    )
