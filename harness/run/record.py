"""The run record path every task shares: the tracked run's fate on failure (``tracked``),
then the task's output writers and the ``RunRecord`` handed to the tracker (``finish``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness import __version__
from harness.core.errors import ComponentFailed, HarnessError, JudgeUnavailable
from harness.core.protocols import Parts
from harness.core.redact import redact, redact_tree
from harness.core.settings import Job
from harness.core.summary import Summary
from harness.core.types import RunRecord, Status, TrackedRun
from harness.run.outputs import OutputError
from harness.run.outputs.writers import Finished, OutputWriter, written


def base_tags(job: Job) -> dict[str, str]:
    """Tags of every run: the options chosen, the version, the sweep it belongs to."""
    tags = {f"choice.{k}": str(v) for k, v in job.choices.items()}
    tags["harness.version"] = __version__
    if job.overrides:
        tags["hydra.overrides"] = job.overrides
    if job.multirun:
        tags["hydra.sweep_dir"], tags["hydra.job_num"] = str(job.sweep_dir), str(job.job_num)
    return tags


@contextmanager
def tracked(
    parts: Parts, job: Job, tags: dict[str, str], discard: Callable[[], None]
) -> Iterator[None]:
    """Open the tracked run, and end it as the work ends when that is not a success.

    An endpoint that died mid-run, or an output that could not be written, leaves a FAILED
    run with the rows finished so far; bad input leaves no run and no partial results
    (``discard``); an interruption leaves a KILLED run with the rows written so far.
    """
    parts.tracker.begin(
        redact(job.run_name), redact_tree(tags), multirun=job.multirun, sweep_dir=job.sweep_dir
    )
    try:
        yield
    except (JudgeUnavailable, ComponentFailed, OutputError):
        parts.tracker.abort("FAILED")  # the rows so far stay, in the .partial file
        raise
    except HarnessError:
        # bad input: no run is left behind, except in a sweep, whose parent counts it
        parts.tracker.abort("FAILED" if job.multirun else "DELETE")
        discard()
        raise
    except BaseException:
        parts.tracker.abort("KILLED")
        raise


def finish(
    parts: Parts,
    job: Job,
    summary: Summary,
    writers: Sequence[OutputWriter],
    *,
    rows: Path,
    tally: Any = None,
    status: Status = "FINISHED",
) -> TrackedRun | None:
    """The one record path of every task: run the task's output ``writers`` (``config.yaml``,
    the ``rows``, ``summary.json``, ...), then log the run: the summary's params, its
    metrics that have a value, the job's tags and the summary's, and the files written, in
    the writers' order."""
    done = Finished(job, summary, rows, parts.metric, tally, parts.tracker.keeps_artifacts,
                    parts.settings.report, dataset=parts.dataset)
    try:
        for writer in writers:
            done.written += written(writer, done)
    except OutputError:
        parts.tracker.abort("FAILED")  # the rows and the files before it stay
        raise
    record = RunRecord(
        params=redact_tree(summary.params()),
        metrics={k: float(v) for k, v in summary.metrics().items() if v is not None},
        tags=redact_tree({**base_tags(job), **summary.tags()}),
        artifacts=[str(p) for p in done.written],
        status=status,
    )
    return parts.tracker.finish(record)
