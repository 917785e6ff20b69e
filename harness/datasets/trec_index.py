"""A TREC run indexed by byte offsets (``dataset=trec``), not held in memory.

One pass reads and checks every line (as ``trec_files`` reads them) and keeps, per query,
its id (in order of first appearance) and where its lines lie: a *block* is a stretch of
consecutive lines of one query (comment and blank lines inside it included). A run sorted
by query has one block a query and is then read back in file order, one query at a time;
an unsorted one (a query in several blocks) is read back block by block, by seeking.

Duplicates are refused as ``load_run`` refused them, at the first repeated line of the
file: inside a block while reading, across the blocks of a query after the pass (or when
a later line fails, for the lines before it).
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import numpy as np

from harness.core.errors import DatasetError
from harness.datasets.reading import (
    Signature,
    check_unchanged,
    open_regular,
    read_lines,
    signature,
)
from harness.datasets.trec_files import Ranked, ScoreType, run_cells, trec_order


def _duplicate(path: Path, qid: str, did: str, first: int, line: int) -> DatasetError:
    return DatasetError(
        str(path),
        f"query {qid!r} lists document {did!r} again (first on line {first}); "
        "a run ranks each document once (trec_eval refuses duplicate docs): keep one",
        line=line, field="doc_id",
    )


class RunIndex:
    """The run's queries and where their lines are (``RunIndex.build`` reads the file)."""

    def __init__(self, path: Path, score_type: ScoreType = "float") -> None:
        self.path, self.score_type = path, score_type
        self.ids: list[str] = []            # query ids, in order of first appearance
        self.pos: dict[str, int] = {}       # query id -> its index in ``ids``
        self.tags: set[str] = set()
        self._start = array("q")            # per block: byte offset of its first line,
        self._line = array("q")             # that line's number,
        self._query = array("I")            # and its query's index
        self._end = 0                       # the file's size (the last block's end)
        self._signature: Signature | None = None
        self._by_query: np.ndarray | None = None  # blocks grouped by query (unsorted run)
        self._first: np.ndarray | None = None     # each query's first entry in _by_query

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, qid: object) -> bool:
        return qid in self.pos

    @property
    def sorted(self) -> bool:
        """Whether each query's lines are together (one block a query)."""
        return len(self._start) == len(self.ids)

    def build(self) -> RunIndex:
        """Read and check the file once, keeping offsets; a ``DatasetError`` at the first
        bad line (or repeated document) of the file."""
        try:
            self._scan()
        except DatasetError as e:
            self._raise_repeat(before=e.line)
            raise
        self._raise_repeat(before=None)
        return self

    def _scan(self) -> None:
        offset, current = 0, -1
        docs: dict[str, int] = {}  # the current block's {doc id: line}

        def remember(sig: Signature) -> None:
            self._signature = sig

        for number, raw in read_lines(self.path, on_open=remember):
            at, offset = offset, offset + len(raw)
            self._end = offset
            cells = run_cells(self.path, raw, number)
            if cells is None:
                continue
            qid, did, _, tag = cells
            index = self.pos.get(qid)
            if index is None or index != current:
                if index is None:
                    index = self.pos[qid] = len(self.ids)
                    self.ids.append(sys.intern(qid))
                current, docs = index, {}
                self._start.append(at)
                self._line.append(number)
                self._query.append(index)
            if did in docs:
                raise _duplicate(self.path, qid, did, docs[did], number)
            docs[did] = number
            if tag not in self.tags:
                self.tags.add(tag)

    def _raise_repeat(self, before: int | None) -> None:
        """Raise the first document repeated across a query's blocks, on a line before
        ``before`` (all lines: None); nothing when there is none."""
        if self.sorted or self._signature is None:
            return
        counts = np.bincount(np.asarray(self._query), minlength=len(self.ids))
        found: tuple[int, str, str, int] | None = None  # line, qid, did, first line
        with self._open() as f:
            for qi in np.flatnonzero(counts > 1).tolist():
                seen: dict[str, int] = {}
                for number, did, _ in self._query_rows(f, qi, before):
                    if did in seen:
                        if found is None or number < found[0]:
                            found = (number, self.ids[qi], did, seen[did])
                        break
                    seen[did] = number
        if found is not None:
            line, qid, did, first = found
            raise _duplicate(self.path, qid, did, first, line)

    def _blocks_of(self, qi: int) -> list[int]:
        """The query's blocks, in file order."""
        if self.sorted:
            return [qi]
        if self._by_query is None:
            query = np.asarray(self._query)
            self._by_query = np.argsort(query, kind="stable")
            counts = np.bincount(query, minlength=len(self.ids))
            self._first = np.concatenate(([0], np.cumsum(counts)))
        assert self._first is not None
        blocks: list[int] = self._by_query[self._first[qi]:self._first[qi + 1]].tolist()
        return blocks

    def _query_rows(self, f: BinaryIO, qi: int, before: int | None = None
                    ) -> Iterator[tuple[int, str, float]]:
        """``(line, doc id, score)`` of each line of the query, lines from ``before`` on
        left out."""
        for block in self._blocks_of(qi):
            yield from self._rows(f, block, before)

    @contextmanager
    def _open(self) -> Iterator[BinaryIO]:
        with open_regular(self.path) as f:
            if self._signature is not None:
                check_unchanged(self.path, self._signature, signature(f))
            yield f

    def _rows(self, f: BinaryIO, block: int, before: int | None = None
              ) -> Iterator[tuple[int, str, float]]:
        """``(line, doc id, score)`` of each run line of ``block`` before line ``before``."""
        start = self._start[block]
        end = self._start[block + 1] if block + 1 < len(self._start) else self._end
        f.seek(start)
        number = self._line[block]
        for raw in f.read(end - start).split(b"\n"):
            if before is not None and number >= before:
                return
            cells = run_cells(self.path, raw, number) if raw else None
            if cells is not None:
                yield number, cells[1], cells[2]
            number += 1

    @contextmanager
    def reader(self) -> Iterator[RunReader]:
        """A reader of the queries' ranked documents, with the file open."""
        with self._open() as f:
            yield RunReader(self, f)

    def ranked(self, f: BinaryIO, qid: str) -> Ranked:
        """The query's documents in trec_eval's order ([] for a query not in the run)."""
        qi = self.pos.get(qid)
        if qi is None:
            return []
        pairs = [(did, score) for _, did, score in self._query_rows(f, qi)]
        return trec_order(pairs, self.score_type)


class RunReader:
    """``RunIndex.ranked`` on an open file."""

    def __init__(self, index: RunIndex, f: BinaryIO) -> None:
        self.index, self.file = index, f

    def ranked(self, qid: str) -> Ranked:
        """The query's documents best first ([] for a query the run lacks)."""
        return self.index.ranked(self.file, qid)
