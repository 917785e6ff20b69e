"""A shard's worker (``harness.shards``): builds its part of the run from the resolved config,
scores it into its own rows file, and hands back its tally; then folds the retrieval sums
and strips its rows when the parent asks."""

from __future__ import annotations

import logging
import os
import traceback
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.core.boundary import error_text
from harness.core.errors import HarnessError
from harness.core.protocols import Metric, OnDone
from harness.core.redact import redact, register_tree
from harness.core.text import one_line
from harness.core.types import RagSample, SampleResult
from harness.metrics.retrieval import at_cutoffs
from harness.run.loop import Tally
from harness.run.outputs.folder import hint, reason
from harness.shards.merge import fold
from harness.shards.plan import Span, shard

#: Distinct unscored reasons a worker counts (one process keeps 20; the parent caps the
#: merged ones the same way, exactly while no shard has more than this many).
WORKER_REASONS = 100_000


class ShardFailed(HarnessError):
    """A shard's worker failed, or died, outside the errors it reports itself."""


@dataclass
class ShardResult:
    """What a worker hands back once its shard is scored."""

    tally: Tally
    retriever: dict[str, Any]
    latencies: array[float] = field(default_factory=lambda: array("d"))
    prepare_s: float | None = None
    searched: float = 0.0
    #: What the shard's part of a ``Splittable`` dataset saw, for the whole data's checks
    #: (``Part.split_seen``); ``None`` for a shard by index.
    seen: Any = None


#: A worker's answer: ``("result", value)``, ``("error", (module, class, message, attrs))``
#: for a ``HarnessError`` (or an ``OSError`` with a path), or ``("crash", (line, traceback))``.
Outcome = tuple[str, Any]


class ShardWorker:
    """One shard's evaluation, in a worker process or a Ray actor."""

    def __init__(self, config: dict[str, Any], span: Span, rows: str, cwd: str,
                 variants: Sequence[str] = ()) -> None:
        self.config, self.span, self.rows, self.cwd = config, span, rows, cwd
        #: Several variants in one run: their names (``config["metric"]`` maps each to its
        #: settings); empty: one.
        self.variants = tuple(variants)
        self.values: dict[str, array[float]] = {}
        self.done = 0

    def attempt(self, progress: Callable[[int], None] | None = None) -> Outcome:
        """``run``, its failure reported as data."""
        return self._answer(lambda: self.run(progress))

    def call(self, method: str, argument: Any) -> Outcome:
        """``fold`` or ``strip``, its failure reported as data."""
        return self._answer(lambda: getattr(self, method)(argument))

    def run(self, progress: Callable[[int], None] | None = None) -> ShardResult:
        """Score the shard into ``rows``: the parts built by the one builder
        (``harness.config.build.build``) from the plain config, then this shard's dataset,
        the metric harvested, every setting of the whole run but the ones the parent keeps
        (``limit``, ``shards``, ``progress``), each put in place with ``dataclasses.replace``."""
        from harness.config.build import build
        from harness.run.plan import plan, score, timed_retriever

        register_tree(self.config)  # this process's own registry of secrets
        if os.getcwd() != self.cwd and os.path.isdir(self.cwd):
            os.chdir(self.cwd)  # a Ray worker: relative paths are the parent's
        built = build(self.config, variants=self.variants)  # no tracking group: not tracked
        metric = Harvest(built.metric, built.settings.retrieval_ks)
        part = shard(built.dataset, self.span)
        parts = replace(built, dataset=part, metric=metric,
                        settings=replace(built.settings, limit=None, shards=1, progress=False))

        def counted(n: int) -> None:
            self.done += n
            if progress is not None:
                progress(n)

        try:
            parts = replace(parts, retriever=(timed := timed_retriever(parts)))
            batches, _ = plan(parts)
            with open(self.rows, "w", encoding="utf-8") as sink:
                timed.mark()
                # every reason counted: the parent caps the merged ones
                tally = score(parts, batches, sink, counted, self.variants, WORKER_REASONS)
            metric.collect()
        finally:
            parts.close()
        self.values = metric.values
        result = ShardResult(tally, timed.describe(), timed.latencies, timed.prepare_s,
                             timed.searched)
        result.seen = part.split_seen()  # what the parent checks across shards
        return result

    def fold(self, starts: dict[str, float]) -> dict[str, float]:
        """The retrieval sums of the shards up to this one (``starts``: those before)."""
        return fold(self.values, starts)

    def strip(self, keys: list[str]) -> None:
        """Drop ``keys`` (cut-offs above the run's depth) from the shard's rows."""
        from harness.run.outputs import strip_keys

        strip_keys(Path(self.rows), keys)

    def progress(self) -> int:
        """Samples scored so far (polled by the Ray backend)."""
        return self.done

    @staticmethod
    def _answer(work: Callable[[], Any]) -> Outcome:
        # Everything that leaves the worker is text no one redacted yet: it is redacted
        # here (URI credentials, the worker's own registered secrets) and again in the parent.
        try:
            return "result", work()
        except HarnessError as e:
            attrs = {k: redact(v) if isinstance(v, str) else v for k, v in vars(e).items()
                     if isinstance(v, str | int | float | None)}
            return "error", (type(e).__module__, type(e).__name__, redact(str(e)), attrs)
        except OSError as e:  # a full disk, a vanished folder: the path and the cause
            if e.filename is None:
                return "crash", _crash(e)
            where = redact(str(e.filename))
            message = f"cannot write {where} ({reason(e)}){hint(e)}"
            return "error", ("harness.run.outputs.folder", "OutputError", message, {})
        except Exception as e:  # noqa: BLE001 - a bug: one line, the trace in the debug log
            return "crash", _crash(e)


