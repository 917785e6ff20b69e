"""A dataset split into contiguous shards, in sample order, for one run evaluated by several
workers (``run.shards``; ``harness.shards`` runs them).

A dataset that declares the ``Splittable`` capability splits itself at its record boundaries
(a JSON-lines file: byte ranges that end at line ends, ``harness.datasets.splitting``). Any
other dataset splits by sample index: each worker reads, validates and skips the samples
before its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from itertools import islice
from typing import Any

from harness.core.capabilities import Splittable, Traced
from harness.core.protocols import Dataset, Part, Span
from harness.core.types import Corpus, RagSample

__all__ = ["IndexShard", "Span", "plan", "shard"]


def plan(dataset: Dataset, count: int, limit: int | None) -> list[Span]:
    """At most ``count`` non-empty contiguous shards of ``dataset``'s first ``limit``
    samples (fewer when it has fewer lines or samples)."""
    if dataset.splittable is not None:  # a capability it declares (Dataset.splittable)
        return dataset.splittable.split_spans(count, limit)
    total = dataset.estimate_count()  # may be approximate: the last shard reads to the end
    total = total if limit is None else min(total, limit)
    count = min(count, max(total, 1))  # more shards than samples: one per sample
    cuts = sorted({i * total // count for i in range(count)})
    return [
        Span(i, len(cuts), start, cuts[i + 1] if i + 1 < len(cuts) else limit)
        for i, start in enumerate(cuts)
    ]


def shard(dataset: Dataset, span: Span) -> Part:
    """The part of ``dataset`` that ``span`` names (in a worker)."""
    if span.by_bytes and dataset.splittable is not None:
        return dataset.splittable.split_part(span)
    return IndexShard(dataset, span)


class IndexShard:
    """Samples ``[span.start, span.stop)`` of any dataset, reading (and validating) the
    ones before them."""

    def __init__(self, whole: Dataset, span: Span) -> None:
        self.whole, self.span = whole, span
        self.source, self.min_grade = whole.source, whole.min_grade
        self.splittable: Splittable | None = None
        self.traced: Traced | None = None
        self.fields: Mapping[str, str] = whole.fields
        self.stratify: Callable[[str], None] | None = None  # shards carry no strata

    def first_record(self) -> dict[str, Any]:
        """The whole dataset's first record."""
        return self.whole.first_record()

    def check(self) -> None:
        """The whole dataset's check."""
        self.whole.check()

    def estimate_count(self) -> int:
        """The shard's size as planned (0: to the end, unknown)."""
        return 0 if self.span.stop is None else self.span.stop - self.span.start

    def samples(self, limit: int | None = None) -> Iterator[RagSample]:
        """The shard's samples, in order."""
        return islice(self.whole.samples(self.span.stop), self.span.start, None)

    def batches(self, batch_size: int, limit: int | None = None) -> Iterator[list[RagSample]]:
        """The shard's samples in lists of at most ``batch_size``."""
        samples = self.samples()
        while batch := list(islice(samples, batch_size)):
            yield batch

    def corpus(self) -> Corpus | None:
        """The whole dataset's corpus."""
        return self.whole.corpus()

    def sha256(self) -> str:
        """The whole dataset's hash."""
        return self.whole.sha256()

    def describe(self) -> dict[str, Any]:
        """The whole dataset's description."""
        return self.whole.describe()

    def split_seen(self) -> None:
        """Nothing: each shard read the samples before its own, and checked them."""
        return None
