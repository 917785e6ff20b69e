"""Issue 24, classes 1 and 12: trusting a package trusts the code it defines, never what it
imports. A trusted path is judged by what it *resolves to* (each module reached by its real
``__name__``, the object found by the module that defines it), before anything is called, on
every path from a config to a callable (``_target_`` at any depth, ``retriever.factory``);
a trusted package that exits or raises ``KeyboardInterrupt`` at import or call is one line.
"""

from __future__ import annotations

import signal
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TEST_DATA, run_cli
from helpers.errors import fails

from harness.core.errors import ConfigError
from harness.core.resolve import user_code
from harness.core.trust import check_target, trusted_callable, trusting

BEIR = ("dataset=beir", f"dataset.path={TEST_DATA / 'beir_tiny'}", "metric=id_ranked",
        "tracking=none")

#: The user's package: its own code, and names it imported from elsewhere.
INIT = """
    import functools
    import logging
    import os
    import shutil
    import subprocess
    from subprocess import run as runner

    from . import search
    from .search import make

    log = logging.getLogger("x")
    quiet = functools.partial(os.system, "true")
    items = []
"""
SEARCH = """
    import os
    from pathlib import Path

    from harness.core.types import Hit

    class Words:
        def __init__(self, first="d1"):
            self.first = first

        @classmethod
        def build(cls):
            return cls()

        def search(self, queries):
            return [[Hit(self.first, "text")] for _ in queries]

    def make(first="d1"):
        return Words(first)

    def exits():
        raise SystemExit(0)

    def interrupts():
        raise KeyboardInterrupt

    def touches(path):
        Path(path).write_text("called")
        return Words()

    borrowed = os.getcwd

    class ExitsInSearch(Words):
        def search(self, queries):
            raise SystemExit(0)

    class InterruptsInSearch(Words):
        def search(self, queries):
            raise KeyboardInterrupt
"""


def write_package(where: Path, name: str, files: dict[str, str]) -> str:
    (where / name).mkdir()
    for file, code in files.items():
        (where / name / file).write_text(textwrap.dedent(code), "utf-8")
    return name


