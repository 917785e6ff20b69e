"""Issue 31, class 4: a ``harness_config`` file's path settings are read against the file's
folder, whichever folder the tests run from, for every setting that is a path by its declared
type (``dataset.run``, ``dataset.qrels``, ``judge.labels``, ...), not by a name suffix; an
absolute path and ``~`` are left as they are. Class 8: a floor missed by a hair prints the
digits that show it, and NaN passes no floor."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from testing.test_plugin import decoy_checks

from harness.testing import check_config
from harness.testing.asserts import load_config
from harness.testing.checks import FloorError, missed

#: The run ranks the relevant d1 first for q1 and second for q2: id_ranked 1.0 and 0.5.
RUN = "q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\nq2 Q0 d2 1 2.0 r\nq2 Q0 d1 2 1.0 r\n"
QRELS = "q1 0 d1 1\nq2 0 d1 1\n"
#: A decoy in the project root: the same names, d1 second everywhere (0.5 and 0.5).
DECOY_RUN = "q1 Q0 d2 1 2.0 r\nq1 Q0 d1 2 1.0 r\nq2 Q0 d2 1 2.0 r\nq2 Q0 d1 2 1.0 r\n"


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    """A project: ``tests/harness_ci.yaml`` with its own ``tests/data``, and a decoy
    ``data/`` folder in the root holding other files of the same names."""
    for folder, run in ((tmp_path / "tests" / "data", RUN), (tmp_path / "data", DECOY_RUN)):
        folder.mkdir(parents=True)
        (folder / "run.txt").write_text(run, "utf-8")
        (folder / "qrels.txt").write_text(QRELS, "utf-8")
    (tmp_path / "tests" / "harness_ci.yaml").write_text(
        "metric: id_ranked\n"
        "overrides: [dataset=trec, dataset.run=data/run.txt, 'dataset.qrels=data/qrels.txt']\n"
        "floors: {mean: 0.7}\n", "utf-8")
    before = Path.cwd()
    yield tmp_path
    os.chdir(before)


@pytest.mark.parametrize("where", [".", "tests", "tests/data", "elsewhere"])
def test_the_files_beside_the_config_are_read_from_any_working_folder(
        project: Path, where: str) -> None:
    cwd = project / where
    cwd.mkdir(exist_ok=True)
    os.chdir(cwd)
    result = check_config(project / "tests" / "harness_ci.yaml")
    assert result.summary["mean"] == pytest.approx(0.75)  # (1.0 + 0.5) / 2, not the decoy's
    assert result.summary["retrieval"]["mrr"] == pytest.approx(0.75)


def test_the_decoy_would_fail_the_floor(project: Path) -> None:
    """The root's files give 0.5: a run that read them would fail (what the test guards)."""
    os.chdir(project)
    with decoy_checks() as made, pytest.raises(FloorError, match=r"mean 0\.5 < 0\.7"):
        check_config(project / "tests" / "harness_ci.yaml",
                     overrides=[f"dataset.run={project / 'data' / 'run.txt'}"])
    assert [c.line() for c in made] == [
        "FAIL tests/testing/test_config_paths.py::test_the_decoy_would_fail_the_floor "
        "id_ranked n=2 mean=0.5 (floor 0.7)"]


@pytest.mark.parametrize(("override", "expected"), [
    ("dataset.run=data/run.txt", "dataset.run='{folder}/data/run.txt'"),
    ("dataset.qrels=../q.txt", "dataset.qrels='{folder}/../q.txt'"),
    ("dataset.queries=queries.tsv", "dataset.queries='{folder}/queries.tsv'"),
    ("dataset.answers=a.jsonl", "dataset.answers='{folder}/a.jsonl'"),
    ("dataset.run=/abs/run.txt", "dataset.run=/abs/run.txt"),
    ("dataset.run=~/run.txt", "dataset.run='{home}/run.txt'"),
    ("dataset.run=${oc.env:RUN}", "dataset.run=${oc.env:RUN}"),
    ("dataset.limit=3", "dataset.limit=3"),
])
def test_every_path_setting_of_the_chosen_option_is_anchored(
        tmp_path: Path, override: str, expected: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"overrides: [dataset=trec, '{override}']\n", "utf-8")
    got = load_config(config)["overrides"]
    want = expected.replace("{folder}", str(tmp_path)).replace(
        "{home}", os.path.expanduser("~"))
    assert got == ["dataset=trec", want]


@pytest.mark.parametrize(("overrides", "key"), [
    ("[judge=fixture, judge.labels=labels.jsonl]", "judge.labels"),
    ("[prompt=file, prompt.path=prompts/mine.yaml]", "prompt.path"),
    ("[dataset=beir, dataset.path=beir_tiny]", "dataset.path"),
    ("[dataset=csv, dataset.path=q.csv, dataset.corpus=docs.csv]", "dataset.corpus"),
])
def test_path_settings_of_other_groups_are_anchored(tmp_path: Path, overrides: str,
                                                    key: str) -> None:
    config = tmp_path / "sub" / "c.yaml"
    config.parent.mkdir()
    config.write_text(f"overrides: {overrides}\n", "utf-8")
    got = dict(o.split("=", 1) for o in load_config(config)["overrides"])
    assert got[key].strip("'").startswith(f"{config.parent}/")


def test_a_hair_below_the_floor_shows_the_digits_that_differ() -> None:
    assert missed({"mean": 0.9999999999}, {"mean": 1.0}) == ["mean 0.9999999999 < 1"]
    assert missed({"mean": 0.59999}, {"mean": 0.6}) == ["mean 0.59999 < 0.6"]
    assert missed({"mean": 0.5}, {"mean": 0.75}) == ["mean 0.5 < 0.75"]
    assert missed({"mean": 1.0}, {"mean": 1.0}) == []


def test_nan_passes_no_floor() -> None:
    assert missed({"mean": float("nan")}, {"mean": 0.0}) == ["mean nan (not a number) < 0"]
    assert missed({"mean": None}, {"mean": 0.0}) == ["mean none < 0"]
