"""Start the chosen tracker's slow imports before Hydra composes, through its class.

The command line names the tracking option (``tracking=NAME``, else the default in
``conf/config.yaml``); its file names the class (``_target_``), or ``tracking._target_=``
does. A class of the package's own with a ``prewarm`` (optional on ``Tracker``) is handed
the ``tracking.KEY=VALUE`` overrides and returns how to discard the work if no run claims
it. A user's class is not imported here: it is imported once the config is checked. Reading
two small files costs well under a millisecond; no YAML parser is imported.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from pathlib import Path

from harness.core.trust import CONFIG_DIR

_DISCARDS: list[Callable[[], None]] = []
_DEFAULT = re.compile(r"^\s*-\s*tracking:\s*(\S+)", re.MULTILINE)
_TARGET = re.compile(r"^_target_:\s*(\S+)", re.MULTILINE)


def target(args: list[str]) -> str | None:
    """The tracking class's dotted path the command line picks; ``None`` when unknown here
    (an option in a user's config folder)."""
    given = {a.partition("=")[0].lstrip("+"): a.partition("=")[2] for a in args if "=" in a}
    if "tracking._target_" in given:
        return given["tracking._target_"]
    name = given.get("tracking") or _read(Path(CONFIG_DIR, "config.yaml"), _DEFAULT)
    return _read(Path(CONFIG_DIR, "tracking", f"{name}.yaml"), _TARGET) if name else None


def start(args: list[str]) -> None:
    """Call the chosen class's ``prewarm`` (the package's own classes only)."""
    dotted = target(args)
    if not dotted or not dotted.startswith("harness."):
        return
    module, _, name = dotted.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):  # the job says so when it builds the tracker
        return
    prewarm = getattr(cls, "prewarm", None)
    if prewarm is None:
        return
    settings = {a.partition("=")[0].lstrip("+").removeprefix("tracking."): a.partition("=")[2]
                for a in args if a.lstrip("+").startswith("tracking.")}
    discard = prewarm(settings)
    if discard is not None:
        _DISCARDS.append(discard)


def discard() -> None:
    """End prewarmed work that no run claimed."""
    while _DISCARDS:
        _DISCARDS.pop()()


def _read(path: Path, pattern: re.Pattern[str]) -> str | None:
    try:
        found = pattern.search(path.read_text(encoding="utf-8"))
    except OSError:
        return None
    return found.group(1).strip("'\"") if found else None
