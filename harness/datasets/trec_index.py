"""A TREC run indexed by byte offsets (``dataset=trec``), not held in memory.

One pass reads and checks every line (as ``trec_files`` reads them) and keeps, per query,
an index in a table of query ids (``trec_table.IdTable``, shared with the qrels) and,
per *block* (a
stretch of consecutive lines of one query, comment and blank lines inside it included),
its byte offset. A run sorted by query has one block a query; an unsorted one (a query in
several blocks) also keeps each block's query. Queries are read back in windows of at most
``WINDOW_BYTES``: the window's blocks in file order, neighbours read in one go, so a run
interleaved round robin costs a few reads a window instead of one per block.

Duplicates are refused as ``load_run`` refused them, at the first repeated line of the
file: inside a block while reading, across the blocks of a query after the pass (or when
a later line fails, for the lines before it).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
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
from harness.datasets.trec_table import IdTable

#: The most bytes of run lines a window of queries holds (a window has one query at least).
WINDOW_BYTES = 1 << 20
#: The most blocks a window holds, and the gap between two of them read through.
WINDOW_BLOCKS, GAP = 1024, 512
#: ``(byte offset, document id, score)`` of a run line.
Row = tuple[int, str, float]


def _duplicate(path: Path, qid: str, did: str, first: int, line: int) -> DatasetError:
    return DatasetError(
        str(path),
        f"query {qid!r} lists document {did!r} again (first on line {first}); "
        "a run ranks each document once (trec_eval refuses duplicate docs): keep one",
        line=line, field="doc_id",
    )


def _changed(path: Path) -> DatasetError:
    return DatasetError(str(path), "changed while the run read it (a line no longer reads "
                        "as it did); run again once the file is complete")


class RunIndex:
    """The run's queries and where their lines are (``RunIndex.build`` reads the file).

    ``table`` maps each query id to its index: the run's queries, in order of first
    appearance, are ``0 .. len(run) - 1`` (other files may add theirs after)."""

    def __init__(self, path: Path, score_type: ScoreType = "float") -> None:
        self.path, self.score_type = path, score_type
        self.table = IdTable()
        self.count = 0                      # the run's queries
        self.tags: set[str] = set()
        self._start = array("q")            # per block: byte offset of its first line
        self._query: array[int] | None = array("I")  # per block: its query (until grouped)
        self._end = 0                       # the file's size (the last block's end)
        self._bound = 0                     # the offset of the line being checked
        self._signature: Signature | None = None
        self._by_query: np.ndarray | None = None  # blocks grouped by query (unsorted run)
        self._first: np.ndarray | None = None     # each query's first entry in it, and end

    def __len__(self) -> int:
        return self.count

    @property
    def sorted(self) -> bool:
        """Whether each query's lines are together (one block a query)."""
        return len(self._start) == self.count

    def build(self) -> RunIndex:
        """Read and check the file once, keeping offsets; a ``DatasetError`` at the first
        bad line (or repeated document) of the file."""
        try:
            self._scan()
        except DatasetError as e:
            self._group()
            self._raise_repeat(before=None if e.line is None else self._bound)
            raise
        self._group()
        self._raise_repeat(before=None)
        return self

    def _group(self) -> None:
        """Count the queries and group an unsorted run's blocks by query, dropping the
        blocks' query list (a sorted run's block i is query i)."""
        self.count = len(self.table)
        if not self.sorted and self._query is not None:
            query = np.asarray(self._query)
            kind = np.uint32 if len(query) < 1 << 32 else np.int64
            self._by_query = np.argsort(query, kind="stable").astype(kind)
            counts = np.bincount(query, minlength=self.count)
            self._first = np.concatenate(([0], np.cumsum(counts))).astype(kind)
        self._query = None

    def _scan(self) -> None:
        offset, current = 0, None
        docs: dict[str, int] = {}  # the current block's {doc id: line}
        table, query = self.table, self._query
        assert query is not None

        def remember(sig: Signature) -> None:
            self._signature = sig
            if sig[2] < 1 << 32:  # offsets fit in 4 bytes
                self._start = array("I")

        for number, raw in read_lines(self.path, on_open=remember):
            at, offset = offset, offset + len(raw)
            self._bound = at
            cells = run_cells(self.path, raw, number)
            self._bound = self._end = offset
            if cells is None:
                continue
            qid, did, _, tag = cells
            if qid != current:
                index = table.add(qid)
                current, docs = qid, {}
                self._start.append(at)
                query.append(index)
            if did in docs:
                self._bound = at
                raise _duplicate(self.path, qid, did, docs[did], number)
            docs[did] = number
            if tag not in self.tags:
                self.tags.add(tag)

    def _raise_repeat(self, before: int | None) -> None:
        """Raise the first document repeated across a query's blocks, on a line starting
        before byte ``before`` (all lines: None); nothing when there is none."""
        if self.sorted or self._signature is None:
            return
        assert self._first is not None
        counts = np.diff(self._first)
        found: tuple[int, int, str, int] | None = None  # offset, query, doc, first offset
        with self._open() as f:
            for qi, rows in self._read(f, np.flatnonzero(counts > 1), before, scores=False):
                seen: dict[str, int] = {}
                for at, did, _ in rows:
                    if did in seen:
                        if found is None or at < found[0]:
                            found = (at, qi, did, seen[did])
                        break
                    seen[did] = at
        if found is not None:
            at, qi, did, first = found
            qid = self.table.id_at(qi)
            raise _duplicate(self.path, qid, did, self._line_of(first), self._line_of(at))

    def _line_of(self, offset: int) -> int:
        """The number of the line starting at byte ``offset``."""
        lines = 1
        with self._open() as f:
            while offset > 0:
                data = f.read(min(offset, 1 << 20))
                lines, offset = lines + data.count(b"\n"), offset - len(data)
        return lines

    def _blocks(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The queries' blocks (a query's in file order), each block's query, and how many
        blocks each query has."""
        if self._by_query is None or self._first is None:
            return queries, queries, np.ones(len(queries), dtype=np.int64)
        lo = self._first[queries].astype(np.int64)
        counts = self._first[queries + 1].astype(np.int64) - lo
        owner = np.repeat(queries, counts)
        within = np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)
        return self._by_query[np.repeat(lo, counts) + within].astype(np.int64), owner, counts

    def _read(self, f: BinaryIO, queries: np.ndarray, before: int | None = None,
              scores: bool = True) -> Iterator[tuple[int, list[Row]]]:
        """``(query, its rows in file order)`` for each of ``queries``, in that order, lines
        from byte ``before`` on left out (without ``scores``, each score is 0); read a
        window at a time."""
        starts = np.frombuffer(self._start, dtype=np.int64 if self._start.typecode == "q"
                               else np.uint32)  # a view: no copy of the index
        last = len(starts) - 1
        done, step = 0, max(1, WINDOW_BLOCKS * max(self.count, 1) // max(len(starts), 1))
        while done < len(queries):
            blocks, owner, counts = self._blocks(queries[done:done + step])
            begin = starts[blocks].astype(np.int64)
            stop = np.where(blocks < last, starts[np.minimum(blocks + 1, last)], self._end)
            sizes = np.add.reduceat(stop - begin, np.cumsum(counts) - counts)
            taken = max(1, min(int(np.searchsorted(np.cumsum(sizes), WINDOW_BYTES, "right")),
                               int(np.searchsorted(np.cumsum(counts), WINDOW_BLOCKS, "right"))))
            cut = int(counts[:taken].sum())  # a window of whole queries
            rows: dict[int, list[Row]] = {q: [] for q in queries[done:done + taken].tolist()}
            self._window(f, (begin[:cut], stop[:cut]), owner[:cut], rows, before, scores)
            yield from rows.items()
            done += taken

    def _window(self, f: BinaryIO, bounds: tuple[np.ndarray, np.ndarray], owner: np.ndarray,
                rows: dict[int, list[Row]], before: int | None, scores: bool) -> None:
        """Read the blocks (``bounds``: their first and end offsets; in file order,
        neighbours in one read) into ``rows``."""
        order = np.argsort(bounds[0], kind="stable")
        begin, stop, whose = bounds[0][order], bounds[1][order], owner[order]
        cuts = np.flatnonzero(begin[1:] - stop[:-1] > GAP) + 1
        edges = [0, *cuts.tolist(), len(begin)]
        begin_l, stop_l, whose_l = begin.tolist(), stop.tolist(), whose.tolist()
        cut = 5 if scores else 3  # split the columns up to the score (or the doc id)
        for a, b in zip(edges[:-1], edges[1:], strict=True):
            at, k = begin_l[a], a
            f.seek(at)
            data = f.read(stop_l[b - 1] - at)
            out, stop = rows[whose_l[k]], stop_l[k]
            for raw in data.split(b"\n"):
                if at >= stop:  # the next block (lines between two blocks are skipped)
                    k += 1
                    if k == b:
                        break
                    out, stop = rows[whose_l[k]], stop_l[k]
                if before is not None and at >= before:
                    return
                if at >= begin_l[k]:
                    try:
                        text = raw.decode("utf-8")
                        if at == 0 and text.startswith("\ufeff"):
                            text = text[1:]
                        cells = text.split(None, cut)
                        if cells and not cells[0].startswith("#"):
                            out.append((at, cells[2], float(cells[4]) if scores else 0.0))
                    except (UnicodeDecodeError, IndexError, ValueError):
                        raise _changed(self.path) from None
                at += len(raw) + 1

    @contextmanager
    def _open(self) -> Iterator[BinaryIO]:
        with open_regular(self.path) as f:
            if self._signature is not None:
                check_unchanged(self.path, self._signature, signature(f))
            yield f

    @contextmanager
    def reader(self) -> Iterator[RunReader]:
        """A reader of the queries' ranked documents, with the file open."""
        with self._open() as f:
            yield RunReader(self, f)


class RunReader:
    """The run's queries ranked, read a window at a time from an open file."""

    def __init__(self, index: RunIndex, f: BinaryIO) -> None:
        self.index, self.file = index, f

    def ranked(self, queries: Iterable[tuple[str, int]]
               ) -> Iterator[tuple[str, int, Ranked]]:
        """``(query id, index, documents in trec_eval's order)`` for each ``(query id,
        index)`` of ``queries`` (no documents for a query the run lacks)."""
        batch: list[tuple[str, int]] = []
        for pair in queries:
            batch.append(pair)
            if len(batch) == WINDOW_BLOCKS:
                yield from self._ranked(batch)
                batch = []
        yield from self._ranked(batch)

    def _ranked(self, batch: list[tuple[str, int]]) -> Iterator[tuple[str, int, Ranked]]:
        index = self.index
        got = index._read(self.file, np.asarray([i for _, i in batch if i < index.count],
                                                dtype=np.int64))
        for qid, i in batch:
            rows = next(got)[1] if i < index.count else []
            yield qid, i, trec_order([(did, score) for _, did, score in rows],
                                     index.score_type)
