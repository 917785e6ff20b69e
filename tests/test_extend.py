"""The extension API's front door: exactly these names, each the real thing (httpx's
``test_exported_members`` is the model)."""

from __future__ import annotations

import inspect

import harness.extend as extend

EXPECTED = [
    "API_VERSION", "BaseMetric", "Chunk", "ConfigError", "Corpus", "DatasetError", "Document",
    "HarnessError", "Hit", "Metric", "OnDone", "RagSample", "Retriever", "SampleResult",
    "SearchRetriever", "average_precision", "missing_fields", "set_precision", "unscored",
]


def test_exported_members_are_pinned():
    assert extend.__all__ == EXPECTED  # adding or dropping one is a decision: update both
    # (names that are not identifiers, such as @py_builtins, are pytest's assertion rewriting:
    # the package holds a pytest plugin, so pytest rewrites its modules in a test session)
    offered = {n for n in dir(extend)
               if n.isidentifier() and not n.startswith("_") and n != "annotations"}
    assert offered == set(EXPECTED)


def test_each_member_is_defined_in_harness():
    for name in EXPECTED:
        member = getattr(extend, name)
        if name in ("API_VERSION", "OnDone"):
            continue
        assert member.__module__.startswith("harness."), name
        assert member.__name__ == name, name


def test_the_version_and_the_protocols():
    assert extend.API_VERSION == 1
    assert inspect.isclass(extend.SearchRetriever) and inspect.isabstract(extend.SearchRetriever)
    def members(protocol: type) -> set[str]:
        return set(dir(protocol)) | set(protocol.__annotations__)

    assert {"needs_corpus", "prepare", "retrieve_batch", "describe"} <= members(extend.Retriever)
    assert {"name", "requires", "prevalidate", "score_batch"} <= members(extend.Metric)


def test_the_package_is_typed():
    from pathlib import Path

    assert (Path(extend.__file__).parent / "py.typed").is_file()
