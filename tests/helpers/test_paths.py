"""Where tests find data: shared_data() and the shared_data lane (tests/conftest.py).

The lane's checks run pytest itself on this project's own shared_data tests (the three
dataset options of tests/config/test_options.py), against data folders made here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, TEST_DATA, shared_data

from helpers.paths import DEFAULT_SHARED_DATA, SHARED_DATA_MISSING

LANE_TEST = "tests/config/test_options.py::test_shared_data_set_is_where_its_option_points"
SETS = {"dbpedia_entity": "dbpedia_entity_subset", "scifact": "beir_scifact",
        "trec_dl19": "trec_dl19_passage_subset"}


def test_shared_data_follows_the_environment(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    monkeypatch.setenv("HARNESS_SHARED_DATA", str(tmp_path))
    assert shared_data() == tmp_path
    assert shared_data("beir_scifact") == tmp_path / "beir_scifact"
    for unset in ("", None):  # empty counts as unset, as the configs' oc.env default
        if unset is None:
            monkeypatch.delenv("HARNESS_SHARED_DATA")
        else:
            monkeypatch.setenv("HARNESS_SHARED_DATA", unset)
        assert shared_data() == DEFAULT_SHARED_DATA == ROOT.parent / "shared" / "data"
        assert shared_data("trec_dl19_passage_subset") == (
            ROOT.parent / "shared" / "data" / "trec_dl19_passage_subset")


def test_shipped_subsets_name_their_source_and_licence() -> None:
    licences = {"beir_tiny": "CC0", "ragas_amnesty_qa": "Apache-2.0",
                "trec_dl19_tiny": "non-commercial research use only"}
    assert sorted(p.name for p in TEST_DATA.iterdir() if p.is_dir()) == sorted(licences)
    for name, licence in licences.items():
        assert licence in (TEST_DATA / name / "SOURCE.md").read_text("utf-8"), name
    size = sum(f.stat().st_size for f in TEST_DATA.rglob("*") if f.is_file())
    assert size < 300_000  # small cuts, not the public sets


def lane(tmp_path: Path, data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``pytest -m shared_data`` on the lane's dataset tests, with ``data`` as the sets."""
    env = {**os.environ, "HARNESS_SHARED_DATA": str(data)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-m", "shared_data",
         *args, LANE_TEST],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )


@pytest.mark.slow
def test_lane_without_its_data_fails_in_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    result = lane(tmp_path, missing)
    assert result.returncode == 1, result.stdout[-3000:]
    lines = result.stdout.splitlines()
    summary = [x for x in lines if x.startswith("error:")]
    assert summary == [f"error: 3 shared_data test(s) did not run: {SHARED_DATA_MISSING}"]
    for option, folder in SETS.items():  # each test's own line names the folder it needs
        assert f"{SHARED_DATA_MISSING} (missing: {missing / folder})" in lines, option
    assert "3 errors" in lines[-1] and "skipped" not in result.stdout
    assert "Traceback" not in result.stdout


@pytest.mark.slow
def test_lane_runs_what_is_there_and_fails_what_is_not(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(TEST_DATA / "beir_tiny", data / "beir_scifact")  # SciFact's layout
    result = lane(tmp_path, data, "-rA")
    passed = [x for x in result.stdout.splitlines() if x.startswith("PASSED")]
    assert passed == [f"PASSED {LANE_TEST}[scifact]"], result.stdout[-3000:]
    assert "error: 2 shared_data test(s) did not run" in result.stdout
    assert f"(missing: {data / 'beir_scifact'})" not in result.stdout
    assert result.returncode == 1


def collected(*args: str) -> list[str]:
    """The test ids pytest selects, with ``args``, in two files holding shared_data tests."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--collect-only",
         *args, "tests/config/test_options.py", "tests/tasks/test_agreement.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    return [x for x in result.stdout.splitlines() if "::" in x]


@pytest.mark.slow
def test_default_lane_selects_no_shared_data_test() -> None:
    lane_ids = collected("-m", "shared_data")
    agreement = "tests/tasks/test_agreement.py::test_judge_that_disagrees_on_a_known_fraction"
    assert lane_ids == [f"{LANE_TEST}[{o}]" for o in SETS] + [f"{agreement}[full]"]
    default = collected()
    assert f"{agreement}[tiny]" in default and f"{LANE_TEST}[scifact]" not in default
    assert not set(lane_ids) & set(default)
