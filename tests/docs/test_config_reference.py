"""docs/reference/config.md is what tests/docs/config_reference.py writes from conf/, and
what that script reads is what Hydra composes: every key of every option, with its default
and the range its constructor declares."""

from __future__ import annotations

import importlib.util
import re
import typing
from types import ModuleType
from typing import Any

import pytest
from helpers.paths import ROOT

SCRIPT = ROOT / "tests" / "docs" / "config_reference.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("config_reference", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


REF = load_script()


def test_page_is_what_conf_generates() -> None:
    written = REF.PAGE.read_text("utf-8")
    assert written == REF.page(), (
        "docs/reference/config.md differs from conf/: run "
        ".venv/bin/python tests/docs/config_reference.py"
    )


@pytest.fixture(scope="module")
def every_option() -> dict[str, dict[str, Any]]:
    """``group -> option -> node`` as Hydra composes each option (unresolved), all in one
    composition: ``+GROUP@_ref.GROUP.OPTION=OPTION`` places every option of every group
    beside the others, with its own defaults list applied."""
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from harness.core.trust import CONFIG_MODULE

    overrides = [f"+{group}@_ref.{group}.{option}={option}" for group, option in cases()]
    with initialize_config_module(config_module=CONFIG_MODULE):
        cfg = compose("config", overrides=overrides)
    data = OmegaConf.to_container(cfg._ref, resolve=False)
    assert isinstance(data, dict)
    return data


def cases() -> list[tuple[str, str]]:
    return [(group, option) for group in REF.GROUPS for option in REF.options(group)]


#: Where Hydra composes something else than the option's file says; strict, so the mark
#: goes when conf/ is fixed.
KNOWN: dict[tuple[str, str], str] = {}


def params() -> list[Any]:
    return [
        pytest.param(group, option, id=f"{group}={option}",
                     marks=[pytest.mark.xfail(strict=True, reason=KNOWN[(group, option)])]
                     if (group, option) in KNOWN else [])
        for group, option in cases()
    ]


@pytest.mark.parametrize(("group", "option"), params())
def test_every_key_and_default_is_what_hydra_composes(
    group: str, option: str, every_option: dict[str, dict[str, Any]]
) -> None:
    data, _ = REF.option_data(group, option)
    hydra = every_option[group][option]
    assert set(data) - set(REF.HYDRA_KEYS) == set(hydra) - set(REF.HYDRA_KEYS), (
        f"{group}={option}: the page's keys vs Hydra's"
    )
    for key, value in hydra.items():
        if key in REF.HYDRA_KEYS:
            continue
        if isinstance(value, dict) and all(
            isinstance(v, dict) and "_target_" in v for v in value.values()
        ) and value:
            assert set(data[key]) == set(value), f"{group}.{key}: the parts"
        else:
            assert data[key] == value, f"{group}={option}: {group}.{key}"


def table_rows(text: str) -> dict[str, tuple[str, str]]:
    """``key -> (default cell, accepts cell)`` of one option's table."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if len(cells) == 4 and cells[0].startswith("`") and cells[0] != "`key`":
            rows[cells[0].strip("`")] = (cells[1], cells[2])
    return rows


def option_section(group: str, option: str) -> str:
    text = REF.PAGE.read_text("utf-8")
    start = text.index(f"\n### {group}={option}\n")
    end = text.find("\n## ", start + 1)
    nxt = text.find("\n### ", start + 1)
    stops = [i for i in (end, nxt) if i != -1]
    return text[start:min(stops) if stops else len(text)]


def test_ranges_are_the_constructors() -> None:
    """A key's *accepts* cell is its constructor's annotation in the validation's words: a
    changed Range in the code changes the page (through the equality above), and the cell
    is the same text as a wrong value's error message."""
    from harness.core.validation import Range, describe
    from harness.metrics.non_llm import StringContextPrecision
    from harness.retrievers.bm25 import BM25

    hints = typing.get_type_hints(StringContextPrecision.__init__, include_extras=True)
    rows = table_rows(option_section("metric", "non_llm"))
    assert rows["metric.threshold"][1] == describe(hints["threshold"])
    assert "in [0, 1]" in rows["metric.threshold"][1]
    assert str(Range(ge=0, le=1)) == "in [0, 1]"
    top_k = typing.get_type_hints(BM25.__init__, include_extras=True)["top_k"]
    assert table_rows(option_section("retriever", "bm25"))["retriever.top_k"][1] == describe(top_k)


def test_run_block_ranges_are_run_settings() -> None:
    from harness.core.settings import RunSettings
    from harness.core.validation import describe

    hints = typing.get_type_hints(RunSettings, include_extras=True)
    text = REF.PAGE.read_text("utf-8")
    block = text.split("\n## run\n", 1)[1].split("\n## ", 1)[0]
    rows = table_rows(block)
    assert set(rows) == {f"run.{k}" for k in hints}
    for key, hint in hints.items():
        assert rows[f"run.{key}"][1] == describe(hint).replace("|", "\\|"), key


def test_every_page_key_has_a_meaning() -> None:
    """No key goes undocumented: a key without a comment in conf/ or a docstring would show
    a dash."""
    text = REF.PAGE.read_text("utf-8")
    blank = [line for line in text.splitlines()
             if line.startswith("| `") and line.rstrip().endswith("| — |")]
    assert not blank, f"keys without a meaning (comment them in conf/): {blank}"
