"""Run names: made of the options and settings that change the scores, never of the trust
list, the gate, bookkeeping, Hydra's settings, URLs, paths or secrets; whole parts only,
within MLflow's limit; the full overrides in the ``hydra.overrides`` tag."""

from __future__ import annotations

import textwrap
import uuid
from pathlib import Path

import pytest
from conftest import run_cli
from helpers import mlflow_runs
from helpers.paths import ROOT

from harness.tracking.names import NAME_CHARS, SEP, short_name

TINY = ROOT / "tests" / "data" / "beir_tiny"
#: What MLflow's SQL store keeps of a run's name (``runs.name``: String(250)).
MLFLOW_NAME_CHARS = 250


def test_a_custom_retriever_with_its_trust_list_and_gate() -> None:
    overrides = ["dataset=scifact", "retriever=custom", "retriever._target_=myrag.tfidf.Tfidf",
                 "trusted_targets=[myrag.*]", "retriever.sublinear_tf=true",
                 "retriever.ngram_max=2", "run.fail_under=0.5",
                 "'run.fail_under={ndcg_at_10: 0.6, mean: 0.5}'"]
    # the class's short name stands for retriever=custom; no trust list, no gate
    assert short_name(overrides, "id_ranked") == (
        "id_ranked·scifact·Tfidf·sublinear_tf=true·ngram_max=2")


@pytest.mark.parametrize("override", [
    "trusted_targets=[myrag.*]", "run.fail_under=0.7", "run.progress=false", "run.quiet=true",
    "run.report=false", "run.shards=4", "run.shard_backend=ray", "run.batch_size=64",
    "run.objective=ndcg_at_10", "run.row_text_chars=0", "run.max_unscored_frac=0.1",
    "run.retrieval_batch_size=8", "hydra.sweep.dir=/tmp/sweeps/a",
    "hydra.job.chdir=true", "hydra/launcher=joblib", "experiment_name=team",
    "tracking=none", "experiment=scifact_study", "+local=lab", "+extra.thing=1",
])
def test_bookkeeping_never_names_a_run(override: str) -> None:
    assert short_name([override, "retriever.top_k=5"], "id_based") == "id_based·top_k=5"


def test_run_settings_that_change_the_scores_name_it() -> None:
    assert short_name(["run.limit=50", "run.seed=3", "run.retrieval_min_grade=2"],
                      "id_based") == "id_based·limit=50·seed=3·retrieval_min_grade=2"


@pytest.mark.parametrize("override", [
    "judge.base_url=http://user:pa55word@127.0.0.1:8000/v1",
    "judge.base_url=http://127.0.0.1:8000/v1",
    "dataset.path=https://user:tok3n@example.org/data.jsonl",
    "retriever.kwargs.url=http://10.0.0.1:6333",
    "retriever.index=http://host/index?token=abcdef123456",
    "tracking.uri=postgresql://u:p4ss@db/mlflow",
    "+retriever.api_key=sk-abcdef123456",
    "judge.api_key_env=MY_KEY",
    "retriever.client_secret=abcdef123456",
    "retriever.password=hunter2hunter2",
    "retriever.auth_token=abcdef123456",
    "retriever.host=search.internal",
    "retriever.endpoint=search.internal:9200",
    "retriever.dsn=${oc.env:DSN}",
])
def test_urls_credentials_and_secrets_never_show(override: str) -> None:
    value = override.partition("=")[2]
    name = short_name([override, "metric=id_based", "retriever.top_k=3"], "id_based")
    assert name == "id_based·top_k=3"
    assert value not in name


@pytest.mark.parametrize(("path", "shown"), [
    ("/home/me/data/english.json", "path=english.json"),
    ("data/beir/scifact/", "path=scifact"),
    (r"C:\Users\me\q.jsonl", "path=q.jsonl"),
    ("english.json", "path=english.json"),
])
def test_a_path_shows_as_its_files_name(path: str, shown: str) -> None:
    assert short_name(["dataset=jsonl", f"dataset.path={path}"], "id_based") == (
        f"id_based·jsonl·{shown}")


def test_a_long_sweep_keeps_whole_parts_within_mlflows_limit() -> None:
    overrides = [f"retriever.setting_number_{i}={i * 7}" for i in range(40)]
    swept = [o.partition("=")[0] for o in overrides]
    every = [f"setting_number_{i}={i * 7}" for i in range(40)]
    for metric, keys in (("id_ranked", None), (None, swept)):
        name = short_name(overrides, metric, keys)
        assert len(name) <= NAME_CHARS <= MLFLOW_NAME_CHARS
        *kept, more = name.split(SEP)
        if metric:
            assert kept.pop(0) == metric
        assert kept == every[: len(kept)]  # whole parts, in order, none cut
        assert more == f"(+{len(every) - len(kept)} more)"
        # as many as fit: one more part would not have
        assert len(SEP.join([*name.split(SEP)[:-1], every[len(kept)], more])) > NAME_CHARS


def test_a_sweeps_job_is_named_by_what_is_swept_and_changes_scores() -> None:
    overrides = ["metric=id_ranked", "retriever.top_k=5", "run.batch_size=64",
                 "trusted_targets=[a.*]", "retriever._target_=pkg.mod.Bm25Plus"]
    swept = ["metric", "retriever.top_k", "run.batch_size", "retriever._target_"]
    assert short_name(overrides, "id_ranked", swept) == "id_ranked·top_k=5·Bm25Plus"
    # nothing swept that changes scores: the metric alone
    assert short_name(["run.batch_size=64"], "id_ranked", ["run.batch_size"]) == "id_ranked"


def test_values_and_options() -> None:
    assert short_name(["retriever=bm25", "retriever.k1=1.23456789", "judge.model=gpt-4o-mini",
                       "prompt=strict"], "llm_with_reference") == (
        "llm_with_reference·bm25·k1=1.235·model=gpt-4o-mini·strict")
    assert short_name([], "id_based") == "id_based"
    assert short_name(["run.quiet=true"]) == "default"


@pytest.mark.slow
def test_a_logged_run_is_named_by_the_rule_and_keeps_every_override_in_a_tag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = f"ragpkg_{uuid.uuid4().hex[:8]}"
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / name / "tfidf.py").write_text(textwrap.dedent("""
        from harness.core.types import Hit
        from harness.retrievers.search import SearchRetriever

        class Tfidf(SearchRetriever):
            def __init__(self, top_k=10, ngram_max=1):
                super().__init__(top_k)
            def search(self, queries):
                return [[Hit("d1", "t")] for _ in queries]
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    credentials = "user:pa55word"
    args = ("dataset=beir", f"dataset.path={TINY}", "metric=id_ranked", "retriever=custom",
            f"retriever._target_={name}.tfidf.Tfidf", f"trusted_targets=[{name}.*]",
            "retriever.ngram_max=2", "run.fail_under=0.0", "run.quiet=true",
            f"judge.base_url=http://{credentials}@127.0.0.1:9/v1", "experiment_name=names")
    result = run_cli(*args, cwd=tmp_path, env={"MLFLOW_TRACKING_URI": uri})
    assert result.returncode == 0, result.stderr[-2000:]
    [run] = mlflow_runs.runs(uri, "names")
    assert run.info.run_name == "id_ranked·beir·path=beir_tiny·Tfidf·ngram_max=2"
    full = run.data.tags["hydra.overrides"]
    for given in (f"trusted_targets=[{name}.*]", "run.fail_under=0.0",
                  f"retriever._target_={name}.tfidf.Tfidf", "retriever.ngram_max=2"):
        assert given in full
    assert "pa55word" not in full and "pa55word" not in run.info.run_name
