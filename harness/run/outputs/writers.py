"""The output writers: what a finished job writes beside its rows, in one list per task.

Each writer takes the finished job (``Finished``) and returns the files it wrote, which the
tracker attaches in the order the list gives. A new kind of output is one class here (or in
a room above, e.g. the report's) and one entry in its task's list
(``harness.report.writers.EVALUATE``, ``AGREEMENT``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from harness.core.protocols import Metric
from harness.core.redact import redact, redact_tree
from harness.core.settings import Job
from harness.core.summary import Summary
from harness.run.outputs.files import write_json, write_text
from harness.run.outputs.folder import OutputError, hint, reason


@dataclass
class Finished:
    """What a finished job hands its writers."""

    job: Job
    summary: Summary
    rows: Path  # the rows file, complete
    metric: Metric | None = None
    tally: Any = None  # the scoring loop's ``Tally`` (task=evaluate)
    keeps_artifacts: bool = False  # the tracker stores attached files (plots only then)
    report: bool = False  # run.report
    dataset: Any = None  # where the samples came from (a writer may write back to it)
    written: list[Path] = field(default_factory=list)  # what the writers before wrote


class OutputWriter(Protocol):
    """Writes one kind of output of a finished job."""

    def write(self, done: Finished) -> list[Path]:
        """Write it; return the files written (``[]``: nothing to write for this job)."""
        ...


def written(writer: OutputWriter, done: Finished) -> list[Path]:
    """``writer.write(done)``; an ``OSError`` it lets out (a full disk under a plot, the
    report, a metric's files) is an ``OutputError`` naming the file and the cause."""
    try:
        return writer.write(done)
    except OSError as e:
        where = e.filename or done.job.out_dir
        raise OutputError(f"cannot write {redact(str(where))} ({reason(e)}){hint(e)}; the "
                          "files written before it are kept") from None


class ConfigFile:
    """``config.yaml``: the resolved config the job ran with (no ``hydra`` node), without
    credentials."""

    def write(self, done: Finished) -> list[Path]:
        from omegaconf import OmegaConf

        path = done.job.out_dir / "config.yaml"
        return [write_text(path, OmegaConf.to_yaml(redact_tree(done.job.config)))]


class RowsFile:
    """The rows (``samples.jsonl``, ``agreement.jsonl``): streamed while the job ran."""

    def write(self, done: Finished) -> list[Path]:
        return [done.rows]


class SummaryFile:
    """``summary.json``."""

    def write(self, done: Finished) -> list[Path]:
        return [write_json(done.job.out_dir / "summary.json", done.summary.as_json())]


class MetricFiles:
    """What the metric keeps with the run (its prompt, ``prompt.yaml``)."""

    def write(self, done: Finished) -> list[Path]:
        return [] if done.metric is None else done.metric.write_artifacts(done.job.out_dir)
