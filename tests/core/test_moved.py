"""The map of moved modules (``harness.core.moved``, until 0.3.0): every old path imports,
with a ``DeprecationWarning`` naming its new place and the removal release, and is the very
module object at the new path (so classes compare equal); a dotted name below an old path
resolves to the same object as the new one; a name that never moved is not answered."""

from __future__ import annotations

import importlib
import sys
import warnings

import pytest

import harness  # noqa: F401  (installs the finder)
from harness.core import moved


def test_the_map_drops_its_paths_in_0_3_0_and_stays_inside_the_package() -> None:
    assert len(moved.MOVED) >= 58  # the 58 paths of 0.2.0, and what moved since
    assert moved.UNTIL == "0.3.0"
    assert all(old.startswith("harness.") and new.startswith("harness.")
               for old, new in moved.MOVED.items())


@pytest.mark.parametrize(("old", "new"), sorted(moved.MOVED.items()))
def test_an_old_path_imports_as_the_new_module_with_a_warning(old: str, new: str) -> None:
    module = importlib.import_module(new)
    saved = sys.modules.pop(old, None)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            answered = importlib.import_module(old)
        assert answered is module
        notes = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
        assert f"{old} moved to {new} in harness 0.2.0; the old path works until 0.3.0" in notes
    finally:
        sys.modules.pop(old, None)
        if saved is not None:
            sys.modules[old] = saved


@pytest.mark.parametrize(("dotted", "expected"), [
    ("harness.errors.ConfigError", "harness.core.errors.ConfigError"),
    ("harness.retrievers.base.CorpusRetriever", "harness.retrievers.corpus.CorpusRetriever"),
    ("harness.tracking.base", "harness.tracking.null"),
    ("harness.core.errors.ConfigError", None),  # never moved
    ("harness.errorsX.ConfigError", None),
])
def test_new_path_of_a_dotted_name(dotted: str, expected: str | None) -> None:
    assert moved.new_path(dotted) == expected


def test_a_class_under_an_old_path_is_the_class_at_the_new_one() -> None:
    from harness.core.errors import ConfigError
    from harness.tracking.null import NullTracker

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old_errors = importlib.import_module("harness.errors")
        old_base = importlib.import_module("harness.tracking.base")
    assert old_errors.ConfigError is ConfigError
    assert old_base.NullTracker is NullTracker


def test_a_path_that_never_existed_is_still_not_found() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("harness.no_such_module")
