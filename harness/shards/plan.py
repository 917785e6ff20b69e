"""A dataset split into contiguous shards, in sample order, for one run evaluated by several
workers (``run.shards``; ``harness.shards`` runs them).

A JSON-lines file splits by byte ranges that end at line ends, found by one scan for
newlines: no worker parses another's lines, and each numbers its lines (and the ids of
records without one) as the whole file does. Any other dataset splits by sample index:
each worker reads, validates and skips the samples before its own.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from harness.core.protocols import Dataset
from harness.core.types import Corpus, RagSample
from harness.datasets.fields import MappedColumns
from harness.datasets.files import JsonlDataset, batched, first_record, jsonl_file
from harness.datasets.reading import (
    BLOCK,
    Signature,
    check_unchanged,
    decode_line,
    load_json,
    open_regular,
    read_block,
    signature,
)
from harness.datasets.records import RecordParser


@dataclass(frozen=True)
class Span:
    """Shard ``index`` (0-based) of ``count``.

    By bytes (``first_line`` > 0): bytes ``[start, stop)`` of the file, lines
    ``first_line..last_line`` (0: to the end), of the file version ``signature``. By index: samples
    ``[start, stop)``, ``stop`` ``None`` for all the rest.
    """

    index: int
    count: int
    start: int
    stop: int | None
    first_line: int = 0
    last_line: int = 0
    signature: Signature | None = None

    @property
    def by_bytes(self) -> bool:
        """Whether the shard is a byte range of a JSON-lines file."""
        return self.first_line > 0

    def describe(self) -> str:
        """``shard 2 of 4 (lines 1001-2000)``, for messages."""
        if self.by_bytes:
            last = f"{self.last_line:,}" if self.last_line else "end"
            where = f"lines {self.first_line:,}-{last}"
        else:
            where = f"samples {self.start:,}-" + ("end" if self.stop is None else f"{self.stop:,}")
        return f"shard {self.index + 1} of {self.count} ({where})"


def plan(dataset: Dataset, count: int, limit: int | None) -> list[Span]:
    """At most ``count`` non-empty contiguous shards of ``dataset``'s first ``limit``
    samples (fewer when it has fewer lines or samples)."""
    jsonl = jsonl_file(dataset)
    if jsonl is not None:
        return _byte_spans(jsonl.path, count, limit)
    total = dataset.estimate_count()  # may be approximate: the last shard reads to the end
    total = total if limit is None else min(total, limit)
    count = min(count, max(total, 1))  # more shards than samples: one per sample
    cuts = sorted({i * total // count for i in range(count)})
    return [
        Span(i, len(cuts), start, cuts[i + 1] if i + 1 < len(cuts) else limit)
        for i, start in enumerate(cuts)
    ]


def _byte_spans(path: Path, count: int, limit: int | None) -> list[Span]:
    with open_regular(path) as f:
        version = signature(f)
        end = version[2] if limit is None else _end_of_records(f, path, limit)
        f.seek(0)
        # shard i+1 starts at the first line end at or after byte (i+1)*end//count: computed
        # as it is needed, never listed (run.shards=10**9 on a 6-line file makes 6 shards)
        targets = count - 1
        cuts, lines = [0], [0]  # where each shard starts: byte offset, lines before it
        offset = seen = done = 0  # bytes read, newlines in them, targets placed
        while done < targets and offset < end and (block := read_block(f, path)):
            block, at = block[: end - offset], 0
            counted = before = 0  # newlines in block[:counted] (counted once, not per cut)
            while done < targets:
                target = (done + 1) * end // count
                newline = block.find(b"\n", max(target - 1 - offset, at))
                if newline < 0:
                    break  # in a later block
                at = newline + 1
                if offset + at < end:
                    before += block.count(b"\n", counted, at)
                    counted = at
                    cuts.append(offset + at)
                    lines.append(seen + before)
                done += 1
            seen += block.count(b"\n")
            offset += len(block)
    if end == 0:
        return []
    bounds = [*cuts, end]
    return [
        Span(i, len(cuts), bounds[i], bounds[i + 1], lines[i] + 1,
             lines[i + 1] if i + 1 < len(cuts) else 0, version)
        for i in range(len(cuts))
    ]


def _end_of_records(f: Any, path: Path, limit: int) -> int:
    """The byte offset just after the ``limit``-th non-blank line (the file's size when it
    has fewer)."""
    records, offset, rest = 0, 0, b""
    while records < limit and (block := read_block(f, path)):
        parts = (rest + block).split(b"\n")
        rest = parts.pop()
        for part in parts:
            offset += len(part) + 1
            if part.decode("utf-8", "replace").strip():
                records += 1
                if records >= limit:
                    return offset
    return offset + len(rest)


def shard(dataset: Dataset, span: Span) -> Dataset:
    """The part of ``dataset`` that ``span`` names (in a worker)."""
    jsonl = jsonl_file(dataset)
    if span.by_bytes and jsonl is not None:
        return JsonlSpan(jsonl, span)
    return IndexShard(dataset, span)


class JsonlSpan(JsonlDataset):
    """The lines of one byte range of a JSON-lines file, read and validated as the whole
    file's are, except what needs every record: that a mapped column appears in some
    record (``columns``), and that ids are unique across shards (``id_hashes`` and
    ``id_lines``; the parent checks both)."""

    def __init__(self, whole: JsonlDataset, span: Span) -> None:
        super().__init__(whole.path, whole.fields)
        self.documents = whole.documents  # dataset.corpus: the whole file's documents
        self.format = whole.format
        self.span = span
        self.columns: MappedColumns | None = None
        self.id_hashes, self.id_lines = array("Q"), array("Q")

    def _lines(self) -> Iterator[tuple[int, str]]:
        span = self.span
        assert span.stop is not None and span.signature is not None
        with open_regular(self.path) as f:
            check_unchanged(self.path, span.signature, signature(f))
            f.seek(span.start)
            number, rest, left = span.first_line - 1, b"", span.stop - span.start
            while left > 0 and (block := f.read(min(BLOCK, left))):
                left -= len(block)
                parts = (rest + block).split(b"\n")
                rest = parts.pop()
                for part in parts:
                    number += 1
                    yield number, decode_line(part + b"\n", self.path, number)
            if rest:
                yield number + 1, decode_line(rest, self.path, number + 1)
            check_unchanged(self.path, span.signature, signature(f))

    def samples(self, limit: int | None = None) -> Iterator[RagSample]:
        """The span's samples in file order (``limit`` is the plan's: ignored)."""
        parser = RecordParser(str(self.path), self.fields, cells_are_text=False)
        self.columns = parser.columns
        first = self.span.first_line == 1 and self.format == "jsonl"
        for number, text in self._lines():
            if not text.strip():
                continue
            if first:
                sample = first_record(parser, text, self.path, number)
                first = False
            else:
                sample = parser.parse(load_json(text, self.path, number), number - 1, number)
            self.id_hashes.append(id_hash(sample.id))
            self.id_lines.append(number)
            yield sample


def id_hash(sample_id: str) -> int:
    """A 64-bit hash of an id, the same in every process (``hash()`` is salted per process)."""
    digest = hashlib.blake2b(sample_id.encode("utf-8", "surrogatepass"), digest_size=8)
    return int.from_bytes(digest.digest(), "little")


class IndexShard:
    """Samples ``[span.start, span.stop)`` of any dataset, reading (and validating) the
    ones before them."""

    def __init__(self, whole: Dataset, span: Span) -> None:
        self.whole, self.span = whole, span
        self.source, self.min_grade = whole.source, whole.min_grade

    def check(self) -> None:
        """The whole dataset's check."""
        self.whole.check()

    def estimate_count(self) -> int:
        """The shard's size as planned (0: to the end, unknown)."""
        return 0 if self.span.stop is None else self.span.stop - self.span.start

    def samples(self, limit: int | None = None) -> Iterator[RagSample]:
        """The shard's samples, in order."""
        return islice(self.whole.samples(self.span.stop), self.span.start, None)

    def batches(self, batch_size: int, limit: int | None = None) -> Iterator[list[RagSample]]:
        """The shard's samples in lists of at most ``batch_size``."""
        return batched(self.samples(), batch_size)

    def corpus(self) -> Corpus | None:
        """The whole dataset's corpus."""
        return self.whole.corpus()

    def sha256(self) -> str:
        """The whole dataset's hash."""
        return self.whole.sha256()

    def describe(self) -> dict[str, Any]:
        """The whole dataset's description."""
        return self.whole.describe()
