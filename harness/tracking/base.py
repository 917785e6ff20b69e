"""What the runner hands to a tracker, and the tracker that records nothing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Status = Literal["FINISHED", "FAILED", "KILLED"]


@dataclass
class RunRecord:
    """Everything one run logs: plain strings and numbers, and paths of files to attach."""

    params: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    artifacts: list[str] = field(default_factory=list)
    status: Status = "FINISHED"

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe dict (for the background logging process)."""
        return {
            "params": self.params,
            "metrics": self.metrics,
            "tags": self.tags,
            "artifacts": self.artifacts,
            "status": self.status,
        }


@dataclass(frozen=True)
class TrackedRun:
    """Where a run was recorded."""

    run_id: str
    experiment_id: str
    tracking_uri: str


class Tracker(Protocol):
    """Records runs. ``begin`` may start work in the background; ``finish`` completes it."""

    def begin(
        self,
        run_name: str,
        tags: dict[str, str],
        *,
        multirun: bool = False,
        sweep_dir: str | None = None,
    ) -> None:
        """Open a run (possibly asynchronously) before the evaluation starts."""
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


class NullTracker:
    """``tracking=none``: log nothing."""

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
