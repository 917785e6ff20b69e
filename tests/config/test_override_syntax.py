"""Issue 31, class 8: a command line Hydra cannot read, or cannot compose, is one ``error:``
line naming the setting and what to write, exit 1 (Hydra's own code for composition), never
its four-line grammar dump; the fix a line suggests works. ``~`` and non-ASCII letters in a
path are read as the text they are. An unknown metric option is the same line alone and in a
list; variants find the user's own config folders (``hydra.searchpath``)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from conftest import CliResult, run_cli

#: Two samples id_ranked scores 1.0 and 0.5 (the relevant chunk first, then second): 0.75.
ROWS = [
    {"user_input": "q1", "retrieved_context_ids": ["a", "b"], "reference_context_ids": ["a"]},
    {"user_input": "q2", "retrieved_context_ids": ["b", "a"], "reference_context_ids": ["a"]},
]


def one_line(result: CliResult, code: int, *fragments: str) -> str:
    """Exit ``code``, stderr exactly one ``error:`` line holding every fragment, no rows."""
    assert result.returncode == code, (result.returncode, result.stderr)
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert not (result.out_dir / "samples.jsonl").exists()
    return lines[0]


def user_conf(cwd: Path, files: dict[str, str]) -> str:
    """The user's own config files under ``cwd/conf``; the searchpath override."""
    for name, text in files.items():
        path = cwd / "conf" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), "utf-8")
    return f"hydra.searchpath=[file://{cwd / 'conf'}]"


def write_rows(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), "utf-8")
    return path


def scored(result: CliResult, mean: float = 0.75) -> None:
    assert result.returncode == 0, result.stderr
    assert result.summary()["mean"] == pytest.approx(mean)


@pytest.mark.parametrize("split", [
    ("metric=[id_ranked,", "id_based]"),
    ("metric=[id_ranked,", "id_based,", "non_llm]"),
    ("run.retrieval_ks=[1,", "2]"),
])
def test_a_list_the_shell_split_at_a_space_is_one_line(tmp_path: Path, split: tuple[str, ...]
                                                       ) -> None:
    line = one_line(run_cli(*split, "tracking=none", cwd=tmp_path), 1, "the shell split",
                    f"{len(split)} arguments", "".join(split), " ".join(split))
    assert "hydra.cc" not in line


def test_a_split_mapping_never_shows_its_secret(tmp_path: Path) -> None:
    result = run_cli("retriever.kwargs={api_key:", "K9sEcReT77}", "tracking=none", cwd=tmp_path)
    line = one_line(result, 1, "the shell split", "api_key")
    assert "K9sEcReT77" not in result.stderr + result.stdout, line


@pytest.mark.parametrize(("name", "char"), [
    ("a=b.jsonl", "'='"), ("notes#2.jsonl", "'#'"), ("eval(1).jsonl", "'('"),
    ("x[1].jsonl", "'['"), ("a{b}.jsonl", "'{'"), ("it's.jsonl", '"\'"'), ("a!b.jsonl", "'!'"),
])
def test_a_path_hydra_cannot_read_names_the_character_and_the_quoted_form_works(
        tmp_path: Path, name: str, char: str) -> None:
    path = write_rows(tmp_path / name)
    line = one_line(run_cli("dataset=jsonl", f"dataset.path={path}", "metric=id_ranked",
                            "tracking=none", cwd=tmp_path), 1, "dataset.path", char, "quote")
    suggested = line.split("quote the value: ", 1)[1]
    override = suggested[1:-1]  # as the shell passes it: the outer quotes go
    assert override.startswith("dataset.path=") and str(path) in override
    scored(run_cli("dataset=jsonl", override, "metric=id_ranked", "tracking=none",
                   cwd=tmp_path))


def test_a_comma_in_a_value_without_multirun_is_one_line(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "a,b.jsonl")
    line = one_line(run_cli("dataset=jsonl", f"dataset.path={path}", "tracking=none",
                            cwd=tmp_path), 1, "dataset.path", "a comma", "-m")
    override = line.split("for text quote the value (", 1)[1].split(")", 1)[0][1:-1]
    scored(run_cli("dataset=jsonl", override, "metric=id_ranked", "tracking=none",
                   cwd=tmp_path))


