"""The Hydra task function: from the composed config of one job to its task's result.

Errors the user can act on end as one line and an exit code: 2 bad input or config,
3 a limit the user set was broken, 4 a gate failed (``run.fail_under``), 128+N a signal.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from harness.api import Place, run_job
from harness.config.build import uses
from harness.config.variants import compose_variants, search_overrides, variant_choices
from harness.core import secrets as cli_secrets
from harness.core.errors import ConfigError, GateFailed, HarnessError, Interrupted, RunFailed
from harness.core.protocols import Parts
from harness.core.redact import redact
from harness.core.settings import JobValue
from harness.run.outputs import release, write_text


def choices_of(cfg: DictConfig, parts: Parts, chosen: dict[str, Any]) -> dict[str, str]:
    """The options chosen in the groups that matter to this job (tags, run names)."""
    # Nested choices (a hybrid's parts: ``retriever@retriever.retrievers.bm25``) are in the
    # config itself; tags and run names keep the top-level groups.
    choices = {  # local: this machine's settings, which show in the config, not its name
        k: str(v) for k, v in chosen.items()
        if v and not k.startswith("hydra/") and "@" not in k and k != "local"
    }
    if not uses(cfg, "judge"):
        choices = {k: v for k, v in choices.items() if k not in ("judge", "prompt")}
    for group in parts.task.unused_groups:
        choices.pop(group, None)
    return choices


def run(cfg: DictConfig) -> JobValue:
    """Run one job; return ``run.objective`` (NaN when it has no value)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hc = HydraConfig.get()
    out_dir = Path(hc.runtime.output_dir)
    multirun = hc.mode == RunMode.MULTIRUN
    try:
        if multirun:
            _check_job_folder(out_dir, hc.job.num)
        scrub_hydra_files(out_dir)
        given = OmegaConf.to_container(hc.overrides.task, resolve=False)  # as typed: ${..}
        assert isinstance(given, list)
        variants = compose_variants([str(a) for a in given], _hydra_compose(hc.job.config_name),
                                    searched=search_overrides(hc.overrides.hydra))
        chosen = dict(hc.runtime.choices)

        def place(cfg: DictConfig, parts: Parts) -> Place:
            choices = choices_of(cfg, parts, chosen)
            if variants is not None:  # metric=[a,b]: each variant on its own
                choices = variant_choices(variants, choices, chosen)
            return Place(
                out_dir=out_dir,
                choices=choices,
                run_name=run_name(list(hc.overrides.task), choices.get("metric"), multirun),
                overrides=cli_secrets.reveal(redact(hc.job.override_dirname or "")),
                sweep_dir=str(hc.sweep.dir) if multirun else None,
                job_num=hc.job.num if multirun else None,
            )

        return run_job(cfg, variants, place=place).value
    finally:
        if not multirun:
            release(out_dir)


def _hydra_compose(config_name: str | None) -> Any:
    """Compose in the running Hydra app (its search path, its config), one line on error."""
    from hydra import compose

    from harness.config.compose import config_error

    def composing(overrides: list[str]) -> DictConfig:
        try:
            return compose(config_name or "config", overrides=overrides,
                           return_hydra_config=True)
        except Exception as e:
            raise config_error(e, overrides) from None

    return composing


#: Sweep jobs whose folder held another job's outputs: failed, with nowhere of their own to
#: record it (``cli.guard`` counts them at the end of the sweep).
SHARED_FOLDERS: list[str] = []


class FolderTaken(ConfigError):
    """A sweep job's folder already holds another job's outputs."""


def _check_job_folder(out_dir: Path, num: int) -> None:
    """A sweep job writes into a folder of its own: never over another job's results (a
    ``hydra.sweep.subdir`` that is the same for two jobs)."""
    from harness.run.outputs import FAILED, OUTPUTS

    taken = [n for n in (*OUTPUTS, FAILED) if (out_dir / n).exists()]
    if taken:
        raise FolderTaken(
            f"hydra.sweep.subdir: job {num}'s folder {out_dir} already holds another job's "
            f"{taken[0]}; it was not run, so as not to overwrite it: make the sub-folder "
            "unique per job (e.g. hydra.sweep.subdir=${hydra.job.num})"
        )


