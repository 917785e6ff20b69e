"""Checks of the command line's config folders before Hydra reads them."""

from __future__ import annotations

from pathlib import Path

from harness.core.errors import ConfigError


def _items(value: str) -> list[str]:
    """The entries of a list override (``[file://a,'file://b']``) or of one value."""
    inner = value.strip()
    if inner.startswith("[") and inner.endswith("]"):
        inner = inner[1:-1]
    return [x.strip().strip("'\"") for x in inner.split(",") if x.strip()]


def check_config_folders(args: list[str]) -> None:
    """Each folder of ``hydra.searchpath=[file://DIR,...]`` and ``--config-dir DIR`` (``-cd``)
    exists: Hydra only warns about a missing one, then cannot find the configs the user
    put there (their option is "not found", with a wrong hint). ``ConfigError`` naming it."""
    for i, arg in enumerate(args):
        key, sep, value = arg.partition("=")
        if sep and key.lstrip("+") == "hydra.searchpath":
            for entry in _items(value):
                if entry.startswith("file://") and not Path(
                        entry.removeprefix("file://")).is_dir():
                    raise ConfigError(
                        f"hydra.searchpath: {entry} is not a folder (from {Path.cwd()}); "
                        "give the folder that holds your configs, e.g. "
                        "hydra.searchpath=[file://conf]"
                    )
        folder: str | None = None
        if key in ("--config-dir", "-cd") and sep:
            folder = value
        elif arg in ("--config-dir", "-cd"):
            folder = args[i + 1] if i + 1 < len(args) else ""
        if folder is not None and not Path(folder).is_dir():
            raise ConfigError(f"--config-dir: {folder!r} is not a folder; give the folder "
                              "that holds your configs")
