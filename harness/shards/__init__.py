"""One evaluation split into shards scored by parallel workers (``run.shards``), merged into
one run: one ``samples.jsonl`` in sample order, one ``summary.json`` with the numbers one
process gives, one tracked run.

The parent plans contiguous shards (``harness.shards.plan``) and starts a worker per
shard: a process (``run.shard_backend=processes``) or a Ray actor (``ray``,
``harness.shards.ray``). Each worker builds its shard of the dataset, the retriever and the
metric from the resolved config, scores the shard into its own rows file in the run's
folder (``.shards/``) and returns its tally. Then the retrieval sums are folded shard
after shard (``harness.shards.merge``), the workers drop the cut-offs above the run's
depth from their rows, in parallel, and the parent appends the rows files in order.

A worker that fails stops the others and fails the run with its line, naming the shard;
an interruption stops them all. Either way the shards' files are removed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Protocol, TextIO

from harness.core.errors import ConfigError
from harness.core.protocols import Parts, Task
from harness.core.settings import Job
from harness.core.types import RagSample
from harness.metrics.retrieval import dropped_names
from harness.run.loop import Scores, Tally
from harness.run.outputs import OutputError
from harness.run.outputs.folder import hint, reason
from harness.run.questions import check_retrieval
from harness.run.timing import Timed
from harness.shards.merge import merge
from harness.shards.plan import plan
from harness.shards.worker import ShardResult, ShardWorker
from harness.tasks.evaluate import Evaluate

#: The config groups a worker builds its parts from.
WORKER_GROUPS = ("dataset", "retriever", "metric", "run", "trusted_targets")


class Pool(Protocol):
    """Running workers, one per shard (a backend)."""

    def results(self, progress: Callable[[int], None] | None) -> list[ShardResult]:
        """Wait for every shard's result; raise the first failure, naming its shard."""
        ...

    def call(self, indexes: Sequence[int], method: str, argument: Any) -> list[Any]:
        """Call ``method`` of those workers, in parallel; their results, in order."""
        ...

    def close(self) -> None:
        """Stop every worker (at once, if they are still working)."""
        ...


class ShardedEvaluate(Evaluate):
    """``task=evaluate`` with its samples scored by workers, a shard each."""

    def plan(self, parts: Parts, job: Job) -> tuple[Iterable[list[RagSample]], int]:
        """Refuse, before any work, a run that cannot be sharded; nothing to read here."""
        shards = parts.settings.shards
        if parts.metric.prevalidate:
            judged = next(n for n, m in parts.members if m.prevalidate)
            raise ConfigError(
                f"run.shards={shards}: metric {judged} asks a judge, whose calls "
                "one process already makes concurrently (judge.max_concurrency); shard "
                "judge-free metrics (id_ranked, id_based, non_llm), or set run.shards=1"
            )
        target = (job.config.get("dataset") or {}).get("_target_")
        if not _built_by(target, type(parts.dataset)):
            raise ConfigError(
                f"run.shards={shards}: the dataset was handed over in memory, which workers "
                "cannot read; save it to a file (dataset=jsonl) or set run.shards=1"
            )
        check_retrieval(parts, parts.dataset.corpus)  # a corpus and no retriever: refused
        return (), parts.dataset.estimate_count()

    def score(self, parts: Parts, job: Job, batches: Iterable[list[RagSample]], sink: Any,
              progress: Callable[[int], None] | None, timed: Timed) -> Tally:
        """Score the shards in workers and merge them (``score_shards``); ``timed`` gets
        their retrievers' times."""
        return score_shards(parts, job, sink, progress, timed)

    def dropped(self, tally: Tally) -> list[str]:
        """Nothing: each shard drops the cut-offs above the depth from its own rows."""
        return []


def _built_by(target: Any, kind: type) -> bool:
    """Whether the config's ``dataset._target_`` names class ``kind`` (by its own path, or a
    package's re-export: ``harness.datasets.beir.BeirDataset``), so that a worker builds the
    same dataset from the config. Nothing is imported: building it imported the module."""
    if not isinstance(target, str):
        return False
    if target == f"{kind.__module__}.{kind.__qualname__}":
        return True
    module, _, name = target.rpartition(".")
    return getattr(sys.modules.get(module), name, None) is kind


def sharded(task: Task) -> Task:
    """``task`` scoring its samples in ``run.shards`` workers; a ``ConfigError`` for a task
    that cannot (``judge_agreement``)."""
    if not task.shardable:
        raise ConfigError(
            f"run.shards: task {task.name} runs in one process; set run.shards=1 "
            "(task=evaluate shards its samples)"
        )
    return ShardedEvaluate(task.name)


