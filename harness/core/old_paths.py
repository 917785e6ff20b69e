"""The finder ``import harness`` installs for the modules that moved in 0.2.0 (until 0.3.0).

It is asked only for a ``harness.*`` name no file answers (it is the last finder), and only
then loads the map of moved modules (``harness.core.moved``): importing a contract
(``harness.core.protocols``) or any module that exists never loads the map.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Sequence
from types import ModuleType


class OldPaths(importlib.abc.MetaPathFinder):
    """Answers an old module path with the module at its new place (``harness.core.moved``)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("harness."):
            return None
        from harness.core import moved

        return moved.spec(fullname)


def install() -> None:
    """Answer the old names (once per process)."""
    if not any(isinstance(f, OldPaths) for f in sys.meta_path):
        sys.meta_path.append(OldPaths())