@pytest.fixture
def pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A uniquely named user package on ``sys.path`` (removed from ``sys.modules`` after)."""
    name = write_package(tmp_path, f"trustpkg_{uuid.uuid4().hex[:8]}",
                         {"__init__.py": INIT, "search.py": SEARCH})
    (tmp_path / name / "sub").mkdir()
    (tmp_path / name / "sub" / "__init__.py").write_text(
        "from ..search import make as other\n\n\ndef own():\n    return 1\n", "utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]


def resolve(path: str, *patterns: str) -> object:
    with trusting(patterns):
        return trusted_callable("retriever.factory", path)


@pytest.mark.parametrize(
    ("attribute", "real"),
    [
        ("os.system", "the module os"),  # the example
        ("subprocess.run", "the module subprocess"),
        ("shutil.rmtree", "the module shutil"),
        ("runner", "subprocess.run"),  # imported under another name
        ("quiet", "functools.partial"),  # a partial of os.system: functools's, not the package's
        ("log.info", "logging.Logger.info"),  # a method of an object from elsewhere
        ("search.os.system", "the module os"),  # through a submodule
        ("search.borrowed", "posix.getcwd"),
        ("items.append", "a builtin_function_or_method defined nowhere"),
    ],
)
def test_what_a_trusted_package_imported_is_refused(pkg: str, attribute: str,
                                                    real: str) -> None:
    with pytest.raises(ConfigError) as e:
        resolve(f"{pkg}.{attribute}", f"{pkg}.*")
    line = str(e.value)
    assert line.startswith(f"retriever.factory: '{pkg}.{attribute}' resolves to {real}")
    assert f"outside the trusted {pkg}.*" in line and "nothing was called" in line
    assert "\n" not in line


def test_an_exact_pattern_does_not_trust_an_import_either(pkg: str) -> None:
    # trusting the exact path names the path, not what the path turns out to be
    with pytest.raises(ConfigError, match="resolves to the module os"):
        resolve(f"{pkg}.os.system", f"{pkg}.os.system")
    assert resolve(f"{pkg}.search.make", f"{pkg}.search.make").__name__ == "make"


def test_a_sub_package_pattern_trusts_that_sub_package_only(pkg: str) -> None:
    assert resolve(f"{pkg}.sub.own", f"{pkg}.sub.*")() == 1
    # sub re-exports a function of the parent package: outside what was trusted
    with pytest.raises(ConfigError, match=rf"resolves to {pkg}\.search\.make, outside the "
                                          rf"trusted {pkg}\.sub\.\*"):
        resolve(f"{pkg}.sub.other", f"{pkg}.sub.*")


def test_the_package_own_code_still_resolves(pkg: str) -> None:
    make = resolve(f"{pkg}.make", f"{pkg}.*")  # re-exported from its own submodule
    assert make.__module__ == f"{pkg}.search" and make("d7").first == "d7"
    build = resolve(f"{pkg}.search.Words.build", f"{pkg}.*")  # a classmethod
    assert build().first == "d1"
    with trusting((f"{pkg}.*",)):
        assert check_target("retriever", f"{pkg}.search.Words").__name__ == "Words"


def test_a_dunder_path_is_refused_before_import(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "IMPORTED"
    name = write_package(tmp_path, f"dunderpkg_{uuid.uuid4().hex[:8]}",
                         {"__init__.py": f"open({str(marker)!r}, 'w').close()\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    for path in (f"{name}.__builtins__", f"{name}.search.__globals__", f"{name}.__loader__"):
        with pytest.raises(ConfigError, match="names a dunder attribute"):
            resolve(path, f"{name}.*")
    assert not marker.exists()


def test_an_exit_or_interrupt_at_import_is_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exits = write_package(tmp_path, f"exitpkg_{uuid.uuid4().hex[:8]}",
                          {"__init__.py": "import sys\nsys.exit(0)\n"})
    stops = write_package(tmp_path, f"stoppkg_{uuid.uuid4().hex[:8]}",
                          {"__init__.py": "raise KeyboardInterrupt\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError) as e:
        resolve(f"{exits}.make", f"{exits}.*")
    assert str(e.value) == (f"retriever.factory: importing {exits} called sys.exit(0); your "
                            "code must raise an exception instead of exiting the harness")
    # a command's handlers are installed (a real Ctrl-C raises Interrupted): a plain
    # KeyboardInterrupt is the package's own
    previous = signal.signal(signal.SIGINT, lambda *_: None)
    try:
        with pytest.raises(ConfigError, match=f"importing {stops} raised KeyboardInterrupt"):
            resolve(f"{stops}.make", f"{stops}.*")
    finally:
        signal.signal(signal.SIGINT, previous)


def test_user_code_at_call_time(pkg: str) -> None:
    previous = signal.signal(signal.SIGINT, lambda *_: None)
    try:
        for name, fragment in (("exits", "called sys.exit(0)"),
                               ("interrupts", "raised KeyboardInterrupt")):
            function = resolve(f"{pkg}.search.{name}", f"{pkg}.*")
            with pytest.raises(ConfigError) as e, user_code("retriever.factory",
                                                            f"calling {pkg}.search.{name}"):
                function()
            assert str(e.value).startswith(
                f"retriever.factory: calling {pkg}.search.{name} {fragment}")
    finally:
        signal.signal(signal.SIGINT, previous)
    # without the command's handlers a KeyboardInterrupt may be a real Ctrl-C: it goes on
    # (set here: an earlier test in the same worker may have left another handler)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt), user_code("x", "calling y"):
            raise KeyboardInterrupt
    finally:
        signal.signal(signal.SIGINT, previous)


# -- through the command line: every path from a config to a callable ------------------------


def test_a_target_that_resolves_outside_is_refused_by_the_command(
        pkg: str, tmp_path: Path) -> None:
    for attribute, real in (("os.system", "the module os"), ("runner", "subprocess.run")):
        result = run_cli("retriever=custom", f"retriever._target_={pkg}.{attribute}",
                         f"trusted_targets=[{pkg}.*]", *BEIR, cwd=tmp_path)
        fails(result, f"retriever._target_: '{pkg}.{attribute}' resolves to {real}")


def test_a_nested_target_is_judged_before_anything_is_called(pkg: str, tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    # a setting of the user's own retriever that is itself a component: checked (and
    # resolved) before the retriever is built
    result = run_cli("retriever=custom", f"retriever._target_={pkg}.search.make",
                     f"+retriever.first={{_target_: {pkg}.runner, args: [touch, {marker}]}}",
                     f"trusted_targets=[{pkg}.*]", *BEIR, cwd=tmp_path)
    fails(result, f"'{pkg}.runner' resolves to subprocess.run")
    assert not marker.exists()
    # the package's own function in the same place is called, as trusted
    result = run_cli("retriever=custom", f"retriever._target_={pkg}.search.make",
                     f"+retriever.first={{_target_: {pkg}.search.touches, path: {marker}}}",
                     f"trusted_targets=[{pkg}.*]", *BEIR, cwd=tmp_path)
    assert marker.read_text() == "called"


def test_a_target_that_exits_is_one_line_not_a_silent_zero(pkg: str, tmp_path: Path) -> None:
    result = run_cli("retriever=custom", f"retriever._target_={pkg}.search.exits",
                     f"trusted_targets=[{pkg}.*]", *BEIR, cwd=tmp_path)
    fails(result, f"retriever._target_: building {pkg}.search.exits called sys.exit(0)")


def test_a_package_that_exits_at_import_is_one_line_not_exit_0(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the example: a silent exit 0 with no result
    name = write_package(tmp_path, f"quitpkg_{uuid.uuid4().hex[:8]}",
                         {"__init__.py": "import sys\nsys.exit(0)\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    result = run_cli("retriever=custom", f"retriever._target_={name}.search.Words",
                     f"trusted_targets=[{name}.*]", *BEIR, cwd=tmp_path)
    fails(result, f"retriever._target_: importing {name} called sys.exit(0)")
    stops = write_package(tmp_path, f"intpkg_{uuid.uuid4().hex[:8]}",
                          {"__init__.py": "raise KeyboardInterrupt\n"})
    result = run_cli("retriever=custom", f"retriever._target_={stops}.make",
                     f"trusted_targets=[{stops}.*]", *BEIR, cwd=tmp_path)
    fails(result, f"importing {stops} raised KeyboardInterrupt")


def test_a_component_that_exits_or_interrupts_during_the_run(pkg: str, tmp_path: Path) -> None:
    # the run's boundary around users' code (harness.run) or the command's (cli.job) says
    # it: one line naming the package and what it did, exit 2, never a silent 0 or a Ctrl-C
    for cls, what in (("ExitsInSearch", "sys.exit(0)"),
                      ("InterruptsInSearch", "KeyboardInterrupt")):
        result = run_cli("retriever=custom", f"retriever._target_={pkg}.search.{cls}",
                         f"trusted_targets=[{pkg}.*]", *BEIR, cwd=tmp_path)
        fails(result, f"{pkg}.search", what)
        assert "interrupted" not in result.stderr
