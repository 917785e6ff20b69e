"""The shape of the package: modules cut by meaning, no import cycles, one registry, parts
that declare what they can do."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import CONF, ROOT

PACKAGE = ROOT / "harness"
#: A cohesive module may run this long; past it, it holds more than one concern.
MAX_LINES = 500


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


def test_no_module_is_longer_than_500_lines():
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
    a.write_text("import harness.config.build\n")
    b.write_text("from harness.core import trust\n")
    known = {"harness.config.build", "harness.core.trust"}
    assert _imports("x", a, known) == {"harness.config.build"}
    assert _imports("x", b, known) == {"harness.core.trust"}


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


#: The rooms of the package, bottom up (docs/contributing/architecture.md): a room may import
#: itself and the rooms of a lower rank only.
RANKS = {
    "core": 0, "conf": 0,
    "datasets": 1, "prompts": 1, "tracking": 1, "judges": 1, "retrievers": 1,
    "metrics": 2,
    "confidence": 2.5,
    "run": 3,
    "report": 4,
    "compare": 5,
    "tasks": 6,
    "config": 7,
    "shards": 8,
    "api": 9, "extend": 9,
    "testing": 9.5,
    "cli": 10,
    "__main__": 11,
}


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _against_the_order(graph: dict[str, set[str]]) -> list[str]:
    wrong = []
    for name, targets in graph.items():
        room = _room(name)
        if not room or name.endswith(".__main__"):  # the front door; `python -m` commands
            continue
        for target in targets:
            other = _room(target)
            if other and other != room and RANKS[other] >= RANKS[room]:
                wrong.append(f"{name} -> {target}")
            if other == "cli" and room != "cli" and room != "__main__":
                wrong.append(f"{name} -> {target} (the library never imports the CLI)")
    return sorted(set(wrong))


def test_every_room_has_a_rank():
    rooms = {_room(n) for n in _modules()} - {""}
    assert rooms <= set(RANKS), rooms - set(RANKS)


@pytest.mark.slow
def test_no_import_against_the_layer_order():
    modules = _modules()
    graph = {name: _imports(name, path, set(modules)) for name, path in modules.items()}
    assert _against_the_order(graph) == []


def test_the_layer_check_can_fail():
    graph = {"harness.core.types": {"harness.run.loop"}, "harness.run.loop": {"harness.cli.job"},
             "harness.datasets.files": {"harness.judges.checks"},
             "harness.metrics.llm": {"harness.judges.checks"}}
    assert _against_the_order(graph) == [
        "harness.core.types -> harness.run.loop",
        "harness.datasets.files -> harness.judges.checks",
        "harness.run.loop -> harness.cli.job",
        "harness.run.loop -> harness.cli.job (the library never imports the CLI)",
    ]


def test_at_most_three_modules_at_the_top():
    top = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert top == ["__main__.py", "api.py", "extend.py"]


@pytest.mark.parametrize(("path", "cls"), [("tasks/evaluate.py", "Evaluate"),
                                           ("tasks/agreement/task.py", "JudgeAgreement")])
def test_a_task_plans_and_scores_the_record_path_does_the_rest(path, cls):
    """A task's ``run`` stays short: the summary, params, metrics, tags and files are built
    by the one record path (``harness.run.record.finish``) every task calls."""
    tree = ast.parse((PACKAGE / path).read_text("utf-8"))
    [run] = [f for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and c.name == cls
             for f in c.body if isinstance(f, ast.FunctionDef) and f.name == "run"]
    assert run.end_lineno - run.lineno + 1 <= 40
    calls = {n.func.id for n in ast.walk(run) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name)}
    assert {"finish", "tracked"} <= calls


def test_no_isinstance_on_another_rooms_component():
    """Capabilities are declared (``Retriever.searches``, ``Task.shardable``), never probed
    by the class of a component built elsewhere."""
    import re

    from harness.core.trust import component_targets

    classes = {t.rsplit(".", 1)[1]: _room(t) for t in component_targets()}
    found = []
    for path in PACKAGE.rglob("*.py"):
        room = _room(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for name in re.findall(r"isinstance\([^,]+, \(?(\w+)", path.read_text("utf-8")):
            if name in classes and classes[name] != room:
                found.append(f"{path.relative_to(ROOT)}: {name}")
    assert found == []


def _imported_by(room: str) -> dict[str, set[str]]:
    """Each module of ``room`` and the harness modules it imports."""
    modules = _modules()
    return {name: _imports(name, path, set(modules)) for name, path in modules.items()
            if _room(name) == room}


def test_the_user_code_boundary_is_in_core():
    """A policy every room applies lives in ``core/``: no room imports a retriever module
    for it (its old path answers through the move map until 0.3.0, no file)."""
    assert (PACKAGE / "core" / "boundary.py").is_file()
    assert not (PACKAGE / "retrievers" / "boundary.py").exists()
    for room in ("run", "tasks", "config", "shards", "metrics"):
        reach = {f"{n} -> {t}" for n, ts in _imported_by(room).items() for t in ts
                 if _room(t) == "retrievers" and t.endswith(".boundary")}
        assert reach == set(), reach


def test_shards_ask_datasets_for_a_capability_not_their_classes():
    """``shards/`` splits a dataset through ``Splittable`` (``harness.core.protocols``): it
    imports nothing of ``datasets/`` and names none of its classes in an ``isinstance``."""
    reach = {f"{n} -> {t}" for n, ts in _imported_by("shards").items() for t in ts
             if _room(t) == "datasets"}
    assert reach == set()
    probes = []
    for path in sorted((PACKAGE / "shards").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "isinstance" and len(node.args) == 2):
                kinds = ast.unparse(node.args[1])
                if "Dataset" in kinds or "Span" in kinds or "jsonl" in kinds.lower():
                    probes.append(f"{path.name}: isinstance(..., {kinds})")
    assert probes == []


def test_the_console_and_compare_get_the_trackers_words_through_its_seam():
    """``report/`` prints the lines a tracker hands it (``TrackedRun.lines``,
    ``SweepTracker.console_lines``) and ranks with ``harness.core.objectives``: it imports
    nothing of ``tracking/``; ``compare/`` only reads MLflow runs (its store client)."""
    reach = {f"{n} -> {t}" for n, ts in _imported_by("report").items() for t in ts
             if _room(t) == "tracking"}
    assert reach == set()
    reach = {f"{n} -> {t}" for n, ts in _imported_by("compare").items() for t in ts
             if _room(t) == "tracking"}
    assert reach == {"harness.compare.store -> harness.tracking.mlflow.store"}


#: Names a run's parts go by where they are handed around.
PART_NAMES = frozenset({"metric", "metrics", "member", "members", "retriever", "inner",
                        "dataset", "judge", "tracker", "task", "part", "parts", "component",
                        "built", "other", "owner", "panel", "sweep", "done"})


def _part_classes() -> set[str]:
    """The classes a part may be: every component ``conf/`` names, their harness bases, the
    wrappers the run puts around parts, and the protocols of ``core``."""
    import importlib
    import inspect

    from harness.core.trust import component_targets

    names = {"Panel", "Timed", "JudgedMetric", "Searcher", "TakesFeedback"}
    for target in component_targets():
        module, _, name = target.rpartition(".")
        cls = getattr(importlib.import_module(module), name)
        names.update(c.__name__ for c in inspect.getmro(cls) if c.__module__.startswith("harness"))
    for module in ("harness.core.protocols", "harness.core.capabilities"):
        found = importlib.import_module(module)
        names.update(n for n, c in vars(found).items() if inspect.isclass(c)
                     and getattr(c, "_is_protocol", False) and c.__module__ == module)
    return names


def _probes(source: str, classes: set[str]) -> list[str]:
    """Where ``source`` probes a run's part: ``getattr``/``hasattr`` on an expression naming
    a part, or ``isinstance`` against one of the part ``classes``."""
    import re

    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and len(node.args) >= 2):
            continue
        subject = ast.unparse(node.args[0])
        if node.func.id in ("getattr", "hasattr"):
            if set(re.findall(r"\w+", subject)) & PART_NAMES:
                found.append(f"{node.lineno}: {node.func.id}({subject}, ...)")
        elif node.func.id == "isinstance":
            kinds = set(re.findall(r"\w+", ast.unparse(node.args[1])))
            if kinds & classes:
                found.append(f"{node.lineno}: isinstance({subject}, {ast.unparse(node.args[1])})")
    return found


#: Modules whose probes read another library's objects, never a run's part: adapting what
#: a foreign library hands over (by duck typing) is their job.
FOREIGN = {
    "harness/retrievers/adapters/langchain.py": "the LangChain retriever a user's factory built",
    "harness/retrievers/adapters/llamaindex.py": "the LlamaIndex retriever a factory built",
    "harness/datasets/ir_datasets.py": "an ir_datasets collection",
    "harness/compare/store.py": "MLflow's client and its runs",
}


def test_parts_are_probed_in_at_most_two_places():
    """A part says what it can do on its protocol, checked once when ``build`` makes it
    (``harness.core.capabilities.conform``, as pluggy checks a plugin against its specs):
    the run never guesses with ``getattr``, ``hasattr`` or ``isinstance``."""
    classes = _part_classes()
    found = [f"{path.relative_to(ROOT)}:{probe}" for path in sorted(PACKAGE.rglob("*.py"))
             if str(path.relative_to(ROOT)) not in FOREIGN
             for probe in _probes(path.read_text("utf-8"), classes)]
    assert len(found) <= 2, found


def test_the_probe_count_finds_probes():
    classes = {"Panel", "Splittable"}
    source = ("def f(parts, metric, x):\n"
              "    a = getattr(metric, 'eps', None)\n"
              "    b = hasattr(parts.dataset, 'origins')\n"
              "    c = isinstance(parts.metric, Panel)\n"
              "    d = isinstance(x, (int, Splittable))\n"
              "    e = getattr(x, 'y', None), isinstance(x, str)\n")
    assert [p.split(":")[0] for p in _probes(source, classes)] == ["2", "3", "4", "5"]


def test_no_module_cites_an_issue_number():
    """Code says what it does; a reader has no tracker: history goes in the CHANGELOG."""
    import re

    cites = re.compile(r"\b[Ii]ssues? #?\d+|\(#\d+\)")
    found = [f"{path.relative_to(ROOT)}:{n}" for path in sorted(PACKAGE.rglob("*.py"))
             for n, line in enumerate(path.read_text("utf-8").splitlines(), 1)
             if cites.search(line)]
    assert found == []