def _crash(error: BaseException) -> tuple[str, str]:
    """An unexpected exception as ``(Type: message, traceback)``, both redacted."""
    return error_text(error), redact(traceback.format_exc())


class Harvest:
    """The run's metric, keeping each batch's results until the evaluation loop has added
    the retrieval metrics to them (by the next batch, or ``collect`` at the end), to
    gather their values in sample order for ``fold``."""

    def __init__(self, inner: Metric, ks: Sequence[int]) -> None:
        self.inner = inner
        self.name, self.requires, self.prevalidate = inner.name, inner.requires, False
        self.batch_size, self.human_score, self.joins_loop = inner.batch_size, None, False
        self.judges = inner.judges
        self.names = list(at_cutoffs((), {}, ks)) if ks else []
        self.values: dict[str, array[float]] = {n: array("d") for n in self.names}
        self._last: tuple[Sequence[RagSample], list[SampleResult]] | None = None

    def score_batch(
        self, samples: Sequence[RagSample], on_done: OnDone | None = None
    ) -> list[SampleResult]:
        """The inner metric's results (the previous batch's values are gathered first)."""
        self.collect()
        results = self.inner.score_batch(samples, on_done)
        self._last = (samples, results)
        return results

    def collect(self) -> None:
        """Gather the retrieval values of the last batch (as the loop's condition has it)."""
        last, self._last = self._last, None
        if last is None or not self.names:
            return
        columns = [self.values[n] for n in self.names]
        for sample, result in zip(*last, strict=True):
            if sample.reference_context_ids is not None and (
                sample.retrieved_context_ids is not None
            ):
                for name, column in zip(self.names, columns, strict=True):
                    column.append(result.details[name])

    def preflight(self) -> None:
        """The inner metric's."""
        self.inner.preflight()

    def describe(self) -> dict[str, Any]:
        """The inner metric's."""
        return self.inner.describe()

    def stats(self) -> dict[str, float | None]:
        """The inner metric's."""
        return self.inner.stats()

    def write_artifacts(self, out_dir: Path) -> list[Path]:
        """The inner metric's."""
        return self.inner.write_artifacts(out_dir)

    def close(self) -> None:
        """The inner metric's."""
        self.inner.close()


def failure(outcome: Outcome, span: Span) -> BaseException:
    """The exception to raise in the parent for a worker's failed ``outcome``: one line,
    redacted (a crash's redacted traceback goes to the debug log, never to the console)."""
    import importlib

    kind, value = outcome
    if kind == "crash":
        line, trace = value
        logging.getLogger(__name__).debug("%s failed:\n%s", span.describe(), redact(trace))
        return ShardFailed(f"{span.describe()}: its worker failed: {one_line(redact(line))}")
    module, name, message, attrs = value
    message = redact(message)
    cls = getattr(importlib.import_module(module), name, None) if (
        module.startswith("harness.")) else None
    if isinstance(cls, type) and issubclass(cls, HarnessError):
        error = cls.__new__(cls)
        Exception.__init__(error, f"{span.describe()}: {message}")
        error.__dict__.update({k: redact(v) if isinstance(v, str) else v
                               for k, v in attrs.items()})
        return error
    return ShardFailed(f"{span.describe()}: {message}")
