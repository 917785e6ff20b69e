"""docs/guide/pytest.md's example test file, run as the guide says: by pytest, with the
plugin the installed package registers, in a project of its own."""

from __future__ import annotations

import re
from importlib.metadata import entry_points

import pytest
from helpers.paths import ROOT

pytest_plugins = ["pytester"]

GUIDE = ROOT / "docs" / "guide" / "pytest.md"


def example() -> str:
    """The guide's first Python block (the test file it says runs as it is)."""
    [first, *_] = re.findall(r"```python\n(.*?)```", GUIDE.read_text("utf-8"), re.S)
    assert first.startswith("# test_retrieval.py")
    return first


def plugin_args() -> tuple[str, ...]:
    installed = any(ep.value == "harness.testing.plugin" for ep in entry_points(group="pytest11"))
    return ("-p", "no:cacheprovider") if installed else (
        "-p", "harness.testing.plugin", "-p", "no:cacheprovider")


def test_the_installed_package_registers_the_plugin() -> None:
    assert [ep.value for ep in entry_points(group="pytest11") if ep.name == "harness"] == [
        "harness.testing.plugin"]


@pytest.mark.slow
def test_the_guides_example_passes_and_fails_on_its_floors(pytester: pytest.Pytester) -> None:
    code = example()
    pytester.makepyfile(test_retrieval=code)
    pytester.chdir()
    result = pytester.runpytest_subprocess(*plugin_args())
    result.assert_outcomes(passed=1)
    # the same file with a floor above what the ids give (id_ranked: AP 1.0 and 0.5, mean 0.75)
    pytester.makepyfile(test_retrieval=code.replace('"mean": 0.7', '"mean": 0.8'))
    result = pytester.runpytest_subprocess(*plugin_args())
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert re.search(r"mean 0\.75\d* < 0\.8", out), out  # the floor missed, by value
    assert "mrr" not in re.findall(r"(\w+) [\d.]+ < [\d.]+", out)  # mrr 0.75 met its 0.7
