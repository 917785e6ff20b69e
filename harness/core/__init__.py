"""Contracts and policies every other room builds on; imports nothing else from harness.

Imported first by ``import harness``: when this process is one of the harness's commands run
as ``python -m harness[.X]``, the working folder Python put at the front of ``sys.path`` is
taken off before any other import, so that a stray ``tqdm.py`` (or ``yaml.py``, ``typing.py``)
there never shadows a module the harness imports. The installed ``harness`` command never
has it there. Users' trusted packages are still found in that folder
(``harness.core.resolve``).
"""

import os as _os
import sys as _sys

#: The folder the process started in: where users' trusted packages are found.
START_DIR = _os.getcwd()


def _module_command() -> bool:
    """Whether this process is ``python -m harness`` or ``python -m harness.X``."""
    argv = list(getattr(_sys, "orig_argv", ()))
    if "-m" not in argv:
        return False
    i = argv.index("-m")
    name = argv[i + 1] if i + 1 < len(argv) else ""
    return name == "harness" or name.startswith("harness.")


def guard_import_path() -> None:
    """Take the working folder off the front of ``sys.path`` in ``python -m harness[.X]``."""
    if not _module_command() or not _sys.path:
        return
    first = _sys.path[0]
    if first in ("", ".") or _os.path.realpath(first) == _os.path.realpath(START_DIR):
        del _sys.path[0]


guard_import_path()
