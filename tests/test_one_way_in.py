"""One way in (issue 32): one builder (``harness.config.build.build``) and one runner
(``harness.api.run_job``) behind every entry point; parts are frozen and wrapped by
``dataclasses.replace``; no module writes another module's globals."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
from conftest import ROOT

PACKAGE = ROOT / "harness"


def _calls(path: Path, function: str | None = None) -> set[str]:
    """The names a module (or one of its functions) calls: ``f(...)`` and ``x.f(...)``
    both as ``f``."""
    tree: ast.AST = ast.parse(path.read_text("utf-8"))
    if function is not None:
        [tree] = [n for n in ast.walk(tree)
                  if isinstance(n, ast.FunctionDef) and n.name == function]
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                names.add(func.id)
            elif isinstance(func, ast.Attribute):
                names.add(func.attr)
    return names


def test_a_job_is_made_in_one_module() -> None:
    """``Job(...)`` is constructed by the runner only."""
    makers = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                    if "Job" in _calls(p))
    assert makers == ["api.py"]


@pytest.mark.parametrize(("path", "function", "runner"), [
    ("cli/job.py", "run", "run_job"),
    ("api.py", "evaluate", "run_in_process"),
    ("api.py", "run_in_process", "run_job"),
    ("testing/asserts.py", "run_overrides", "run_in_process"),
    ("testing/asserts.py", "assert_context_precision", "evaluate"),
])
def test_every_way_in_calls_the_runner_and_builds_nothing_itself(
    path: str, function: str, runner: str
) -> None:
    calls = _calls(PACKAGE / path, function)
    assert runner in calls
    assert not calls & {"build", "build_parts", "Job", "Parts", "sharded"}


@pytest.mark.parametrize("path", ["shards/worker.py", "cli/sweep_tracking.py"])
def test_the_worker_and_the_sweep_callback_build_with_the_builder(path: str) -> None:
    """The worker builds its parts from its plain mapping with ``build``; the sweep's
    callback its tracker with the builder's ``instantiate`` (trusted, checked), never
    Hydra's own."""
    text = (PACKAGE / path).read_text("utf-8")
    assert "from harness.config.build import" in text
    assert "hydra.utils" not in text
    assert "Parts(" not in text


def _module_aliases(tree: ast.Module) -> set[str]:
    """Names bound to a module of the package (``import harness.a.b as m``,
    ``from harness.a import b as m``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.asname or a.name.split(".")[0] for a in node.names
                         if a.name.startswith("harness"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("harness"):
            for a in node.names:
                base = ROOT.joinpath(*node.module.split("."), a.name)
                if base.with_suffix(".py").exists() or (base / "__init__.py").exists():
                    names.add(a.asname or a.name)
    return names


@pytest.mark.slow
def test_no_module_assigns_another_modules_global() -> None:
    """A module's private state is never written from outside (``Tally(max_reasons=...)``,
    not a patched ``_MAX_REASONS``)."""
    found = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text("utf-8"))
        modules = _module_aliases(tree)
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else [])
            for target in targets:
                if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                        and target.value.id in modules and target.attr.startswith("_")):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []


def test_the_global_check_can_fail() -> None:
    tree = ast.parse("from harness.run import tally as t\nimport sys\nt._MAX_REASONS = 1\n")
    assert _module_aliases(tree) == {"t"}


def test_parts_are_frozen_and_wrapped_by_replace() -> None:
    from harness.config.build import build
    from harness.metrics.panel import Panel
    from harness.tracking.null import NullTracker

    data = ROOT / "harness" / "data" / "sample_rag.jsonl"
    node = {"_target_": "harness.metrics.id_based.IdContextPrecision"}
    config = {"dataset": {"_target_": "harness.datasets.files.JsonlDataset", "path": str(data)},
              "retriever": {"_target_": "harness.retrievers.precomputed.Precomputed"},
              "metric": {"a": {**node, "name": "a", "aggregate": "set_precision"},
                         "b": {**node, "name": "b", "aggregate": "average_precision"}},
              "run": {}}
    parts = build(config, variants=["a", "b"])  # a shard worker's plain mapping
    try:
        assert isinstance(parts.metric, Panel)
        assert parts.metric.names == ("a", "b")
        assert [getattr(m, "aggregate", None) for m in parts.metric.members] == [
            "set_precision", "average_precision"]
        assert isinstance(parts.tracker, NullTracker)  # no tracking group: not tracked
        with pytest.raises(dataclasses.FrozenInstanceError):
            parts.retriever = parts.retriever  # type: ignore[misc]
        quiet = dataclasses.replace(parts, settings=dataclasses.replace(parts.settings,
                                                                        quiet=True))
        assert quiet.settings.quiet and not parts.settings.quiet
        assert quiet.metric is parts.metric
    finally:
        parts.close()


@pytest.mark.parametrize(("cap", "kept"), [(2, 2), (20, 5), (100_000, 5)])
def test_a_tally_caps_the_reasons_it_was_given(cap: int, kept: int) -> None:
    from harness.run.tally import MAX_REASONS, Scores, Tally

    for counts in (Tally("m", max_reasons=cap), Scores("m", max_reasons=cap)):
        for i in range(5):
            counts.count(None, f"reason {i}", {}, None)
        named = [r for r in counts.reasons if r != "(other reasons)"]
        assert len(named) == kept
        assert counts.reasons.get("(other reasons)", 0) == 5 - kept
    assert Tally("m").max_reasons == MAX_REASONS == 20
