"""The run record path every task shares: tags, the tracked run's fate on failure, the
files written beside the rows, and the ``RunRecord`` handed to the tracker."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness import __version__
from harness.core.errors import HarnessError, JudgeUnavailable
from harness.core.protocols import Parts
from harness.core.redact import redact, redact_tree
from harness.core.settings import Job
from harness.core.types import RunRecord, Status, TrackedRun
from harness.run.outputs import OutputError, write_json, write_text


def base_tags(job: Job) -> dict[str, str]:
    """Tags of every run: the options chosen, the version, the sweep it belongs to."""
    tags = {f"choice.{k}": str(v) for k, v in job.choices.items()}
    tags["harness.version"] = __version__
    if job.overrides:
        tags["hydra.overrides"] = job.overrides
    if job.multirun:
        tags["hydra.sweep_dir"], tags["hydra.job_num"] = str(job.sweep_dir), str(job.job_num)
    return tags


def judge_tags(judge: dict[str, Any]) -> dict[str, str]:
    """Tags naming the model that answered: ``judge.served_model`` (and ``judge.model_path``,
    ``judge.digest``, ``judge.reply_models`` where the server said), ``judge.cost`` when the
    cost is unknown."""
    tags = {f"judge.{k}": str(judge[k]) for k in ("served_model", "model_path", "digest")
            if judge.get(k) is not None}
    if judge.get("reply_models"):
        tags["judge.reply_models"] = ", ".join(judge["reply_models"])
    if judge.get("cost_unknown"):
        tags["judge.cost"] = f"unknown ({judge['cost_unknown']})"
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
    except (JudgeUnavailable, OutputError):
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


def write_config(job: Job) -> Path:
    """``config.yaml``: the resolved config the job ran with (no ``hydra`` node), without
    credentials."""
    from omegaconf import OmegaConf

    return write_text(job.out_dir / "config.yaml", OmegaConf.to_yaml(redact_tree(job.config)))


def flatten(tree: Any, prefix: str = "", elsewhere: Collection[str] = ()) -> dict[str, str]:
    """Flatten nested config into ``{"a.b": "value"}`` strings.

    ``_target_`` keys are skipped, and so are nested components named in ``elsewhere``
    (logged under their own group, as a metric's ``judge``); other nested components (a
    hybrid's parts, a rerank stage) are flattened under their path.
    """
    out: dict[str, str] = {}
    if isinstance(tree, dict):
        for key, value in tree.items():
            if key == "_target_" or (
                prefix and key in elsewhere and isinstance(value, dict) and "_target_" in value
            ):
                continue
            out.update(flatten(value, f"{prefix}{key}.", elsewhere))
    elif isinstance(tree, list):
        out[prefix[:-1]] = json.dumps(tree)
    else:
        out[prefix[:-1]] = "null" if tree is None else str(tree)
    return out


def finish(
    parts: Parts,
    job: Job,
    summary: dict[str, Any],
    *,
    rows: Path,
    params: dict[str, str],
    metrics: dict[str, Any],
    tags: dict[str, str],
    artifacts: list[Path],
    status: Status = "FINISHED",
) -> TrackedRun | None:
    """Write ``summary.json`` and ``config.yaml``, then log the run: params, the metrics
    that have a value, tags, and ``config.yaml``, the ``rows`` file, ``summary.json`` and
    ``artifacts`` attached in that order."""
    config_path = write_config(job)
    summary_path = write_json(job.out_dir / "summary.json", summary)
    record = RunRecord(
        params=redact_tree(params),
        metrics={k: float(v) for k, v in metrics.items() if v is not None},
        tags=redact_tree(tags),
        artifacts=[str(config_path), str(rows), str(summary_path), *map(str, artifacts)],
        status=status,
    )
    return parts.tracker.finish(record)