def scrub_hydra_files(out_dir: Path) -> None:
    """Mask credentials in what Hydra wrote into ``.hydra/`` from config files (command
    line values never get there: ``harness.core.secrets``)."""
    for path in sorted((out_dir / ".hydra").glob("*.yaml")):
        text = path.read_text("utf-8")
        if redact(text) != text:
            write_text(path, redact(text))


def run_name(overrides: list[str], metric: str | None, multirun: bool) -> str:
    """The tracker's run name: the metric and the overrides (in a sweep, the swept keys'
    values), without URLs or credentials (``harness.tracking.names``)."""
    from harness.tracking.names import short_name, swept_keys

    return short_name(overrides, metric, swept_keys() if multirun else None)


def main(cfg: DictConfig) -> JobValue | None:
    """Hydra task function: report ``HarnessError`` as one line and a non-zero exit.

    In a sweep (``-m``) a job that fails records its error in its folder and the sweep goes
    on; the command exits non-zero at the end (``harness.cli.guard``).
    """
    try:
        try:
            return run(cfg)
        except (SystemExit, KeyboardInterrupt) as e:
            from_user = _from_user_code(e)
            if from_user is None:
                raise
            raise from_user from None
    except HarnessError as e:
        code = 3 if isinstance(e, RunFailed) else 4 if isinstance(e, GateFailed) else 2
        line = f"error: {redact(str(e))}"
        if _in_sweep():
            failed = _job_failed(line, isinstance(e, FolderTaken))
            return e.value if isinstance(e, GateFailed) else _failed_value(cfg, failed)
        print(line, file=sys.stderr)
        sys.exit(code)
    except KeyboardInterrupt as e:
        from hydra.core.hydra_config import HydraConfig

        from harness.cli.signals import exiting, stopped_line

        # what was running, the rows kept and where, the tracked run's fate
        print(stopped_line(e, Path(HydraConfig.get().runtime.output_dir)), file=sys.stderr)
        sys.exit(exiting(e))


def _from_user_code(error: BaseException) -> HarnessError | None:
    """A ``sys.exit`` or a ``KeyboardInterrupt`` raised by a component's own code (not the
    harness's, not a signal: ``Interrupted``) as a ``ComponentFailed`` naming the module it
    came from; ``None`` for the harness's own (its line is written) and for a signal."""
    import signal

    from harness.core.errors import ComponentFailed

    if isinstance(error, Interrupted) or (isinstance(error, KeyboardInterrupt) and
                                          signal.getsignal(signal.SIGINT) is
                                          signal.default_int_handler):
        return None
    tb, module = error.__traceback__, None
    while tb is not None:
        module = tb.tb_frame.f_globals.get("__name__")
        tb = tb.tb_next
    if not isinstance(module, str) or module == "harness" or module.startswith(
            ("harness.", "hydra.", "omegaconf.")):
        return None
    what = (f"called sys.exit({error.code!r})" if isinstance(error, SystemExit)
            else "raised KeyboardInterrupt")
    return ComponentFailed(
        f"{module} {what} during the run; a component must raise an exception instead (the "
        "rows finished so far are in samples.jsonl.partial)"
    )


def _failed_value(cfg: DictConfig, nan: float) -> JobValue:
    """A failed trial's value: NaN, once per objective of ``run.objective``."""
    from harness.core.objectives import parse

    try:
        count = len(parse(OmegaConf.to_container(cfg.run).get("objective", "mean")))  # type: ignore[union-attr]
    except Exception:  # noqa: BLE001 - the job failed already; its value is NaN either way
        return nan
    return nan if count == 1 else (nan,) * count


def _in_sweep() -> bool:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    return bool(HydraConfig.get().mode == RunMode.MULTIRUN)


def _job_failed(line: str, shared: bool = False) -> float:
    """Record a sweep job's failure in its folder; the sweep goes on (NaN: a failed trial)."""
    from hydra.core.hydra_config import HydraConfig

    from harness.run.outputs import FAILED

    hc = HydraConfig.get()
    where = f"job {hc.job.num} ({hc.job.override_dirname or 'default'})"
    print(redact(f"{line} [{where}]"), file=sys.stderr)
    out_dir = Path(hc.runtime.output_dir)
    if shared:  # the folder is another job's: its error is counted, not written there
        SHARED_FOLDERS.append(str(out_dir))
        return float("nan")
    with contextlib.suppress(HarnessError):  # the line is on the console regardless
        write_text(out_dir / FAILED, redact(line) + "\n")
    return float("nan")
