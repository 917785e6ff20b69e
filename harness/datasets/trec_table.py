"""The query ids of a TREC run and its qrels, numbered in order of first appearance, in
about 20 bytes a query (plus the ids' text) where a dict took about 120.

The ids are UTF-8 in one byte buffer with each id's end; each keeps 32 bits of its hash
(``hash()``, cached on the str) in an array, and an open-addressing table (linear probing,
at most half full) holds each id's index + 1 at a slot chosen by the hash. A lookup
compares the stored hash first and confirms a match against the id's text, so two ids of
one hash are never taken for one. Once both files are read, ``seal`` frees the index.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

_HASH_MASK = 0xFFFFFFFF
_MIN_SLOTS = 8


class IdTable:
    """Query ids by index (``0 .. len - 1``, in order of first appearance) and back.

    ``hash_fn`` is for tests (a hash that collides); ``str``'s ``hash`` by default."""

    def __init__(self, hash_fn: Callable[[str], int] = hash) -> None:
        self._hash = hash_fn
        self._text = bytearray()
        self._ends = array("I")             # per id: its end in _text ('q' past 4 GiB)
        self._hashes = array("I")           # per id: its hash's low 32 bits
        self._slots = array("I", bytes(4 * _MIN_SLOTS))  # index + 1 (0: empty)
        self._mask = _MIN_SLOTS - 1

    def __len__(self) -> int:
        return len(self._ends)

    def get(self, qid: str) -> int | None:
        """The id's index; None when it is not in the table."""
        return self._find(qid, self._hash(qid) & _HASH_MASK)[0]

    def add(self, qid: str) -> int:
        """The id's index, added (as the next) when it is new."""
        key = self._hash(qid) & _HASH_MASK
        found, slot = self._find(qid, key)
        if found is not None:
            return found
        index = len(self._ends)
        self._text += qid.encode("utf-8")
        if len(self._text) >= 1 << 32 and self._ends.typecode == "I":
            self._ends = array("q", self._ends)
        self._ends.append(len(self._text))
        self._hashes.append(key)
        if 2 * (index + 1) > len(self._slots):
            self._grow()
        else:
            self._slots[slot] = index + 1
        return index

    def id_at(self, index: int) -> str:
        """The id of index ``index``."""
        start = self._ends[index - 1] if index else 0
        return self._text[start:self._ends[index]].decode("utf-8")

    def seal(self) -> None:
        """Free the lookup index (hashes and slots: 12 to 20 bytes an id) once the ids are
        only read by index; a later lookup builds it again."""
        self._hashes, self._slots, self._mask = array("I"), array("I"), -1

    def items(self) -> Iterator[tuple[str, int]]:
        """``(query id, index)`` in index order."""
        text, start = self._text, 0
        for i, end in enumerate(self._ends):
            yield text[start:end].decode("utf-8"), i
            start = end

    def __iter__(self) -> Iterator[str]:
        return (qid for qid, _ in self.items())

    def __contains__(self, qid: object) -> bool:
        return isinstance(qid, str) and self.get(qid) is not None

    def _find(self, qid: str, key: int) -> tuple[int | None, int]:
        """``(index or None, the slot it is at or would go to)``."""
        slots, hashes, mask = self._slots, self._hashes, self._mask
        if mask < 0:  # sealed: index again
            self._hashes = array("I", (self._hash(q) & _HASH_MASK for q in self))
            self._slots, self._mask = array("I", bytes(4 * _MIN_SLOTS)), _MIN_SLOTS - 1
            self._grow()
            return self._find(qid, key)
        slot = key & mask
        encoded: bytes | None = None
        while True:
            stored = slots[slot]
            if not stored:
                return None, slot
            if hashes[stored - 1] == key:
                if encoded is None:
                    encoded = qid.encode("utf-8")
                end = self._ends[stored - 1]
                start = self._ends[stored - 2] if stored > 1 else 0
                if end - start == len(encoded) and self._text[start:end] == encoded:
                    return stored - 1, slot
            slot = (slot + 1) & mask

    def _grow(self) -> None:
        """Double the slots (to at least twice the ids) and place every id again."""
        size = len(self._slots)
        while size < 2 * len(self._ends):
            size *= 2
        self._slots = slots = array("I", bytes(4 * size))
        self._mask = mask = size - 1
        for stored, key in enumerate(self._hashes, 1):
            slot = key & mask
            while slots[slot]:
                slot = (slot + 1) & mask
            slots[slot] = stored


