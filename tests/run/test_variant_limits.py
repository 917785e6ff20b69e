"""The limits of a run (nothing scored, ``run.max_unscored_frac``) hold for every variant of
``metric=[a,b]``, as in a run of each alone: the same exit code and the same variant named
whatever the order of the list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

SAMPLE = ("tracking=none", "run.report=false", "run.max_unscored_frac=0.5")


def _data(tmp_path: Path, with_texts: int) -> str:
    """Four samples with ids (``id_ranked`` scores each); the first ``with_texts`` have the
    reference texts ``non_llm`` needs."""
    path = tmp_path / f"texts{with_texts}.jsonl"
    rows = [{"id": f"q{i}", "user_input": f"question {i}",
             "retrieved_contexts": ["alpha text", "beta text"],
             "retrieved_context_ids": ["a", "b"], "reference_context_ids": ["b"],
             **({"reference_contexts": ["beta text"]} if i < with_texts else {})}
            for i in range(4)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path.as_posix()


@pytest.mark.slow
@pytest.mark.parametrize(("with_texts", "fragment"), [
    (0, "none of the 4 samples was scored by non_llm: missing field reference_contexts"),
    (1, "metric non_llm: 3 of 4 samples (75%) are unscored, more than "
        "run.max_unscored_frac=0.5"),
])
def test_a_variant_that_breaks_a_limit_fails_the_run_in_any_place(
    tmp_path: Path, with_texts: int, fragment: str
) -> None:
    data = ("dataset=jsonl", f"dataset.path={_data(tmp_path, with_texts)}")
    alone = run_cli("metric=non_llm", *data, *SAMPLE, cwd=tmp_path)
    assert alone.returncode == 3, alone.stderr
    for listed in ("[id_ranked,non_llm]", "[non_llm,id_ranked]"):
        result = run_cli(f"metric={listed}", *data, *SAMPLE, cwd=tmp_path)
        assert result.returncode == 3, (listed, result.stderr)
        [line] = result.stderr.strip().splitlines()
        assert line.startswith("error: ") and fragment in line, line
        # the outputs are kept, with each variant's own counts
        variants = result.summary()["variants"]
        assert variants["non_llm"]["n_scored"] == with_texts
        assert variants["id_ranked"]["n_scored"] == 4


@pytest.mark.slow
def test_variants_within_the_limits_pass(tmp_path: Path) -> None:
    data = ("dataset=jsonl", f"dataset.path={_data(tmp_path, 3)}")  # non_llm: 1 of 4 unscored
    for listed in ("[id_ranked,non_llm]", "[non_llm,id_ranked]"):
        result = run_cli(f"metric={listed}", *data, *SAMPLE, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert result.summary()["variants"]["id_ranked"]["mean"] == 0.5  # [a, b] against b


@pytest.mark.parametrize(("listed", "named"), [("[id_ranked,non_llm]", "id_ranked"),
                                               ("[non_llm,id_ranked]", "non_llm")])
def test_the_first_variant_listed_that_breaks_a_limit_is_named(
    tmp_path: Path, listed: str, named: str
) -> None:
    """Both score nothing (no reference at all): the line names the first listed."""
    path = tmp_path / "bare.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "user_input": "q",
                                        "retrieved_contexts": ["x"],
                                        "retrieved_context_ids": ["a"]}) + "\n"
                            for i in range(3)), "utf-8")
    result = run_cli(f"metric={listed}", "dataset=jsonl", f"dataset.path={path.as_posix()}",
                     *SAMPLE, cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert f"none of the 3 samples was scored by {named}: missing field" in line, line
