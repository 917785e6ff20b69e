"""What a part can do, declared beside the protocols it implements (``harness.core.protocols``
re-exports them), and checked once, when ``harness.config.build`` makes the parts.

pluggy checks each plugin against its hook specs when it is registered, before any hook is
called; ``conform`` does the same for a run's parts: every member a role requires must be
there (a part that lacks one is refused before any work, in a line naming the part and what
it lacks), and every optional member a part leaves out is set to its declared default. After
that the run reads what a part can do from its members; it never probes a part with
``getattr``, ``hasattr`` or ``isinstance``.

- ``SweepTracker``: a tracker's sweep part (``Tracker.sweep``; ``None`` for a tracker without).
- ``Judged``: a metric whose verdicts come from judges, by variant; ``RunsDry``: a judge
  that builds and counts its requests without sending them (``run.dry_run``).
- ``Splittable``: a dataset that cuts itself into contiguous shards at its own record
  boundaries (a JSON-lines file: byte ranges ending at line ends), for ``run.shards``
  (``Dataset.splitter()``); any other dataset is split by sample index.
- ``Traced``: a dataset read from MLflow traces, whose samples know the span they came from
  (``Dataset.traced()``), for human feedback on the traces as labels.
- ``Labelled``: a run's human labels, read and checked before any work, that collect what
  they need while samples are scored (``Parts.labels``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from harness.core.errors import ConfigError
from harness.core.types import Corpus, RagSample

P = TypeVar("P")


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

    @property
    def splittable(self) -> Splittable | None: ...
    @property
    def traced(self) -> Traced | None: ...
    @property
    def fields(self) -> Mapping[str, str]: ...
    @property
    def stratify(self) -> Callable[[str], None] | None: ...
    def first_record(self) -> dict[str, Any]: ...
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


class Traced(Protocol):
    """A dataset read from MLflow traces: each sample knows the trace and span it came from,
    so human feedback on the traces can be read as labels, and verdicts written back."""

    source: str
    min_grade: float
    tracking_uri: str
    experiment_name: str

    def samples(self, limit: int | None = None) -> Iterator[RagSample]: ...

    def origins(self) -> Mapping[str, Any]:
        """Each sample id's origin (``trace_id``, ``span_id``)."""
        ...

    def write_feedback(self, rows: Path, metric: str) -> str | None:
        """Write ``rows``' scores and verdicts back; a one-line note of what was written,
        or ``None`` when this dataset was not asked to (its own setting)."""
        ...


class Paced(Protocol):
    """What sends a judge's requests under a pacing budget (``Judge.paced``), which another
    judge of the run that sends to the same endpoint with the same settings may share."""

    budget: Any


class Labelled(Protocol):
    """A run's human labels (``run.human_labels``), read and checked when the parts are
    built; they note each scored sample and give each variant its ``confidence`` block."""

    def observe(self, sample: RagSample, row: dict[str, Any]) -> None:
        """Note one scored sample (its row gets the human verdicts when it has them)."""
        ...

    def finish(self, tally: Any) -> None:
        """Each variant's ``confidence`` block onto ``tally``, once every sample is scored."""
        ...


@dataclass(frozen=True)
class Role:
    """What a part of one role must have, and what it may leave out.

    Attributes:
        name: The role, as lines name it (``metric``).
        spec: The protocol, as lines name it (``harness.core.protocols.Metric, API v1``).
        required: The members every part must have (methods must be callable).
        methods: Which of ``required`` are methods.
        optional: Members a part may leave out, each with how to make its default from the
            part (set on the part when it is checked).
        hint: What a user does about a part that lacks a required member.
    """

    name: str
    spec: str
    required: tuple[str, ...]
    methods: frozenset[str]
    optional: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)
    hint: str = ""


def lacking(part: object, role: Role) -> list[str]:
    """The required members of ``role`` that ``part`` lacks (a method must be callable)."""
    found = {m: _member(part, m) for m in role.required}
    return [m for m, v in found.items()
            if v is _MISSING or (m in role.methods and not callable(v))]


def conform(part: P, role: Role, who: str) -> P:
    """``part``, checked against ``role`` once, as pluggy checks a plugin against its hook
    specs when it registers: a ``ConfigError`` naming ``who`` (``metric mypkg.M``) and the
    members it lacks; each optional member it leaves out set to its default."""
    missing = lacking(part, role)
    if missing:
        raise ConfigError(
            f"{who}: a {type(part).__name__} is not a {role.name}: it lacks "
            f"{', '.join(missing)} ({role.spec}){'; ' + role.hint if role.hint else ''}")
    for name, default in role.optional.items():
        if _member(part, name) is _MISSING:
            try:
                setattr(part, name, default(part))
            except (AttributeError, TypeError):  # __slots__, a frozen class
                raise ConfigError(
                    f"{who}: a {type(part).__name__} lacks {name} ({role.spec}) and takes no "
                    f"attribute of that name; declare {name} on its class") from None
    return part


_MISSING: Any = object()


def _member(part: object, name: str) -> Any:
    """``part``'s member ``name`` (``_MISSING``: none): the one place a part is probed, when
    it is built."""
    return getattr(part, name, _MISSING)
