"""The Hydra callback that guards output folders and reports a sweep's failed jobs.

Before Hydra writes anything into a run's folder (``.hydra/``, the log), the folder is
checked: it must be writable and must not hold another run's outputs or a run in
progress; it is then claimed for this run. A sweep's folder is checked the same way. A
sweep goes on when one of its jobs fails (the job records its error in its folder); at
the end the guard says how many failed, and the command exits non-zero.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NoReturn

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from harness.core.errors import HarnessError
from harness.report.write import REPORT
from harness.run.outputs import FAILED, check_folder, claim, failed_jobs, release


def _stop(error: HarnessError) -> NoReturn:
    from harness.core.redact import redact

    print(f"error: {redact(str(error))}", file=sys.stderr)
    sys.exit(2)


def _gate_only(path: Path) -> bool:
    from harness.core.errors import GATE_FAILED

    try:
        return path.read_text("utf-8").startswith(f"error: {GATE_FAILED}")
    except OSError:
        return False


#: The folders this process claimed (released when the command ends, however it ends).
CLAIMED: list[Path] = []


def release_claimed() -> None:
    """Release the folders this command claimed (a job releases its own; this is for a
    command that ended before its job did: a logging config that failed, a signal)."""
    while CLAIMED:
        release(CLAIMED.pop())


def _earlier_sweep(path: Path) -> bool:
    """Whether ``path`` holds a sweep's files: its ``multirun.yaml``, its ``report.html``,
    a job folder with a result or an error."""
    return ((path / "multirun.yaml").exists() or (path / REPORT).exists()
            or any(path.glob("*/summary.json")) or bool(failed_jobs(path)))


def _setting(config: DictConfig, key: str) -> str:
    """``hydra.KEY`` as a string; one line and exit 2 when it does not resolve (Hydra would
    turn the callback's error into a warning and go on, unguarded)."""
    try:
        return str(config.hydra[key.split(".")[0]][key.split(".")[1]])
    except Exception as e:  # noqa: BLE001 - OmegaConf raises several types
        _stop(HarnessError(f"hydra.{key}: {str(e).strip().splitlines()[0]}"))


#: Environment variables that make a process load code: never set through a config.
CODE_LOADING_ENV = ("LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "PYTHONPATH", "PYTHONSTARTUP",
                    "PYTHONHOME", "PYTHONWARNINGS", "PYTHONEXECUTABLE", "PYTHONUSERBASE",
                    "BASH_ENV", "ENV")


def _check_env_set(config: DictConfig) -> None:
    """``hydra.job.env_set`` may set settings, never a variable that makes the helper and
    worker processes load code (``LD_PRELOAD``, ``PYTHONPATH``, ``DYLD_*``)."""
    try:
        names = [str(k) for k in (config.hydra.job.get("env_set") or {})]
    except Exception as e:  # noqa: BLE001 - OmegaConf raises several types
        _stop(HarnessError(f"hydra.job.env_set: {str(e).strip().splitlines()[0]}"))
    for name in names:
        if name.upper() in CODE_LOADING_ENV or name.upper().startswith("DYLD_"):
            _stop(HarnessError(
                f"hydra.job.env_set.{name}: refused: it makes processes load code, which a "
                "config never sets; set it in your shell if you mean it"
            ))


def _check_output_subdir(config: DictConfig) -> None:
    """``hydra.output_subdir`` is a folder inside the run's folder (or null): ``..`` or an
    absolute path would put Hydra's files into another run's folder."""
    try:
        subdir = config.hydra.get("output_subdir")
    except Exception as e:  # noqa: BLE001 - OmegaConf raises several types
        _stop(HarnessError(f"hydra.output_subdir: {str(e).strip().splitlines()[0]}"))
    if subdir is None:
        return
    parts = Path(str(subdir)).parts
    if not parts or Path(str(subdir)).is_absolute() or ".." in parts:
        _stop(HarnessError(
            f"hydra.output_subdir={subdir}: Hydra's files must stay inside the run's own "
            "folder; name a sub-folder (the default is .hydra) or null for none"
        ))


def _check_subdir(config: DictConfig) -> None:
    """Two jobs of a sweep never share a folder: ``hydra.sweep.subdir`` is not one constant,
    and with ``${hydra.job.override_dirname}`` no swept key is one it leaves out."""
    from omegaconf import OmegaConf

    from harness.tracking.names import swept_params

    try:
        sweep = OmegaConf.to_container(config.hydra.sweep, resolve=False)
        params: Any = config.hydra.sweeper.get("params") or {}
        if OmegaConf.is_config(params):
            params = OmegaConf.to_container(params, resolve=False)
        swept = swept_params(list(config.hydra.overrides.task), params)
        excluded = {str(k) for k in
                    config.hydra.job.config.override_dirname.get("exclude_keys") or []}
    except Exception:  # noqa: BLE001 - unusual configs: each job checks its own folder
        return
    text = str(sweep.get("subdir")) if isinstance(sweep, dict) else "None"
    if not swept or text == "None" or "hydra.job.num" in text or "hydra.job.id" in text:
        return
    if "${" not in text:
        _stop(HarnessError(
            f"hydra.sweep.subdir={text}: every job of the sweep would write into the same "
            "folder; make it unique per job, e.g. hydra.sweep.subdir=${hydra.job.num}"
        ))
    shared = sorted(k for k in swept if k.lstrip("+~") in excluded)
    if "hydra.job.override_dirname" in text and shared:
        _stop(HarnessError(
            f"hydra.sweep.subdir={text}: the sweep varies {shared[0]}, which "
            "hydra.job.config.override_dirname.exclude_keys leaves out of the folder name, so "
            "two jobs would share a folder; add ${hydra.job.num} to the sub-folder"
        ))


def _check_objective(config: DictConfig) -> None:
    """A sweep's ``run.objective`` is sound before a trial runs: a sweeper (Optuna's NSGA-II)
    would otherwise run every job to a failure, then end in its own traceback."""
    from omegaconf import OmegaConf

    from harness.core.objectives import parse

    try:
        value = OmegaConf.select(config, "run.objective", default="mean")
        plain: Any = OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
        parse(plain)
    except HarnessError as e:
        _stop(e)
    except Exception as e:  # noqa: BLE001 - an interpolation that does not resolve
        _stop(HarnessError(f"run.objective: {str(e).splitlines()[0]}"))


class RunGuard(Callback):
    """Check and claim output folders; count a sweep's failed jobs."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Check and claim ``hydra.run.dir`` before Hydra writes into it."""
        _check_output_subdir(config)
        _check_env_set(config)
        run_dir = _setting(config, "run.dir")
        try:
            path = check_folder(run_dir, "hydra.run.dir")
            if _earlier_sweep(path):
                raise HarnessError(
                    f"hydra.run.dir={run_dir}: the folder holds an earlier sweep; a run never "
                    "writes over another's outputs: choose a new folder (or leave it unset "
                    "for a fresh one)"
                )
            claim(path)
        except HarnessError as e:
            _stop(e)
        CLAIMED.append(path)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Check ``hydra.sweep.dir`` and ``run.objective`` before any job starts."""
        _check_output_subdir(config)
        _check_env_set(config)
        _check_subdir(config)
        _check_objective(config)
        sweep_dir = _setting(config, "sweep.dir")
        try:
            path = check_folder(sweep_dir, "hydra.sweep.dir")
        except HarnessError as e:
            _stop(e)
        if _earlier_sweep(path):
            _stop(HarnessError(
                f"hydra.sweep.dir={sweep_dir}: the folder already holds an earlier sweep; "
                "choose a new folder (or leave it unset for a fresh one)"
            ))

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Say how many jobs failed and end the command with code 2 (4 when every failed job
        only failed its gate). Hydra calls this callback last (end callbacks run in
        reverse order), after the sweep's parent run is closed."""
        from harness.cli.job import SHARED_FOLDERS

        try:
            failed = failed_jobs(Path(str(config.hydra.sweep.dir)))
        except Exception:  # noqa: BLE001 - it did not resolve: on_multirun_start said so
            return
        shared, SHARED_FOLDERS[:] = [Path(p) for p in SHARED_FOLDERS], []
        if not failed and not shared:
            return
        gates = sum(_gate_only(p / FAILED) for p in failed)
        failed = failed + shared
        names = ", ".join(str(p) for p in failed[:5]) + (" …" if len(failed) > 5 else "")
        print(
            f"error: {len(failed)} job(s) of the sweep failed ({names}); each one's "
            f"error is in its folder's {FAILED}, the other jobs ran",
            file=sys.stderr,
        )
        sys.exit(4 if gates == len(failed) else 2)
