"""The pure parts of the pytest helpers: which samples are the worst, which numbers a floor
may name, how settings given twice combine, where a config file's paths point."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.core.errors import ConfigError
from harness.testing.asserts import merged
from harness.testing.checks import checked_floors, missed, observed, worst_rows
from harness.testing.paths import anchored


def test_the_worst_rows_are_the_unscored_then_the_lowest_in_input_order() -> None:
    rows = [{"id": "a", "score": 0.5}, {"id": "b", "score": None, "error": "x"},
            {"id": "c", "score": 0.0}, {"id": "d", "score": 0.5}, {"id": "e", "score": 1.0},
            {"id": "f", "score": None, "error": "y"}]
    assert [r["id"] for r in worst_rows(rows, 4)] == ["b", "f", "c", "a"]
    assert [r["id"] for r in worst_rows(rows, 99)] == ["b", "f", "c", "a", "d", "e"]
    assert worst_rows(rows, 0) == []


SUMMARY = {"mean": 0.4, "success_rate": 0.5,
           "retrieval": {"mrr": 0.75, "ndcg_at_5": 0.6, "n_queries": 4},
           "retrieval_cutoffs": {"depth": 5, "dropped": ["ndcg_at_10"]}}


def test_a_floor_names_the_mean_the_success_rate_or_a_retrieval_metric() -> None:
    assert observed(SUMMARY) == {"mean": 0.4, "success_rate": 0.5, "mrr": 0.75,
                                 "ndcg_at_5": 0.6}
    assert missed(SUMMARY, {"mean": 0.4, "mrr": 0.8, "ndcg_at_5": 0.59}) == ["mrr 0.75 < 0.8"]
    assert missed({"mean": None}, {"mean": 0.0}) == ["mean none < 0"]  # nothing scored
    with pytest.raises(ConfigError, match="n_queries"):  # a count, not a floor
        missed(SUMMARY, {"n_queries": 1})


@pytest.mark.parametrize("floors", [{"mean": True}, {"mean": float("nan")}, {"": 0.5},
                                    {"mean": "0.5"}, [("mean", 0.5)], None])
def test_floors_must_be_numbers_by_name(floors: object) -> None:
    with pytest.raises(ConfigError, match=r"^floors"):
        checked_floors(floors)


def test_a_setting_given_again_replaces_the_earlier_one() -> None:
    assert merged(["judge=openai", "judge.model=a", "metric.soft=true"],
                  ["judge=local", "+judge.model=b"]) == [
        "metric.soft=true", "judge=local", "+judge.model=b"]


@pytest.mark.parametrize(("override", "expected"), [
    ("dataset.path=data/x.jsonl", "dataset.path='/cfg/data/x.jsonl'"),
    ("dataset.corpus=docs.jsonl", "dataset.corpus='/cfg/docs.jsonl'"),
    ("judge.cache_path=v.sqlite", "judge.cache_path='/cfg/v.sqlite'"),
    ("dataset.path=/abs/x.jsonl", "dataset.path=/abs/x.jsonl"),
    ("dataset.path=null", "dataset.path=null"),
    ("metric.threshold=0.5", "metric.threshold=0.5"),
    ("dataset.fields.id=path", "dataset.fields.id=path"),  # a column name, not a path
])
def test_a_config_files_relative_paths_are_read_against_its_folder(
    override: str, expected: str
) -> None:
    assert anchored(["dataset=jsonl", override], Path("/cfg")) == ["dataset=jsonl", expected]
