"""The seams between the parts of a run, stated once.

A run is ``Task(Dataset -> Retriever -> Metric) -> Tracker``: the runner builds each part
from its config group (``_target_`` is the only registry) and talks to it only through
these protocols. Capabilities are declared attributes (``Retriever.needs_corpus``,
``Metric.prevalidate``) or protocols (``harness.core.capabilities``: ``Splittable``,
``SweepTracker``), never probed with ``getattr``.

``Retriever`` and ``Metric`` are **public API, version** ``API_VERSION``: implement them in
your own package (``harness.retrievers.search.SearchRetriever`` and
``harness.metrics.base.BaseMetric`` give every member but the essential one). A change to
either that breaks an implementation raises ``API_VERSION``. ``Dataset``, ``Judge``,
``Tracker`` and ``Task`` are internal seams that may change between minor versions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from harness.core.capabilities import Part, Span, Splittable, SweepTracker
from harness.core.settings import Job, JobValue, RunSettings
from harness.core.summary import Summary
from harness.core.types import (
    Completion,
    Corpus,
    JudgeRequest,
    JudgeStats,
    Kind,
    RagSample,
    RunRecord,
    SampleResult,
    TrackedRun,
)

#: The version of the public ``Retriever`` and ``Metric`` protocols.
API_VERSION = 1

T = TypeVar("T")

#: Called with (index in the batch, result) as each sample of a batch finishes.
OnDone = Callable[[int, SampleResult], None]



class Dataset(Protocol):
    """Where samples come from (``dataset`` group).

    Attributes:
        source: The file, folder or name the samples come from, for messages.
        min_grade: The lowest reference grade that counts as relevant (1 for data without
            graded relevance).
    """

    source: str
    min_grade: float

    def check(self) -> None:
        """Raise a one-line ``DatasetError`` if the data cannot be read (before any work)."""
        ...

    def estimate_count(self) -> int:
        """About how many samples there are (for progress; may be cheap and approximate)."""
        ...

    def samples(self, limit: int | None = None) -> Iterator[RagSample]:
        """Validated samples in order; at most ``limit``."""
        ...

    def batches(self, batch_size: int, limit: int | None = None) -> Iterator[list[RagSample]]:
        """The samples in lists of at most ``batch_size``."""
        ...

    def corpus(self) -> Corpus | None:
        """The documents a corpus retriever searches, or ``None`` when the data has none."""
        ...

    def sha256(self) -> str:
        """A hash of the data (logged, so runs on different data are never compared)."""
        ...

    def describe(self) -> dict[str, Any]:
        """Provenance for outputs (``format``, ``path``, counts)."""
        ...


class Retriever(Protocol):
    """Public API v1: fills each sample's ranked chunks (``retriever`` group).

    Attributes:
        needs_corpus: ``prepare`` must receive a corpus (the run stops with one clear
            line when the dataset has none).
        searches: ``retrieve_batch`` searches (its calls are timed one query at a time);
            ``False`` for one that passes the dataset's own chunks through. A class without
            it searches (``SearchRetriever`` and the in-tree bases declare it).
    """

    needs_corpus: bool
    searches: bool

    def prepare(self, corpus: Corpus | None) -> None:
        """Called once before the first ``retrieve_batch``: build or load an index."""
        ...

    def retrieve_batch(self, samples: Sequence[RagSample]) -> list[RagSample]:
        """The samples, in order, with ``retrieved_contexts`` and ``retrieved_context_ids``
        filled best first."""
        ...

    def describe(self) -> dict[str, Any]:
        """Settings and index provenance, for outputs (no secrets)."""
        ...


class Metric(Protocol):
    """Public API v1: a context-precision variant (``metric`` group).

    Attributes:
        name: The variant's name, as in outputs.
        requires: The sample fields it reads; a sample lacking one is unscored with that
            reason, never scored 0.
        prevalidate: Read and validate every sample, and call ``preflight``, before the
            first ``score_batch`` (for metrics whose calls cost money or time).
    """

    name: str
    requires: frozenset[str]
    prevalidate: bool

    def preflight(self) -> None:
        """Check what scoring needs (e.g. the judge endpoint) before any work."""
        ...

    def score_batch(
        self, samples: Sequence[RagSample], on_done: OnDone | None = None
    ) -> list[SampleResult]:
        """One result per sample, in order. A metric whose samples finish at different
        times calls ``on_done(index, result)`` as each one does, so rows are written (and
        kept if the run is interrupted) as they finish."""
        ...

    def describe(self) -> dict[str, Any]:
        """Provenance for outputs, e.g. ``{"judge": ..., "prompt": ...}``; ``{}`` for none."""
        ...

    def stats(self) -> dict[str, float | None]:
        """Counters logged as ``judge/<name>`` metrics (judge traffic); ``{}`` for none."""
        ...

    def write_artifacts(self, out_dir: Path) -> list[Path]:
        """Write files worth keeping with the run (e.g. the prompt); return their paths."""
        ...

    def close(self) -> None:
        """Release clients and loops."""
        ...


class Judge(Protocol):
    """A model that answers a rendered prompt (``judge`` group)."""

    model: str
    #: Independent verdicts per judgement, and how they combine (``majority``, ``mean``).
    samples: int
    vote: str
    stats: JudgeStats
    #: Samples its metric scores at once when ``run.batch_size`` is null (``None``: the
    #: run's default): a judge that sends through a Batch API takes a batch's worth.
    batch_samples: int | None

    def ask(self, request: JudgeRequest, parse: Callable[[Completion], T]) -> Awaitable[T]:
        """Call (through the cache) and parse; raise ``JudgeError`` when it fails for good."""
        ...

    async def preflight(self) -> None:
        """Check that the endpoint answers and accepts the key."""
        ...

    async def aclose(self) -> None:
        """Close clients and the cache."""
        ...

    def describe(self) -> dict[str, Any]:
        """Everything that can change a verdict, without secrets."""
        ...


class Tracker(Protocol):
    """Records runs (``tracking`` group). ``begin`` may start work in the background.

    Attributes:
        keeps_artifacts: Files attached to a record are stored (plots are drawn only then).
        sweep: Its sweep part (a parent run per sweep), or ``None`` when it has none.
    """

    keeps_artifacts: bool
    sweep: SweepTracker | None

    # Optional: ``prewarm(settings) -> discard | None``, a staticmethod the command calls on
    # the class before Hydra composes (``settings``: the ``tracking.KEY=VALUE`` overrides),
    # to start slow imports; ``discard()`` ends them when no run claimed the work.

    def begin(
        self,
        run_name: str,
        tags: dict[str, str],
        *,
        multirun: bool = False,
        sweep_dir: str | None = None,
    ) -> None:
        """Open a run before the work starts."""
        ...

    def finish(self, record: RunRecord) -> TrackedRun | None:
        """Log ``record`` into the run opened by ``begin`` and close it."""
        ...

    def abort(self, status: str = "KILLED") -> None:
        """End the run without results (``KILLED``, ``FAILED`` or ``DELETE``)."""
        ...

    def describe(self) -> dict[str, Any]:
        """Non-secret settings, for the summary."""
        ...


class Task(Protocol):
    """What a job does with its parts (``task`` group): evaluate, or judge agreement.

    Attributes:
        name: The task's name.
        unused_groups: Config groups whose choice does not affect this task (left out of
            the run's tags and name).
        shardable: Its samples may be scored by parallel workers (``run.shards``).
    """

    name: str
    unused_groups: tuple[str, ...]
    shardable: bool

    def run(self, parts: Parts, job: Job) -> tuple[Summary, JobValue]:
        """Do the work, write and log it; return the summary and ``run.objective``'s value
        (NaN when it has none; one per objective when ``run.objective`` is a list)."""
        ...


@dataclass(frozen=True)
class Parts:
    """The built components of one job; frozen: a wrapper (the timed retriever, the shards'
    task, several variants' panel) makes a copy with ``dataclasses.replace``."""

    task: Task
    dataset: Dataset
    retriever: Retriever
    metric: Metric
    tracker: Tracker
    settings: RunSettings

    def close(self) -> None:
        """Release what the parts hold (the judge's client and loop)."""
        self.metric.close()


__all__ = [
    "API_VERSION",
    "Dataset",
    "Judge",
    "Kind",
    "Metric",
    "OnDone",
    "Part",
    "Retriever",
    "Span",
    "Splittable",
    "SweepTracker",
    "Task",
    "Tracker",
]