def score_shards(
    parts: Parts, job: Job, sink: TextIO, progress: Callable[[int], None] | None = None,
    timed: Timed | None = None,
) -> Tally:
    """Score the run in shards and merge them: the rows go to ``sink``, in sample order;
    ``timed`` (the run's retriever, timed) gets the shards' retrieval times."""
    variants = parts.variants
    into = Tally(parts.metric.name, variants={n: Scores(n) for n in variants})
    spans = plan(parts.dataset, parts.settings.shards, parts.settings.limit)
    folder = job.out_dir.resolve() / ".shards"
    try:
        folder.mkdir(exist_ok=True)
    except OSError as e:
        raise OutputError(f"cannot write {folder} ({reason(e)}){hint(e)}") from None
    # what a worker builds its parts from: no tracking settings (credentials stay here)
    config = {k: job.config[k] for k in WORKER_GROUPS if k in job.config}
    workers = [ShardWorker(config, s, str(folder / f"rows-{s.index:04d}.jsonl"), os.getcwd(),
                           variants) for s in spans]
    try:
        pool = start(workers, parts.settings.shard_backend)
        try:
            results = pool.results(progress)
            tallies = [r.tally for r in results]
            if parts.dataset.splittable is not None:  # no worker saw every record
                parts.dataset.splittable.check_split([r.seen for r in results])
            sums: dict[str, float] = {}
            for i in range(len(workers)):  # each shard adds on to the sums before it
                sums = pool.call([i], "fold", sums)[0]
            merge(tallies, into, sums)
            if into.n_retrieval:
                dropped = dropped_names(into.retrieval_ks, into.retrieval_depth,
                                        into.beyond_depth)
                if dropped:
                    pool.call(range(len(workers)), "strip", dropped)
        finally:
            pool.close()
        try:
            sink.flush()
            for worker in workers:
                append(Path(worker.rows), sink.buffer)
        except OSError as e:  # the shards' rows are there: the run's rows file is not
            raise OutputError(f"cannot write {getattr(sink, 'name', 'the rows file')} "
                              f"({reason(e)}){hint(e)}; the shards' rows are not kept") from None
    except KeyboardInterrupt:  # the workers are stopped: keep what each shard scored
        kept_rows([Path(w.rows) for w in workers], sink)
        raise
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if timed is not None and results:
        for result in results:
            timed.latencies.extend(result.latencies)
        timed.prepare_s = max((r.prepare_s for r in results if r.prepare_s is not None),
                              default=None)
        timed.searched = max(r.searched for r in results)
        timed.inner = Prepared(results[0].retriever, timed.needs_corpus)
    into.duration_s = time.perf_counter() - into.started
    return into


def kept_rows(shards: list[Path], sink: TextIO) -> None:
    """An interrupted run: append each shard's whole rows so far to ``sink`` (the partial
    rows file), shard after shard: each shard's rows in order, with the gap of its unscored
    samples before the next shard's."""
    with contextlib.suppress(OSError):
        sink.flush()
    for path in shards:
        with contextlib.suppress(OSError):
            data = path.read_bytes()
            sink.buffer.write(data[: data.rfind(b"\n") + 1])  # no row cut by the stop
    with contextlib.suppress(OSError):
        sink.flush()


def append(source: Path, sink: BinaryIO) -> None:
    """Append the file ``source`` to ``sink`` (in the kernel where it can)."""
    sink.flush()
    with open(source, "rb") as rows:
        copied = 0
        try:
            while n := os.copy_file_range(rows.fileno(), sink.fileno(), 1 << 30):
                copied += n
            return
        except (AttributeError, OSError):  # no copy_file_range here, or not between these
            rows.seek(copied)
        shutil.copyfileobj(rows, sink, 1 << 22)
        sink.flush()


class Prepared:
    """The run's retriever as the shards prepared it (for its description)."""

    def __init__(self, described: dict[str, Any], needs_corpus: bool) -> None:
        self.described, self.needs_corpus = described, needs_corpus
        self.searches = True
        self.label = str(described.get("kind", "the shards' retriever"))

    def prepare(self, corpus: Any) -> None:
        """Done by the shards."""

    def retrieve_batch(self, samples: Sequence[RagSample]) -> list[RagSample]:
        """Done by the shards."""
        raise NotImplementedError("the shards retrieved")

    def describe(self) -> dict[str, Any]:
        """The first shard's retriever's description."""
        return self.described


def start(workers: list[ShardWorker], backend: str) -> Pool:
    """Start a worker per shard on ``backend``."""
    if backend == "ray":
        from harness.shards.ray import RayPool

        return RayPool(workers)
    from harness.shards.processes import ProcessPool

    return ProcessPool(workers)
