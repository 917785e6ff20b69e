"""The run record path every task shares: the tracked run's fate on failure (``tracked``),
then the task's output writers and the ``RunRecord`` handed to the tracker (``finish``)."""

from __future__ import annotations

import inspect
import math
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness import __version__
from harness.core.errors import ComponentFailed, HarnessError, JudgeUnavailable
from harness.core.metric_names import HEADLINE
from harness.core.protocols import Parts
from harness.core.redact import redact, redact_tree
from harness.core.settings import Job
from harness.core.summary import RunSummary, Summary
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
    except BaseException as e:
        parts.tracker.abort("KILLED")
        # for the interrupted line: the tracked run's fate, and whether a judge's verdicts
        # are in its cache
        e.stopped_run = {"backend": _backend(parts), "judged": bool(parts.metric.prevalidate)}  # type: ignore[attr-defined]
        raise


def _backend(parts: Parts) -> str:
    try:
        return str(parts.tracker.describe().get("backend", "none"))
    except Exception:  # noqa: BLE001 - only for a line's words
        return "none"


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
    if isinstance(summary, RunSummary) and summary.settings is None:
        summary.settings = effective_settings(summary.config)
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
        metrics=logged_metrics(summary.metrics()),
        tags=redact_tree({**base_tags(job), **summary.tags()}),
        artifacts=[str(p) for p in done.written],
        status=status,
    )
    return parts.tracker.finish(record)


def logged_metrics(metrics: Mapping[str, float | None]) -> dict[str, float]:
    """The metrics a tracker logs: those with a value, but ``headline``, which only names
    the value of another (the ``harness.headline`` tag says which)."""
    return {k: float(v) for k, v in metrics.items() if v is not None and k != HEADLINE}


def effective_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with the defaults of every component filled in: each mapping with a
    ``_target_`` gains its class's (or factory's) keyword defaults it was not given, and a
    ``factory`` beside ``kwargs`` (the LangChain and LlamaIndex adapters) fills ``kwargs`` from
    the factory's signature. Only defaults that JSON can hold (numbers, strings, booleans,
    null, lists of them) are kept; secret-named settings are masked. Nothing is imported: a
    component that was not loaded keeps the settings it was given."""
    filled = _filled(dict(config))
    settings: dict[str, Any] = redact_tree(filled)
    return settings


def _filled(node: Any) -> Any:
    if isinstance(node, list):
        return [_filled(v) for v in node]
    if not isinstance(node, Mapping):
        return node
    out = {k: _filled(v) for k, v in node.items()}
    if isinstance(out.get("_target_"), str):
        out.update({k: v for k, v in _defaults(out["_target_"]).items() if k not in out})
    if isinstance(out.get("factory"), str) and isinstance(out.get("kwargs", {}), Mapping):
        given = dict(out.get("kwargs") or {})
        found = _defaults(out["factory"])
        found.pop("documents", None)  # the harness passes the corpus
        out["kwargs"] = {**found, **given}
    return out


def _defaults(path: str) -> dict[str, Any]:
    """The keyword defaults of the loaded class or function at ``path`` that JSON can hold
    (``{}``: not loaded, or no signature)."""
    target = _loaded(path)
    if isinstance(target, classmethod | staticmethod):  # Class.create as a _target_
        target = target.__func__
    if target is None or not callable(target):
        return {}
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return {}
    return {name: _plain(p.default) for name, p in params.items()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and not name.startswith("_")
            and p.default is not p.empty and _plain(p.default) is not _NOT_PLAIN}


def _loaded(path: str) -> Any:
    """What ``path`` names in a module already imported (``None`` otherwise)."""
    names = path.split(".")
    for cut in range(len(names) - 1, 0, -1):
        found: Any = sys.modules.get(".".join(names[:cut]))
        if found is None:
            continue
        for name in names[cut:]:
            found = inspect.getattr_static(found, name, None)
            if found is None:
                return None
        return found
    return None


_NOT_PLAIN: Any = object()


def _plain(value: Any) -> Any:
    """``value`` as JSON holds it (a tuple as a list), or ``_NOT_PLAIN``."""
    if value is None or type(value) in (str, bool, int) or (
            type(value) is float and math.isfinite(value)):
        return value
    if isinstance(value, list | tuple):
        items = [_plain(v) for v in value]
        return _NOT_PLAIN if any(v is _NOT_PLAIN for v in items) else items
    return _NOT_PLAIN
