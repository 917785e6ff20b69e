"""Capabilities a part declares beside the protocols it implements (``harness.core.protocols``
re-exports them): another room asks for one by its protocol, never by a concrete class of the
room that provides it, nor by probing for a method with ``getattr``.

- ``SweepTracker``: a tracker's sweep part (``Tracker.sweep``; ``None`` for a tracker without).
- ``Judged``: a metric whose verdicts come from judges, by variant; ``RunsDry``: a judge
  that builds and counts its requests without sending them (``run.dry_run``).
- ``Splittable``: a dataset that cuts itself into contiguous shards at its own record
  boundaries (a JSON-lines file: byte ranges ending at line ends), for ``run.shards``; any
  other dataset is split by sample index.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from harness.core.types import Corpus, RagSample


class SweepTracker(Protocol):
    """A tracker's optional sweep part: a sweep's parent run (``Tracker.sweep``)."""

    def begin_sweep(
        self, sweep_dir: str, tags: dict[str, str], params: dict[str, str] | None = None
    ) -> None:
        """Open a sweep's parent run, before its jobs start (``-m``); ``params``: the swept
        keys and their values as given."""
        ...

    def end_sweep(self, objective: str, failed_jobs: int = 0) -> None:
        """Close the sweep's parent run, noting its best child by ``objective`` and how many
        jobs failed (the parent is then FAILED)."""
        ...

    def abort_sweep(self, status: str = "KILLED") -> None:
        """End the parent run with ``status`` (``KILLED``: the sweep was interrupted;
        ``FAILED``: no job could run), best effort."""
        ...

    def console_lines(self) -> list[str]:
        """The lines the sweep's console summary ends with, in the tracker's words (the
        parent run: ``mlflow parent <id>``); none before ``begin_sweep``."""
        ...


@dataclass(frozen=True)
class Span:
    """Shard ``index`` (0-based) of ``count``.

    By bytes (``first_line`` > 0, a ``Splittable``'s): bytes ``[start, stop)`` of the file,
    lines ``first_line..last_line`` (0: to the end), of the file version ``signature``. By
    index: samples ``[start, stop)``, ``stop`` ``None`` for all the rest.
    """

    index: int
    count: int
    start: int
    stop: int | None
    first_line: int = 0
    last_line: int = 0
    signature: tuple[int, int, int, int] | None = None

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


class Part(Protocol):
    """One shard of a dataset, read in a worker: a ``Dataset`` that also hands back what
    it saw for the checks that need every record (``Splittable.check_split``)."""

    source: str
    min_grade: float

    def check(self) -> None: ...
    def estimate_count(self) -> int: ...
    def samples(self, limit: int | None = None) -> Iterator[RagSample]: ...
    def batches(self, batch_size: int, limit: int | None = None) -> Iterator[list[RagSample]]:
        ...
    def corpus(self) -> Corpus | None: ...
    def sha256(self) -> str: ...
    def describe(self) -> dict[str, Any]: ...

    def split_seen(self) -> Any:
        """What the whole data's checks need from this part once its samples are read
        (picklable; ``None``: nothing)."""
        ...


@runtime_checkable
class Splittable(Protocol):
    """A dataset that splits itself (``run.shards``) at its record boundaries: no worker
    reads another's records, and each numbers its records as a reader of the whole does."""

    def split_spans(self, count: int, limit: int | None) -> list[Span]:
        """At most ``count`` non-empty contiguous spans of the first ``limit`` records."""
        ...

    def split_part(self, span: Span) -> Part:
        """The records ``span`` names, read and validated as the whole's are (in a worker)."""
        ...

    def check_split(self, seen: Sequence[Any]) -> None:
        """Raise the error one reader of the whole data would have for what needs every
        record (ids unique across parts, a mapped column in some record), from each part's
        ``split_seen()``, in order."""
        ...


@runtime_checkable
class Judged(Protocol):
    """A metric whose verdicts come from judges (the LLM variants, a panel of them)."""

    def judges(self) -> dict[str, Any]:
        """Each judged variant's name and its judge (``harness.core.protocols.Judge``)."""
        ...


@runtime_checkable
class RunsDry(Protocol):
    """A judge that can build and count its requests without sending any (``run.dry_run``:
    no preflight, its verdict cache only read)."""

    def go_dry(self) -> Any:
        """Send nothing from now on; return what counts the requests (it has ``report()``:
        the requests, tokens and prices ``estimate.json`` holds per variant)."""
        ...
