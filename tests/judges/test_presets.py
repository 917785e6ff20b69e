"""The judge presets (``judge=llama_cpp``, ``llama_cpp_python``, ``ollama``, ``vllm``,
``local``): composed as the CLI and the API compose them, built, documented in the README,
and run end to end against the test judge."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from conftest import ROOT, sample_labels, sample_rows
from helpers.judge_server import JudgeServer

from harness import evaluate
from harness.config.build import instantiate
from harness.config.compose import composed
from harness.judges.checks import check_prices
from harness.judges.openai_chat import OpenAIJudge
from harness.metrics.ranking import average_precision

#: What each preset resolves to (the settings a user of that server relies on).
PRESETS: dict[str, dict[str, Any]] = {
    "llama_cpp": {"base_url": "http://127.0.0.1:8080/v1", "output_mode": "json_schema",
                  "max_concurrency": 16, "timeout": 300.0},
    "llama_cpp_python": {"base_url": "http://127.0.0.1:8000/v1",
                         "output_mode": "json_object_schema",
                         "max_concurrency": 1, "timeout": 300.0},
    "ollama": {"base_url": "http://127.0.0.1:11434/v1", "output_mode": "json_schema",
               "max_concurrency": 8, "timeout": 300.0},
    "vllm": {"base_url": "http://127.0.0.1:8000/v1", "output_mode": "json_schema",
             "max_concurrency": 64, "timeout": 300.0},
}
#: The response formats each real server refuses (llama-cpp-python: json_schema, HTTP 500).
REFUSED = {"llama_cpp_python": ["json_schema"]}
ROWS = sample_rows()


def built(*overrides: str) -> tuple[Any, OpenAIJudge]:
    cfg = composed(("metric=llm_with_reference", "tracking=none", *overrides))
    judge = instantiate(cfg, "judge")
    assert isinstance(judge, OpenAIJudge)
    return cfg, judge


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_preset_composes_to_its_settings(preset: str) -> None:
    cfg, judge = built(f"judge={preset}")
    t = judge.transport
    got = {"base_url": t.base_url, "output_mode": t.output_mode,
           "max_concurrency": t.max_concurrency, "timeout": t.timeout}
    assert got == PRESETS[preset]
    assert judge.model == "auto" and t.api_key_env is None and t.pacing == "adaptive"
    assert cfg.judge.prices is None and t.prices == {}  # OpenAI's table is not inherited
    assert t.temperature == 0.0 and judge.cache_enabled  # the rest is openai's
    overridden = built(f"judge={preset}", "judge.max_concurrency=3", "judge.model=m")[1]
    assert overridden.transport.max_concurrency == 3 and overridden.model == "m"


def test_local_preset_keeps_no_openai_prices() -> None:
    cfg, judge = built("judge=local", "judge.model=m")
    assert cfg.judge.prices is None and judge.transport.prices == {}
    assert check_prices(None) == {}
    openai = built("judge=openai")[1]
    assert "gpt-4o-mini" in openai.transport.prices  # the default keeps its table


def readme_presets() -> dict[str, dict[str, str]]:
    text = (ROOT / "docs" / "guide" / "judges.md").read_text("utf-8")
    after = text.split("| preset |", 1)[1].splitlines()[2:]
    lines = list(itertools.takewhile(lambda x: x.startswith("|"), after))
    header = ["preset", "server", "base_url", "model", "output_mode", "max_concurrency",
              "timeout"]
    rows = {}
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        row = dict(zip(header, cells, strict=True))
        rows[row["preset"].split("`")[1]] = row
    return rows


def test_readme_preset_table_matches_conf() -> None:
    rows = readme_presets()
    options = {p.stem for p in (ROOT / "conf" / "judge").glob("*.yaml")}
    # the table is of endpoints; the offline judge has a section of its own
    assert set(rows) == options - {"fixture"}
    assert "## Offline: judge=fixture" in (ROOT / "docs" / "guide" / "judges.md").read_text()
    for preset, row in rows.items():
        _, judge = built(f"judge={preset}")
        t = judge.transport
        assert row["base_url"] == f"`{'null' if t.base_url is None else t.base_url}`", preset
        assert row["output_mode"] == f"`{t.output_mode}`", preset
        assert row["max_concurrency"] == f"`{t.max_concurrency}`", preset
        assert row["timeout"] == f"`{t.timeout}`", preset
        assert row["model"].startswith(f"`{judge.model}`"), preset


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_preset_runs_end_to_end(preset: str) -> None:
    """Only the base URL is changed: the model is found (``auto``), the format the server
    takes is sent from the start, every sample is scored, and nothing is priced."""
    expected = [[int(i in r["reference_context_ids"]) for i in r["retrieved_context_ids"]]
                for r in ROWS]
    with JudgeServer(sample_labels(), model="served-model",
                     reject_formats=REFUSED.get(preset, [])) as server:
        result = evaluate(ROWS, "llm_with_reference",
                          overrides=[f"judge={preset}", f"judge.base_url={server.base_url}"])
        chats = [r for r in server.requests if r["body"] and "messages" in r["body"]]
    n_chunks = sum(len(v) for v in expected)
    assert [r["verdicts"] for r in result.rows] == expected
    assert result.scores == [average_precision(v, 1e-10) for v in expected]
    assert len(chats) == n_chunks  # no retries, no step-down
    assert {c["body"]["model"] for c in chats} == {"served-model"}
    formats = {c["body"]["response_format"]["type"] for c in chats}
    mode = PRESETS[preset]["output_mode"]
    assert formats == {"json_object" if mode == "json_object_schema" else mode}
    judge = result.summary["judge"]
    assert judge["calls"] == judge["requests"] == n_chunks
    assert judge["output_mode_fallbacks"] == 0
    assert judge["served_model"] == "served-model"
    assert not judge["cost_usd"]
