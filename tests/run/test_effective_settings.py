"""Every component's effective settings (its defaults included) in ``summary.json``, the
MLflow params, compare's columns and the report: a custom retriever run with its defaults
can be told from one run with other settings."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from helpers import mlflow_runs
from helpers.paths import ROOT
from helpers.user_code import user_package

from harness.compare.core import _varying
from harness.core.summary import RunSummary
from harness.report.html import facts
from harness.run.record import effective_settings

TINY = ROOT / "tests" / "data" / "beir_tiny"
BEIR = ("dataset=beir", f"dataset.path={TINY}", "metric=id_ranked")
SECRET = "s3cret-default-token"

CODE = f"""
from harness.core.types import Hit
from harness.retrievers.search import SearchRetriever

class Analyzer:
    pass

class Tfidf(SearchRetriever):
    needs_corpus = True

    def __init__(self, top_k=10, ngram_max=1, sublinear_tf=False, stop_words=("a", "the"),
                 analyzer=Analyzer(), scale=float("inf"), api_token={SECRET!r}, *extra,
                 **options):
        super().__init__(top_k)
        self.ngram_max = ngram_max

    def index(self, corpus):
        self.ids = [d.id for d in corpus.documents]

    def search(self, queries):
        return [[Hit(i, "t") for i in self.ids[: self.ngram_max]] for _ in queries]

    @classmethod
    def create(cls, size=3, labels=("x",)):
        return cls()

def make(documents, k=4, mode="mmr", weights=(0.5, 0.5), client=Analyzer()):
    return None
"""


@pytest.fixture
def own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A uniquely named user package with a TF-IDF-like ``SearchRetriever`` on ``sys.path``."""
    name = user_package(tmp_path, monkeypatch, "tfidfpkg", tfidf=CODE)
    return tmp_path, name


def _run(cwd: Path, name: str, uri: str, *more: str) -> Any:
    result = run_cli("retriever=custom", f"retriever._target_={name}.tfidf.Tfidf",
                     f"trusted_targets=[{name}.*]", *BEIR, *more, "experiment_name=settings",
                     cwd=cwd, env={"MLFLOW_TRACKING_URI": uri})
    assert result.returncode == 0, result.stderr[-2000:]
    return result


@pytest.mark.slow
def test_a_custom_retrievers_defaults_are_recorded_everywhere(
    own: tuple[Path, str], tmp_path: Path
) -> None:
    cwd, name = own
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    plain = _run(cwd, name, uri)
    summary = plain.summary()
    # what was given stays as it was; the effective settings sit beside it
    assert summary["config"]["retriever"] == {"_target_": f"{name}.tfidf.Tfidf"}
    retriever = summary["settings"]["retriever"]
    assert retriever == {"_target_": f"{name}.tfidf.Tfidf", "top_k": 10, "ngram_max": 1,
                         "sublinear_tf": False, "stop_words": ["a", "the"],
                         "api_token": "***"}  # no object, no infinity, no secret
    assert summary["settings"]["metric"]["_target_"] == summary["config"]["metric"]["_target_"]

    report = (plain.out_dir / "report.html").read_text("utf-8")
    assert "retriever.top_k=10" in report and "retriever.ngram_max=1" in report
    assert "retriever.sublinear_tf=False" in report
    for text in (report, str(summary)):
        assert SECRET not in text

    wider = _run(cwd, name, uri, "retriever.ngram_max=2")
    assert wider.summary()["settings"]["retriever"]["ngram_max"] == 2
    assert wider.summary()["settings"]["retriever"]["top_k"] == 10
    # the setting did change what was retrieved: two ids per query instead of one
    assert {len(r["retrieved_context_ids"]) for r in plain.rows()} == {1}
    assert {len(r["retrieved_context_ids"]) for r in wider.rows()} == {2}

    runs = mlflow_runs.runs(uri, "settings", order_by=["attributes.start_time ASC"])
    assert len(runs) == 2
    first, second = (r.data.params for r in runs)
    assert first["retriever.top_k"] == "10" and first["retriever.ngram_max"] == "1"
    assert first["retriever.stop_words"] == '["a", "the"]'
    assert first["retriever.api_token"] == "***"
    assert "retriever.analyzer" not in first and "retriever.scale" not in first
    assert set(first) == set(second)
    assert {k: (first[k], second[k]) for k in first if first[k] != second[k]} == {
        "retriever.ngram_max": ("1", "2")}
    assert _varying(runs) == ["retriever.ngram_max"]  # compare's columns
    assert SECRET not in str(first)


def test_defaults_of_factories_nested_parts_and_unloaded_targets(
    own: tuple[Path, str]
) -> None:
    _, name = own
    __import__(f"{name}.tfidf")
    __import__("harness.retrievers.adapters.langchain")  # loaded as a run builds it
    module = f"{name}.tfidf"
    config = {
        "retriever": {  # an adapter: the factory's defaults fill its kwargs
            "_target_": "harness.retrievers.adapters.langchain.LangChain",
            "factory": f"{module}.make", "kwargs": {"k": 8},
        },
        "rerank": {"parts": [{"_target_": f"{module}.Tfidf", "top_k": 3}]},
        "dataset": {"_target_": "nowhere_loaded_pkg.Loader", "path": "x.jsonl"},
        "run": {"limit": None, "retrieval_ks": [5, 10]},
    }
    made = effective_settings({"retriever": {"_target_": f"{module}.Tfidf.create"}})
    assert made["retriever"] == {"_target_": f"{module}.Tfidf.create", "size": 3,
                                 "labels": ["x"]}
    got = effective_settings(config)
    kwargs = got["retriever"]["kwargs"]
    # given wins; documents is the harness's; an object default is left out
    assert kwargs == {"k": 8, "mode": "mmr", "weights": [0.5, 0.5]}
    assert got["retriever"]["max_concurrency"] == 8  # the adapter's own default
    assert got["retriever"]["id_key"] == "id" and got["retriever"]["top_k"] is None
    part = got["rerank"]["parts"][0]
    assert part["top_k"] == 3 and part["ngram_max"] == 1 and part["api_token"] == "***"
    assert got["dataset"] == config["dataset"]  # nothing imported for it
    assert got["run"] == config["run"]
    assert "nowhere_loaded_pkg" not in sys.modules
    assert config["retriever"]["kwargs"] == {"k": 8}  # the config itself is not changed


def test_a_summary_read_back_shows_its_settings_and_an_old_one_its_config() -> None:
    settings = {"retriever": {"_target_": "p.T", "top_k": 10, "ngram_max": 1},
                "run": {"limit": None}}
    summary = RunSummary(metric="id_ranked", config={"retriever": {"_target_": "p.T"},
                                                     "run": {"limit": None}},
                         settings=settings)
    again = RunSummary.from_json(summary.as_json())
    assert again.settings == settings
    assert again.params() == {"retriever.top_k": "10", "retriever.ngram_max": "1",
                              "run.limit": "null"}
    rows = dict(facts(again))
    assert rows["retriever settings"] == "retriever.top_k=10  retriever.ngram_max=1"
    old = {k: v for k, v in summary.as_json().items() if k != "settings"}  # an earlier file
    assert RunSummary.from_json(old).params() == {"run.limit": "null"}