@pytest.mark.parametrize("given", ["~/evals/q.jsonl", "~"])
def test_a_path_in_the_home_folder_is_read(tmp_path: Path, given: str) -> None:
    home = tmp_path / "home"
    write_rows(home / "evals" / "q.jsonl")
    where = given if given != "~" else "~/evals/q.jsonl"
    scored(run_cli("dataset=jsonl", f"dataset.path={where}", "metric=id_ranked",
                   "tracking=none", cwd=tmp_path, env={"HOME": str(home)}))


def test_a_home_path_with_a_character_hydra_cannot_read_is_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    line = one_line(run_cli("dataset=jsonl", "dataset.path=~/q#1.jsonl", "tracking=none",
                            cwd=tmp_path, env={"HOME": str(home)}), 1, "'#'")
    assert f"{home}/q#1.jsonl" in line  # the quoted form names the real folder: no ~ there


@pytest.mark.parametrize("name", ["données.jsonl", "評価.jsonl", "naïve set.jsonl"])
def test_a_path_with_letters_outside_ascii_is_read(tmp_path: Path, name: str) -> None:
    path = write_rows(tmp_path / name)
    scored(run_cli("dataset=jsonl", f"dataset.path={path}", "metric=id_ranked",
                   "tracking=none", cwd=tmp_path))


@pytest.mark.parametrize(("bad", "listed"), [
    ("ndcg", "metric=[ndcg,id_ranked]"), ("id_rankd", "metric=[id_based,id_rankd]"),
    ("llm_with_refrence", "metric=[llm_with_refrence,non_llm]"),
])
def test_an_unknown_metric_option_is_the_same_line_alone_and_in_a_list(
        tmp_path: Path, bad: str, listed: str) -> None:
    alone = one_line(run_cli(f"metric={bad}", "tracking=none", cwd=tmp_path), 1,
                     f"'{bad}' is not a metric option", "id_ranked")
    in_list = one_line(run_cli(listed, "tracking=none", cwd=tmp_path), 1)
    assert in_list == alone


def test_a_setting_no_listed_variant_has_is_exit_1_as_for_one_variant(tmp_path: Path) -> None:
    one_line(run_cli("metric=id_ranked", "metric.nope=1", "tracking=none", cwd=tmp_path), 1,
             "nope")
    one_line(run_cli("metric=[id_ranked,id_based]", "metric.nope=1", "tracking=none",
                     cwd=tmp_path), 1, "nope")


@pytest.mark.slow
def test_variants_read_the_users_config_folders(tmp_path: Path) -> None:
    dataset = write_rows(tmp_path / "q.jsonl")
    search = user_conf(tmp_path, {
        "dataset/mine.yaml": f"""
            defaults: [jsonl]
            path: {dataset}
            """,
        "metric/ranked_mine.yaml": "defaults: [id_ranked]\n",
    })
    result = run_cli(search, "dataset=mine", "metric=[ranked_mine,id_based]", "tracking=none",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    variants = result.summary()["variants"]
    assert variants["ranked_mine"]["mean"] == pytest.approx(0.75)
    # each variant as a run of that variant alone
    alone = run_cli(search, "dataset=mine", "metric=id_based", "tracking=none", cwd=tmp_path)
    assert variants["id_based"]["mean"] == pytest.approx(alone.summary()["mean"])
    typo = one_line(run_cli(search, "dataset=mine", "metric=[ranked_mien,id_based]",
                            "tracking=none", cwd=tmp_path), 1, "'ranked_mien'",
                    "did you mean 'ranked_mine'")
    assert "searchpath" not in typo


@pytest.mark.parametrize(("key", "value"), [("ndcg_at_10", "0.1"), ("mean", "0.2")])
def test_a_key_under_a_null_setting_says_how_to_set_it_whole(tmp_path: Path, key: str,
                                                              value: str) -> None:
    line = one_line(run_cli(f"run.fail_under.{key}={value}", "tracking=none", cwd=tmp_path), 1,
                    "'run.fail_under' is null", key)
    suggested = line.split("set it whole: ", 1)[1][1:-1]
    assert suggested == f"run.fail_under={{{key}: {value}}}"
    result = run_cli("metric=id_ranked", "run.retrieval_beyond_depth=true", suggested,
                     "tracking=none", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.summary()["gate"]["passed"] is True
