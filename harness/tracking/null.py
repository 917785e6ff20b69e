"""The tracker that records nothing (``tracking=none``)."""

from __future__ import annotations

from typing import Any

from harness.core.protocols import SweepTracker
from harness.core.types import RunRecord, Status, TrackedRun

__all__ = ["NullTracker", "RunRecord", "Status", "TrackedRun"]


class NullTracker:
    """``tracking=none``: log nothing (``summary.json`` and ``samples.jsonl`` are still written)."""

    keeps_artifacts = False
    sweep: SweepTracker | None = None  # no sweep part: no parent run

    def begin(
        self,
        run_name: str,
        tags: dict[str, str],
        *,
        multirun: bool = False,
        sweep_dir: str | None = None,
    ) -> None:
        """Do nothing."""

    def finish(self, record: RunRecord) -> TrackedRun | None:
        """Do nothing."""
        return None

    def abort(self, status: str = "KILLED") -> None:
        """Do nothing."""

    def describe(self) -> dict[str, Any]:
        """No settings."""
        return {"backend": "none"}
