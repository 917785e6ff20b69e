"""Contracts without policy: importing a protocol loads no trust list and no map of moved
modules; the old paths still answer, the map loaded only when one is asked for."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

POLICY = ("harness.core.trust", "harness.core.moved")


def _loaded(code: str) -> dict[str, bool]:
    """Which of ``POLICY`` a fresh interpreter has loaded after running ``code``."""
    report = f"print(json.dumps({{m: m in sys.modules for m in {POLICY!r}}}))"
    probe = f"{code}\nimport json, sys\n{report}"
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", probe], capture_output=True,
                         text=True, check=True, timeout=60)
    return json.loads(out.stdout.splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("module", ["harness.core.protocols", "harness.core.settings",
                                    "harness.core.validation", "harness.extend", "harness"])
def test_importing_a_contract_loads_no_policy(module: str) -> None:
    assert _loaded(f"import {module}") == {"harness.core.trust": False,
                                           "harness.core.moved": False}


@pytest.mark.slow
def test_an_old_path_loads_the_map_and_answers_with_the_new_module() -> None:
    code = ("import harness.core.protocols, harness.protocols as old\n"
            "assert old is harness.core.protocols")
    assert _loaded(code) == {"harness.core.trust": False, "harness.core.moved": True}


@pytest.mark.slow
def test_a_config_check_loads_the_trust_list() -> None:
    """What the contract no longer loads, the check of a config's components still does."""
    code = ("from harness.core.validation import check_arguments\n"
            "def f(x: int = 1) -> None: ...\n"
            "node = {'_target_': 'harness.datasets.files.JsonlDataset'}\n"
            "check_arguments('metric', f, {'x': node})")
    assert _loaded(code)["harness.core.trust"] is True


def test_a_name_that_never_existed_is_still_not_found() -> None:
    with pytest.raises(ModuleNotFoundError):
        __import__("harness.core.no_such_module")
