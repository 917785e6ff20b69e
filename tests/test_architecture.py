"""The shape of the package: small modules, no import cycles, one registry."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import CONF, ROOT

PACKAGE = ROOT / "harness"
MAX_LINES = 300


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Every harness module ``name`` imports: at module level, inside functions, and under
    ``if TYPE_CHECKING:`` (an annotation-only import still ties the two modules)."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text("utf-8"))
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")
                base = ".".join(up[: len(up) - node.level + 1] + [base])
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def test_no_module_is_longer_than_300_lines():
    long = {
        str(p.relative_to(ROOT)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text("utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_no_import_cycles():
    modules = _modules()
    graph = {name: _imports(name, path, set(modules)) for name, path in modules.items()}
    # A package's __init__ importing its own submodules is not a cycle worth reporting.
    for name in graph:
        graph[name] = {t for t in graph[name] if not t.startswith(name + ".")}
    cycles = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name)
    assert cycles == []


def test_cycle_finder_finds_a_cycle(tmp_path):
    """The checker above can fail: two modules importing each other are reported."""
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("import harness.build\n")
    b.write_text("from harness import registry\n")
    known = {"harness.build", "harness.registry"}
    assert _imports("x", a, known) == {"harness.build"}
    assert _imports("x", b, known) == {"harness.registry"}


def _targets(node: object) -> list[str]:
    if isinstance(node, dict):
        found = [str(node["_target_"])] if "_target_" in node else []
        return found + [t for v in node.values() for t in _targets(v)]
    if isinstance(node, list):
        return [t for v in node for t in _targets(v)]
    return []


@pytest.mark.parametrize(
    "path", sorted(CONF.rglob("*.yaml")), ids=lambda p: str(p.relative_to(CONF))
)
def test_every_target_in_conf_imports(path):
    """``_target_`` is the registry: each one a config names must resolve."""
    import yaml
    from hydra.utils import get_method

    for target in _targets(yaml.safe_load(path.read_text("utf-8")) or {}):
        if target.startswith("harness."):
            assert callable(get_method(target)), target


def test_no_second_registry():
    """No table from short names to classes, no self-built parts (``_recursive_: false``)."""
    offenders = [
        str(p.relative_to(ROOT))
        for p in [*PACKAGE.rglob("*.py"), *CONF.rglob("*.yaml")]
        if "_recursive_" in p.read_text("utf-8") or "SHORT_NAMES" in p.read_text("utf-8")
    ]
    assert offenders == []
