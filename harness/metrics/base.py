"""What a metric variant may inherit: every member of the ``Metric`` protocol but scoring."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness.core.protocols import OnDone
from harness.core.types import RagSample, SampleResult


class BaseMetric:
    """Defaults for the public ``Metric`` protocol (``harness.core.protocols.Metric``, API v1).

    A metric of your own subclasses this, sets ``name`` and ``requires`` and implements
    ``score_batch``; it scores in the caller's thread and needs no preflight, judge or
    artifacts unless it overrides those members.
    """

    name: str = "metric"
    requires: frozenset[str] = frozenset()
    prevalidate: bool = False
    #: Samples a batch when ``run.batch_size`` is null (``None``: 1,024).
    batch_size: int | None = None
    #: How it scores a sample's human verdicts in rank order (``run.human_labels``);
    #: ``None``: it cannot, and a run with human labels is refused before any work.
    human_score: Callable[[Sequence[int]], float] | None = None
    #: A judged metric of the harness that shares one event loop with the others of a run.
    joins_loop: bool = False

    def preflight(self) -> None:
        """Nothing to check."""

    def score_batch(
        self, samples: Sequence[RagSample], on_done: OnDone | None = None
    ) -> list[SampleResult]:
        """One result per sample, in order."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """No judge or prompt to record."""
        return {}

    def stats(self) -> dict[str, float | None]:
        """No counters."""
        return {}

    def write_artifacts(self, out_dir: Path) -> list[Path]:
        """No files."""
        return []

    def close(self) -> None:
        """Nothing to release."""


def missing_fields(sample: RagSample, requires: frozenset[str]) -> str | None:
    """Why ``sample`` cannot be scored for lack of fields, or ``None`` if it has them all."""
    missing = sorted(f for f in requires if getattr(sample, f) is None)
    if not missing:
        return None
    return "missing field" + ("s " if len(missing) > 1 else " ") + ", ".join(missing)
