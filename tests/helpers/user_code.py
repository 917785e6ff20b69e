"""The user's own code (a retriever, a factory) as a user keeps it: a package in a folder on
the import path."""

from __future__ import annotations

import textwrap
import uuid
from pathlib import Path

import pytest


def user_package(root: Path, monkeypatch: pytest.MonkeyPatch, prefix: str, **modules: str) -> str:
    """Write the package ``<prefix>_<random>`` under ``root``: an empty ``__init__.py`` and
    ``modules`` (module name -> source, dedented); put ``root`` on ``sys.path`` for the test.
    Returns the package's name, new each time, so no test imports another's cached module."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    (root / name).mkdir()
    (root / name / "__init__.py").write_text("")
    for module, code in modules.items():
        (root / name / f"{module}.py").write_text(textwrap.dedent(code))
    monkeypatch.syspath_prepend(str(root))
    return name
