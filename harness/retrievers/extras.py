"""Checks for the optional dependencies a retriever needs (``dense``, ``stem`` extras)."""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence

from harness.core.errors import ConfigError


def require_extra(modules: Sequence[str], what: str, extra: str | None) -> None:
    """Raise a one-line ``ConfigError`` when an optional dependency is not installed."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        how = f"pip install -e '.[{extra}]'" if extra else "pip install -e ."
        verb = "is" if len(missing) == 1 else "are"
        raise ConfigError(f"{what} needs {', '.join(missing)}, which {verb} not installed: {how}")
