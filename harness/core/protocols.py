"""The seams between the parts of a run, stated once.

A run is ``Task(Dataset -> Retriever -> Metric) -> Tracker``: the runner builds each part
from its config group (``_target_`` is the only registry) and talks to it only through
these protocols. Capabilities are declared members (``Retriever.needs_corpus``,
``Metric.prevalidate``, ``Metric.human_score``, ``Dataset.splittable``), checked once when
the parts are built (``harness.core.capabilities.conform`` against each role below: a part
lacking a required member is refused there, an optional member it leaves out gets its
default), never probed with ``getattr``, ``hasattr`` or ``isinstance`` while a run works.

``Retriever`` and ``Metric`` are **public API, version** ``API_VERSION``: implement them in
your own package (``harness.retrievers.search.SearchRetriever`` and
``harness.metrics.base.BaseMetric`` give every member but the essential one). A change to
either that breaks an implementation raises ``API_VERSION``. ``Dataset``, ``Judge``,
``Tracker`` and ``Task`` are internal seams that may change between minor versions.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from harness.core.capabilities import (
    Labelled,
    Paced,
    Part,
    Role,
    Span,
    Splittable,
    SweepTracker,
    Traced,
)
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

    @property
    def splittable(self) -> Splittable | None:
        """Optional (``None``): the dataset splits itself at its record boundaries for
        ``run.shards`` (a JSON-lines file); otherwise it is split by sample index."""
        ...

    @property
    def traced(self) -> Traced | None:
        """Optional (``None``): the dataset, when it was read from MLflow traces."""
        ...

    @property
    def fields(self) -> Mapping[str, str]:
        """Optional (``{}``): harness field -> the column of the data holding it."""
        ...

    def check(self) -> None:
        """Raise a one-line ``DatasetError`` if the data cannot be read (before any work)."""
        ...

    def first_record(self) -> dict[str, Any]:
        """Optional (``{}`` when absent): the first record as the data holds it (column ->
        value), for lines that name the columns a file has; read apart from the samples."""
        ...

    @property
    def stratify(self) -> Callable[[str], None] | None:
        """Optional (``None``: the data has no columns to stratify by): called once, before
        any sample is read, with ``run.strata``'s column; each sample then has its value as
        ``stratum``."""
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
            ``False`` for one that passes the dataset's own chunks through. Optional: a
            class without it searches (``SearchRetriever`` and the in-tree bases declare it).
    """

    needs_corpus: bool
    searches: bool

    @property
    def label(self) -> str:
        """Optional: how lines name it (default: its class's import path)."""
        ...

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
        batch_size: Optional (``None``): samples per ``score_batch`` when ``run.batch_size``
            is null (``None``: 1,024).
        human_score: Optional (``None``): how the metric scores a sample whose chunks people
            judged (1 relevant, 0 not, in rank order), so ``run.human_labels`` scores the
            labels as the metric scores its own verdicts; ``None``: the metric cannot, and a
            run with human labels is refused before any work.
        joins_loop: Optional (``False``): a judged metric of the harness whose calls can run on
            one event loop with the other judged variants of a run (``metric=[a,b]``).
    """

    name: str
    requires: frozenset[str]
    prevalidate: bool

    @property
    def batch_size(self) -> int | None: ...
    @property
    def human_score(self) -> Callable[[Sequence[int]], float] | None: ...
    @property
    def joins_loop(self) -> bool: ...

    def judges(self) -> dict[str, Judge]:
        """Optional (none): each judged variant's name and its judge (``run.dry_run`` makes
        them run dry)."""
        ...

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

    @property
    def batch_samples(self) -> int | None:
        """Optional (``None``): samples its metric scores at once when ``run.batch_size`` is
        null (``None``: the run's default): a judge that sends through a Batch API takes a
        batch's worth."""
        ...

    @property
    def top_logprobs(self) -> int:
        """Optional (0): candidates per token it asks for (``metric.soft`` reads them)."""
        ...

    @property
    def paced(self) -> Paced | None:
        """Optional (``None``): what sends its requests under a pacing budget, which
        another judge of the run may share (``share_pacing``)."""
        ...

    @property
    def go_dry(self) -> Callable[[], Any] | None:
        """Optional (``None``: it cannot): send nothing from now on and return what counts
        the requests it would send (``run.dry_run``; ``harness.judges.dry``)."""
        ...

    def share_pacing(self, other: Judge) -> bool:
        """Optional (never): send ``other``'s requests under this judge's pacing budget when
        both send to one endpoint with the same settings; whether they do."""
        ...

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
    """The built components of one job, each checked against its role; frozen: a wrapper
    (the timed retriever, the shards' task) makes a copy with ``dataclasses.replace``.

    Attributes:
        members: The variants the metric scores, by name, in order: several for
            ``metric=[a,b]`` (the metric is then their panel), else the metric alone.
        batch_size: Samples per batch (``run.batch_size``, else the metric's, else 1,024).
        labels: The run's human labels, read and checked when built (``None``: none).
    """

    task: Task
    dataset: Dataset
    retriever: Retriever
    metric: Metric
    tracker: Tracker
    settings: RunSettings
    members: tuple[tuple[str, Metric], ...] = ()
    batch_size: int = 1024
    labels: Labelled | None = None

    @property
    def variants(self) -> tuple[str, ...]:
        """The names of the variants scored at once (``metric=[a,b]``); ``()``: one."""
        return tuple(n for n, _ in self.members) if len(self.members) > 1 else ()

    def needing(self, field: str) -> list[str]:
        """The variants that need sample field ``field`` (the metric's name for one)."""
        return [n for n, m in self.members if field in m.requires] or [self.metric.name]

    def close(self) -> None:
        """Release what the parts hold (the judge's client and loop)."""
        self.metric.close()


def _role(protocol: type, name: str, spec: str, optional: Mapping[str, Callable[[Any], Any]],
          hint: str = "") -> Role:
    """The ``Role`` of ``protocol``: its members, less the optional ones, are required."""
    methods = [m for m, v in vars(protocol).items() if callable(v) and not m.startswith("_")]
    members = [m for m in (*vars(protocol).get("__annotations__", {}), *methods)
               if not m.startswith("_") and m not in optional]
    return Role(name, spec, tuple(dict.fromkeys(members)), frozenset(methods), optional, hint)


def _path(part: object) -> str:
    cls = type(part)
    return f"{cls.__module__}.{cls.__qualname__}"


#: What a metric must have (public API v1), and its optional members' defaults.
METRIC = _role(Metric, "metric", f"harness.core.protocols.Metric, API v{API_VERSION}", {
    "batch_size": lambda part: None,
    "human_score": lambda part: None,
    "joins_loop": lambda part: False,
    "judges": lambda part: dict,
}, "subclass harness.metrics.base.BaseMetric, which gives every member but score_batch")
#: What a retriever must have (public API v1).
RETRIEVER = _role(Retriever, "retriever", f"harness.core.protocols.Retriever, API v{API_VERSION}", {
    "searches": lambda part: True,
    "label": _path,
}, "subclass harness.retrievers.search.SearchRetriever")
#: What a dataset must have (an internal seam).
DATASET = _role(Dataset, "dataset", "harness.core.protocols.Dataset", {
    "splittable": lambda part: None,
    "traced": lambda part: None,
    "fields": lambda part: {},
    "first_record": lambda part: dict,
    "stratify": lambda part: None,
})
#: What a judge must have (an internal seam).
JUDGE = _role(Judge, "judge", "harness.core.protocols.Judge", {
    "top_logprobs": lambda part: 0,
    "batch_samples": lambda part: None,
    "go_dry": lambda part: None,
    "paced": lambda part: None,
    "share_pacing": lambda part: lambda other: False,
})


__all__ = [
    "API_VERSION",
    "DATASET",
    "JUDGE",
    "METRIC",
    "RETRIEVER",
    "Dataset",
    "Judge",
    "Kind",
    "Labelled",
    "Metric",
    "Paced",
    "OnDone",
    "Part",
    "Retriever",
    "Span",
    "Splittable",
    "SweepTracker",
    "Task",
    "Traced",
    "Tracker",
]
