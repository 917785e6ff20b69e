"""The ids a reader has met, for refusing a repeated one at its line, in about 12 bytes an
id instead of a dict's 120.

The latest ``recent`` ids are a plain dict (id -> first line): a file of fewer ids never
leaves it. When it fills, its ids move out as one *block*: the block (ids and lines) is
written to a temporary file, and each id keeps 8 bytes in memory, the low 44 bits of its
hash (``hash()``, cached on the str) above the block's number, in one of ``partitions``
byte strings chosen by the hash. A bitmap over the moved hashes (16 to 32 bits an id)
answers most lookups; on a set bit the id's partition is searched for its hash, and a
match is confirmed against its block read back, so two ids of one hash are never taken
for one (a read happens only for an id really repeated, or on a hash collision). Without a
writable temporary directory the blocks stay in memory (the ids' text, about 20 bytes an id).
"""

from __future__ import annotations

import io
import marshal
import tempfile
import weakref
from array import array
from collections.abc import Callable
from typing import IO

import numpy as np

#: Ids kept as a plain dict before they move out.
RECENT = 1 << 16
#: Partitions of the moved ids (by the hash's low bits).
PARTITIONS = 1 << 12
#: Fewest bitmap slots an id (the bitmap doubles below it).
SLOTS_PER_ID = 16
_BLOCK_BITS = 20                           # an entry: hash bits 0..43, then the block
_HASH_BITS = 64 - _BLOCK_BITS
_HASH_MASK = (1 << _HASH_BITS) - 1


class SeenIds:
    """Ids with the line (or row) each was first used on.

    Args:
        hash_fn: The hash of an id (a test passes one that collides).
        recent: How many ids stay in the plain dict before moving out.
        partitions: How many partitions the moved ids have (a power of two, at most 65536).
    """

    def __init__(self, hash_fn: Callable[[str], int] = hash, recent: int = RECENT,
                 partitions: int = PARTITIONS) -> None:
        assert 0 < partitions <= 1 << 16 and not partitions & (partitions - 1), partitions
        self._hash, self._limit = hash_fn, recent
        self._recent: dict[str, int] = {}
        self._parts = [bytearray() for _ in range(partitions)]
        self._slots = 0                   # bitmap slots - 1 (0: nothing moved yet)
        self._bits = bytearray(1)
        self._moved = 0                   # ids moved out
        self._blocks = array("q", [0])    # each block's offset in the file, then the end
        self._file: IO[bytes] | None = None

    def __len__(self) -> int:
        return self._moved + len(self._recent)

    def first(self, sample_id: str, line: int) -> int | None:
        """Note that ``sample_id`` is used on ``line``; the line it was first used on when
        that is another (a duplicate: nothing is noted), else None."""
        recent = self._recent
        first = recent.setdefault(sample_id, line)
        if first != line:
            return first
        if self._slots:
            slot = self._hash(sample_id) & self._slots
            if self._bits[slot >> 3] >> (slot & 7) & 1:
                moved = self._moved_line(sample_id)
                if moved is not None and moved != line:
                    del recent[sample_id]
                    return moved
        if len(recent) >= self._limit:
            self._move()
        return None

    # -- the moved ids -----------------------------------------------------------------

    def _moved_line(self, sample_id: str) -> int | None:
        """The first line of ``sample_id`` if it is among the moved ids."""
        h = self._hash(sample_id) & _HASH_MASK
        part = self._parts[h & (len(self._parts) - 1)]
        key = (h >> 4).to_bytes(5, "little")  # an entry's top 5 bytes: hash bits 4..43
        at = part.find(key)
        while at >= 0:
            if at % 8 == 3:
                entry = int.from_bytes(part[at - 3:at + 5], "little")
                if entry >> _BLOCK_BITS == h:
                    first = self._block(entry & ((1 << _BLOCK_BITS) - 1)).get(sample_id)
                    if first is not None:
                        return first
            at = part.find(key, at + 1)
        return None

    def _block(self, block: int) -> dict[str, int]:
        """A moved block (id -> first line), read back from the file."""
        assert self._file is not None
        self._file.seek(self._blocks[block])
        text, sizes, lines = marshal.loads(
            self._file.read(self._blocks[block + 1] - self._blocks[block]))
        ends = np.cumsum(np.frombuffer(sizes, np.uint32)).tolist()
        ids = (text[lo:hi] for lo, hi in zip([0, *ends], ends, strict=False))
        return dict(zip(ids, np.frombuffer(lines, np.int64).tolist(), strict=True))

    def _move(self) -> None:
        """Move the recent ids out: their block to the file, their entries to memory."""
        recent, self._recent = self._recent, {}
        block = len(self._blocks) - 1
        if block >> _BLOCK_BITS:
            raise OverflowError(f"more than {block * self._limit:,} ids")
        if self._file is None:
            try:
                self._file = tempfile.TemporaryFile(prefix="harness-ids-")  # noqa: SIM115
            except OSError:  # no writable temporary directory: the blocks stay in memory
                self._file = io.BytesIO()
            weakref.finalize(self, self._file.close)
        count = len(recent)
        kept = ("".join(recent), np.fromiter(map(len, recent), np.uint32, count).tobytes(),
                np.fromiter(recent.values(), np.int64, count).tobytes())
        self._file.seek(self._blocks[-1])
        self._blocks.append(self._blocks[-1] + self._file.write(marshal.dumps(kept)))
        hashes = np.fromiter(map(self._hash, recent), np.int64, count) & _HASH_MASK
        self._add((hashes << _BLOCK_BITS) | block, hashes)
        self._moved += count
        if self._moved * SLOTS_PER_ID > self._slots + 1:
            self._resize()
        else:
            self._mark(hashes)

    def _add(self, entries: np.ndarray, hashes: np.ndarray) -> None:
        """Append ``entries`` to their partitions (by ``hashes``)."""
        which = (hashes & (len(self._parts) - 1)).astype(np.uint16)
        order = np.argsort(which, kind="stable")  # a radix sort on 16 bits
        ends = np.searchsorted(which[order], np.arange(len(self._parts) + 1)).tolist()
        data = memoryview(entries[order].astype("<i8").tobytes())
        parts = self._parts
        for p, (lo, hi) in enumerate(zip(ends, ends[1:], strict=False)):
            if lo != hi:
                parts[p] += data[lo * 8:hi * 8]

    def _resize(self) -> None:
        """A bitmap of at least twice ``SLOTS_PER_ID`` slots an id, marked from every part."""
        slots = 1 << 16
        while slots < self._moved * SLOTS_PER_ID * 2:
            slots *= 2
        self._bits, self._slots = bytearray(slots // 8), slots - 1
        for i in range(0, len(self._parts), 256):  # a few partitions at a time
            entries = np.frombuffer(b"".join(self._parts[i:i + 256]), "<i8")
            self._mark(entries >> _BLOCK_BITS & _HASH_MASK)

    def _mark(self, hashes: np.ndarray) -> None:
        """Set the bitmap's bits of ``hashes``."""
        slot = hashes & self._slots
        bits = np.frombuffer(self._bits, np.uint8)
        np.bitwise_or.at(bits, slot >> 3, np.left_shift(1, slot & 7).astype(np.uint8))
