"""A run's output folder: checked before Hydra writes into it and claimed for one run; a
folder that holds another run's outputs, or a run in progress, is never reused."""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from harness.core.errors import ConfigError, HarnessError

#: Present while a run writes into its folder (holds the writer's pid).
RUNNING = ".harness-running"
#: Files whose presence means a folder already holds a run's outputs.
OUTPUTS = ("summary.json", "samples.jsonl", "samples.jsonl.partial", "agreement.jsonl")
#: Written into a sweep job's folder when the job failed (its one error line).
FAILED = "error.txt"


class OutputError(HarnessError):
    """An output file could not be written (disk full, permissions, a vanished folder)."""


def reason(error: OSError) -> str:
    """The operating system's words for ``error`` (``No space left on device``)."""
    return error.strerror or os.strerror(error.errno or 0) or str(error)


def check_folder(folder: str | Path, setting: str) -> Path:
    """Create ``folder`` if needed and make sure a run can write there and has not already.

    Raises:
        ConfigError: naming ``setting`` (``hydra.run.dir``), the folder and the cause.
    """
    path = Path(folder).expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".harness-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise ConfigError(
            f"{setting}={folder}: cannot write the run's outputs there ({reason(e)}); "
            f"choose another folder, e.g. {setting}=outputs/my-run"
        ) from None
    used = [name for name in (*OUTPUTS, RUNNING) if (path / name).exists()]
    if used:
        what = "a run in progress" if used == [RUNNING] else f"an earlier run's {used[0]}"
        raise ConfigError(
            f"{setting}={folder}: the folder already holds {what}; a run never writes over "
            "another's outputs: choose a new folder (or leave it unset for a fresh one)"
        )
    return path


def claim(folder: Path, setting: str = "hydra.run.dir") -> None:
    """Mark ``folder`` as being written by this process (refused if another run has it,
    naming ``setting``: two runs started at once both pass ``check_folder``)."""
    marker = folder / RUNNING
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        raise ConfigError(
            f"{setting}={folder}: another run is writing there ({marker} exists); a run never "
            "writes over another's outputs: choose a new folder (or leave it unset for a fresh one)"
        ) from None
    except OSError as e:
        raise OutputError(f"cannot write into {folder} ({reason(e)})") from None
    with os.fdopen(fd, "w") as handle:
        handle.write(str(os.getpid()))


def failed_jobs(sweep_dir: Path) -> list[Path]:
    """The job folders under ``sweep_dir`` whose job failed."""
    return sorted(p.parent for p in sweep_dir.glob(f"**/{FAILED}"))


def release(folder: Path) -> None:
    """The run has ended: the folder is no longer being written."""
    with contextlib.suppress(OSError):
        (folder / RUNNING).unlink()


def hint(error: OSError) -> str:
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return "; free some space or write elsewhere (hydra.run.dir=...)"
    if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "; choose a writable folder (hydra.run.dir=...)"
    return ""


