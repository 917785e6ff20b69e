"""The Hydra task function: from the composed config of one job to its task's result.

Errors the user can act on end as one line and an exit code: 2 bad input or config,
3 a limit the user set was broken, 128+N a signal.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from harness.build import build, instantiate, uses
from harness.errors import HarnessError, Interrupted, RunFailed
from harness.job import Job, Parts


def job_config(cfg: DictConfig) -> dict[str, Any]:
    """The resolved config as plain containers, without Hydra's own node."""
    resolved = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(resolved, dict)
    resolved.pop("hydra", None)
    return {str(k): v for k, v in resolved.items()}


def choices_of(cfg: DictConfig, parts: Parts, chosen: dict[str, Any]) -> dict[str, str]:
    """The options chosen in the groups that matter to this job (tags, run names)."""
    # Nested choices (a hybrid's parts: ``retriever@retriever.retrievers.bm25``) are in the
    # config itself; tags and run names keep the top-level groups.
    choices = {
        k: str(v) for k, v in chosen.items() if v and not k.startswith("hydra/") and "@" not in k
    }
    if not uses(cfg, "judge"):
        choices = {k: v for k, v in choices.items() if k not in ("judge", "prompt")}
    for group in parts.task.unused_groups:
        choices.pop(group, None)
    return choices


def run(cfg: DictConfig) -> float:
    """Run one job; return ``run.objective`` (NaN when it has no value)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hc = HydraConfig.get()
    parts = build(cfg)
    multirun = hc.mode == RunMode.MULTIRUN
    job = Job(
        config=job_config(cfg),
        out_dir=Path(hc.runtime.output_dir),
        choices=choices_of(cfg, parts, dict(hc.runtime.choices)),
        run_name=hc.job.override_dirname or "default",
        sweep_dir=str(hc.sweep.dir) if multirun else None,
        job_num=hc.job.num if multirun else None,
        build=lambda group: instantiate(cfg, group),
    )
    try:
        return parts.task.run(parts, job)[1]
    finally:
        parts.close()


def main(cfg: DictConfig) -> float | None:
    """Hydra task function: report ``HarnessError`` as one line and a non-zero exit."""
    try:
        return run(cfg)
    except RunFailed as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(3)
    except HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt as e:
        signum = e.signum if isinstance(e, Interrupted) else 2
        print(
            f"interrupted (signal {signum}): the MLflow run is marked KILLED; finished rows are "
            "in samples.jsonl and judge verdicts in the cache, so rerunning resumes",
            file=sys.stderr,
        )
        sys.exit(128 + signum)
