"""Context precision inside a test suite: ``assert_context_precision`` (score samples with
any variant, fail below a floor), ``check_config`` (the same for a config file's run), and
the pytest plugin (``harness.testing.plugin``: the ``harness_eval`` fixture, the
``harness_config`` marker, a summary at the end of the session).

Importing this package loads only the standard library; the harness loads on first use.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FloorError", "assert_context_precision", "check_config", "run_overrides"]


def __getattr__(name: str) -> Any:
    if name == "FloorError":
        from harness.testing.checks import FloorError

        return FloorError
    if name in ("assert_context_precision", "check_config", "run_overrides"):
        from harness.testing import asserts

        return getattr(asserts, name)
    raise AttributeError(f"module 'harness.testing' has no attribute {name!r}")