def _offsets() -> array[int]:
    return array("I")


class Qrels:
    """Judgments held compactly: a query's judged document ids, UTF-8, joined by a space and
    ended by a newline (an id holds no whitespace), in one ``bytearray``, their grades in one
    ``array('i')`` (``'d'`` once one is past 32 bits), and per query where its stretch of each
    starts (``array('I')``, ``'q'`` past 4 GiB). Queries are numbered by ``table`` (an
    ``IdTable`` shared with the run: a query the run lacks is added)."""

    def __init__(self, table: IdTable | None = None) -> None:
        self.table = IdTable() if table is None else table
        self._docs = bytearray()
        self._grades: array[Any] = array("i")  # ints; floats once one is past 32 bits
        self._doc_at = _offsets()         # per query: its docs' start + 1 (0: not judged)
        self._grade_at = _offsets()       # per query: its first grade
        self.judged = 0                   # queries judged
        self.first: str | None = None     # the first query of the file
        self.fractional, self.fractional_lines = 0, list[int]()  # grades cut; first lines

    def __len__(self) -> int:
        return self.judged

    def __bool__(self) -> bool:
        return self.judged > 0

    def index(self, qid: str) -> int | None:
        """The query's index in ``table``; None when it is not judged."""
        i = self.table.get(qid)
        return None if i is None or not self.has(i) else i

    def has(self, i: int) -> bool:
        """Whether query ``i`` (of ``table``) is judged."""
        return i < len(self._doc_at) and self._doc_at[i] > 0

    def __contains__(self, qid: object) -> bool:
        return isinstance(qid, str) and self.index(qid) is not None

    def __getitem__(self, qid: str) -> list[tuple[str, float]]:
        i = self.index(qid)
        if i is None:
            raise KeyError(qid)
        return self.at(i)

    def at(self, i: int) -> list[tuple[str, float]]:
        """Query ``i``'s judgments, in file order."""
        start, first = self._doc_at[i] - 1, self._grade_at[i]
        docs = self._docs[start:self._docs.index(b"\n", start)].decode("utf-8").split(" ")
        return list(zip(docs, map(float, self._grades[first:first + len(docs)]), strict=True))

    def grades(self, i: int) -> array[float]:
        """Query ``i``'s grades, in file order."""
        start = self._doc_at[i] - 1
        count = self._docs.count(b" ", start, self._docs.index(b"\n", start)) + 1
        return array("d", self._grades[self._grade_at[i]:self._grade_at[i] + count])

    def count(self, lo: int = 0, hi: int | None = None) -> int:
        """How many of the queries ``lo`` to ``hi`` (of ``table``) are judged."""
        kind = "<u4" if self._doc_at.typecode == "I" else "<i8"
        return int(np.count_nonzero(np.frombuffer(self._doc_at, dtype=kind)[lo:hi]))

    def put(self, qid: str, judged: dict[str, float]) -> None:
        """Keep (replace) a query's judgments."""
        i = self.table.add(qid)
        if i >= len(self._doc_at):
            more = i + 1 - len(self._doc_at)  # the same for both
            self._doc_at.frombytes(bytes(self._doc_at.itemsize * more))
            self._grade_at.frombytes(bytes(self._grade_at.itemsize * more))
        if not self._doc_at[i]:  # else a query met again (qrels not grouped): replaced
            self.judged += 1
            self.first = qid if self.first is None else self.first
        self._doc_at = _put(self._doc_at, i, len(self._docs) + 1)
        self._grade_at = _put(self._grade_at, i, len(self._grades))
        self._docs += " ".join(judged).encode("utf-8") + b"\n"
        if self._grades.typecode == "i":
            try:
                self._grades.extend(array("i", map(int, judged.values())))
                return
            except OverflowError:  # a grade past 32 bits: all kept as double from now on
                self._grades = array("d", self._grades)
        self._grades.extend(judged.values())


def _put(offsets: array[int], i: int, value: int) -> array[int]:
    """``offsets`` with ``offsets[i] = value``: widened to ``'q'`` when it does not fit."""
    if value > _HASH_MASK and offsets.typecode == "I":
        offsets = array("q", offsets)
    offsets[i] = value
    return offsets
