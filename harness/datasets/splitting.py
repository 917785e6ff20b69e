"""A JSON-lines file split for ``run.shards`` (the ``Splittable`` capability of
``harness.datasets.files.JsonlDataset``): contiguous byte ranges that end at line ends, found
by one scan for newlines, so that no worker parses another's lines and each numbers its lines
(and the ids of records without one) as the whole file does; then the checks that need every
record, run in the parent on what each part saw (``Seen``).
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.core.capabilities import Span
from harness.core.types import RagSample
from harness.datasets.fields import MappedColumns
from harness.datasets.filebase import FileDataset, first_record
from harness.datasets.reading import (
    BLOCK,
    check_unchanged,
    decode_line,
    load_json,
    open_regular,
    read_block,
    read_lines,
    signature,
)
from harness.datasets.records import RecordParser


@dataclass
class Seen:
    """What one part saw that the whole file's checks need: the mapped columns its records
    had (``None``: it read none), and each record's id hash and line number, in order."""

    columns: MappedColumns | None = None
    id_hashes: array[int] = field(default_factory=lambda: array("Q"))
    id_lines: array[int] = field(default_factory=lambda: array("Q"))


def byte_spans(path: Path, count: int, limit: int | None) -> list[Span]:
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


class JsonlSpan(FileDataset):
    """The lines of one byte range of a JSON-lines file, read and validated as the whole
    file's are, except what needs every record: that a mapped column appears in some
    record (``columns``), and that ids are unique across shards (``id_hashes`` and
    ``id_lines``; the parent checks both)."""

    def __init__(self, whole: FileDataset, span: Span) -> None:
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

    def read_samples(self, limit: int | None = None) -> Iterator[RagSample]:
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

    def split_seen(self) -> Seen:
        """What the whole file's checks need from this part (``check_split``)."""
        return Seen(self.columns, self.id_hashes, self.id_lines)


def id_hash(sample_id: str) -> int:
    """A 64-bit hash of an id, the same in every process (``hash()`` is salted per process)."""
    digest = hashlib.blake2b(sample_id.encode("utf-8", "surrogatepass"), digest_size=8)
    return int.from_bytes(digest.digest(), "little")


def check_split(whole: FileDataset, seen: Sequence[Any]) -> None:
    """Raise the ``DatasetError`` one reader of the whole file would have: an id used again
    in a later part, or a column ``dataset.fields`` maps that no record of any part has."""
    parts = [s for s in seen if isinstance(s, Seen)]
    unique_ids(whole.path, whole.fields, [s.id_hashes for s in parts],
               [s.id_lines for s in parts])
    mapped_columns(whole.source, whole.fields, [s.columns for s in parts if s.columns is not None])


def mapped_columns(path: str, fields: Mapping[str, str], shards: Sequence[MappedColumns]) -> None:
    """Raise the ``DatasetError`` one reader of the whole file would have: a column
    mapped by ``dataset.fields`` that no record of any shard has."""
    whole = MappedColumns(path, fields, "dataset.fields.{}")
    for columns in shards:
        whole.absorb(columns)
    whole.finish()


def unique_ids(
    path: Path, fields: Mapping[str, str], hashes: Sequence[array[int]], lines: Sequence[array[int]]
) -> None:
    """Raise the ``DatasetError`` one reader of the whole file would have for the first id
    used again in a later shard (within a shard, its worker has already raised it).

    Ids are compared by 64-bit hash; the lines of a match are read again and parsed in
    order, so the error is the parser's own (and a mere hash collision passes).
    """
    every = np.concatenate([np.frombuffer(h, np.uint64) for h in hashes] or
                           [np.empty(0, np.uint64)])
    ordered = np.sort(every, kind="stable")
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    if not len(repeated):
        return
    at = np.concatenate([np.frombuffer(n, np.uint64) for n in lines])
    first: dict[int, int] = {}
    for position in np.flatnonzero(np.isin(every, repeated)):
        key, line = int(every[position]), int(at[position])
        if key not in first:
            first[key] = line
            continue
        parser = RecordParser(str(path), fields, cells_are_text=False)
        for number, text in read_numbered(path, (first[key], line)):
            parser.parse(load_json(text, path, number), number - 1, number)  # raises


def read_numbered(path: Path, numbers: Sequence[int]) -> list[tuple[int, str]]:
    """Lines ``numbers`` (1-based, ascending) of ``path``, decoded."""
    wanted, out = set(numbers), []
    for number, raw in read_lines(path):
        if number in wanted:
            out.append((number, decode_line(raw, path, number)))
            if len(out) == len(wanted):
                break
    return out
