"""The seam between the runner and a metric variant."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from harness.types import RagSample, SampleResult


class Metric(Protocol):
    """A context-precision variant.

    ``requires`` names the sample fields the variant reads; a sample lacking one is
    unscored with that reason, never scored 0.
    """

    name: str
    requires: frozenset[str]

    def score_batch(self, samples: Sequence[RagSample]) -> list[SampleResult]:
        """Score samples, one result per sample, in order."""
        ...


def missing_fields(sample: RagSample, requires: frozenset[str]) -> str | None:
    """Why ``sample`` cannot be scored for lack of fields, or ``None`` if it has them all."""
    missing = sorted(f for f in requires if getattr(sample, f) is None)
    if not missing:
        return None
    return "missing field" + ("s " if len(missing) > 1 else " ") + ", ".join(missing)
