"""The Python API's overrides are checked as the command line's are: an override Hydra's
grammar cannot read gives the CLI's own line (``ComposeError``), never Hydra's parse error
listing the overrides the API adds itself."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli

import harness
from harness.config.hints import ComposeError
from harness.testing import assert_context_precision

SAMPLES = [{"user_input": "q", "retrieved_context_ids": ["a", "b"],
            "reference_context_ids": ["b"]}]
UNREADABLE = ["metric.threshold", "run.limit==3", "run.retrieval_ks=1,3", "=3",
              "run.limit=[1,2", "~metric"]


@pytest.mark.parametrize("override", UNREADABLE)
def test_the_api_says_what_the_command_line_says(tmp_path: Path, override: str) -> None:
    cli = run_cli("metric=id_based", "tracking=none", override, cwd=tmp_path)
    [line] = [x for x in cli.stderr.splitlines() if x.startswith("error: ")]
    with pytest.raises(ComposeError) as caught:
        harness.evaluate(SAMPLES, "id_based", overrides=[override])
    assert f"error: {caught.value}" == line
    assert "run.quiet=true" not in str(caught.value)  # none of the API's own overrides


@pytest.mark.parametrize("override", UNREADABLE[:3])
def test_the_pytest_helpers_say_it_too(override: str) -> None:
    with pytest.raises(ComposeError):
        assert_context_precision(SAMPLES, "id_based", floors={"mean": 0.0},
                                 overrides=[override])


def test_readable_overrides_still_apply() -> None:
    got = harness.evaluate(SAMPLES, "id_ranked", overrides=["run.retrieval_ks=[1,2]"])
    assert got.summary["mean"] == 0.5  # b relevant at rank 2: precision@2 = 1/2
    assert "recall_at_1" in got.summary["retrieval"] and "recall_at_2" in got.summary["retrieval"]
