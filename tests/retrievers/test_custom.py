"""Bring your own retriever: the trust setting, ``retriever=custom``, users' YAML, the
README's example swept into MLflow, and the latency every run records."""

from __future__ import annotations

import json
import math
import textwrap
import uuid
from pathlib import Path

import pytest
from conftest import run_cli, run_cli_subprocess
from helpers import mlflow_runs
from helpers.errors import fails
from helpers.paths import ROOT

from harness.core.errors import ConfigError
from harness.core.trust import trust_patterns

README = (ROOT / "README.md").read_text("utf-8")
TINY = ROOT / "tests" / "data" / "beir_tiny"
BEIR = ("dataset=beir", f"dataset.path={TINY}", "metric=id_ranked")


def readme_retriever() -> str:
    """The README's complete retriever (``mypkg/search.py``)."""
    section = README.split("### Your own retriever", 1)[1]
    return section.split("```python", 1)[1].split("```", 1)[0]


def readme_command() -> list[str]:
    """The README's sweep command's arguments (after ``python -m harness``)."""
    section = README.split("### Your own retriever", 1)[1]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    words = block.replace("\\\n", " ").split()
    assert words[:3] == ["python", "-m", "harness"], words
    return [w.strip("'") for w in words[3:]]


def package(where: Path, name: str, code: str) -> str:
    """Write package ``name`` with module ``search`` holding ``code``; return ``name``."""
    (where / name).mkdir()
    (where / name / "__init__.py").write_text("")
    (where / name / "search.py").write_text(textwrap.dedent(code))
    return name


def overlap_ranking(question: str, corpus: Path) -> list[str]:
    """The README retriever's ranking, recomputed from its description: documents by the
    number of the question's (lower-cased) words they share, ties in corpus order."""
    docs = [json.loads(line) for line in corpus.read_text("utf-8").splitlines() if line.strip()]
    words = set(question.lower().split())

    def shared(d: dict[str, str]) -> int:
        content = f"{d.get('title', '')}\n{d['text']}" if d.get("title") else d["text"]
        return len(words & set(content.lower().split()))

    return [d["_id"] for d in sorted(docs, key=lambda d: -shared(d))]


@pytest.mark.slow
def test_readme_retriever_sweeps_into_mlflow_children(tmp_path: Path) -> None:
    package(tmp_path, "mypkg", readme_retriever())
    args = readme_command()
    assert "retriever._target_=mypkg.search.WordOverlap" in args
    assert "retriever.top_k=5,10" in args
    # the README sweeps SciFact; the tiny BEIR folder keeps the test fast
    args = [a for a in args if not a.startswith(("dataset=", "-m"))]
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    result = run_cli_subprocess(
        "-m", *args, *BEIR[:2], f"hydra.sweep.dir={tmp_path / 'sweep'}", "experiment_name=own",
        cwd=tmp_path, env={"MLFLOW_TRACKING_URI": uri}, timeout=240,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    runs = mlflow_runs.runs(uri, "own")
    [parent] = [r for r in runs if r.data.tags.get("harness.sweep") == "parent"]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert {c.data.params["retriever.top_k"] for c in children} == {"5", "10"}
    assert {c.data.tags["mlflow.parentRunId"] for c in children} == {parent.info.run_id}
    for child in children:
        metrics = child.data.metrics
        assert 0 < metrics["retrieval_p50_ms"] <= metrics["retrieval_p95_ms"]
        assert metrics["retrieval_p95_ms"] <= metrics["retrieval_max_ms"]
    # what the user's code ranked is what the rows hold
    queries = {json.loads(x)["_id"]: json.loads(x)["text"]
               for x in (TINY / "queries.jsonl").read_text().splitlines() if x.strip()}
    for job in sorted((tmp_path / "sweep").glob("[0-9]*")):
        top_k = int(json.loads((job / "summary.json").read_text())["config"]["retriever"]["top_k"])
        for line in (job / "samples.jsonl").read_text().splitlines():
            row = json.loads(line)
            expected = overlap_ranking(queries[row["id"]], TINY / "corpus.jsonl")[:top_k]
            assert row["retrieved_context_ids"] == expected


@pytest.mark.slow
def test_untrusted_package_is_refused_before_import(tmp_path: Path) -> None:
    package(tmp_path, "mypkg", """
        from pathlib import Path
        Path("IMPORTED").write_text("the module ran")
        class R: ...
    """)
    result = run_cli_subprocess("retriever=custom", "retriever._target_=mypkg.search.R",
                                *BEIR, "tracking=none", cwd=tmp_path)
    line = fails(result, "retriever._target_: 'mypkg.search.R' is not a harness component",
                 "trusted_targets=[mypkg.*]", "HARNESS_TRUSTED_TARGETS=mypkg.*")
    assert "nothing was imported" in line
    assert not (tmp_path / "IMPORTED").exists()
    # another package's trust does not admit it
    result = run_cli_subprocess("retriever=custom", "retriever._target_=mypkg.search.R",
                                "trusted_targets=[otherpkg.*]", *BEIR, "tracking=none",
                                cwd=tmp_path)
    fails(result, "is not trusted")
    assert not (tmp_path / "IMPORTED").exists()


@pytest.fixture
def own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A uniquely named user package on ``sys.path``: retrievers of every shape."""
    name = f"userpkg_{uuid.uuid4().hex[:8]}"
    package(tmp_path, name, """
        import time
        from harness.retrievers.search import SearchRetriever
        from harness.core.types import Hit

        class Slow(SearchRetriever):
            def __init__(self, top_k=None, delay_ms: float = 0.0, ids=("d1", "d2")):
                super().__init__(top_k)
                self.delay_ms, self.ids = delay_ms, list(ids)
            def search(self, queries):
                time.sleep(self.delay_ms / 1000 * len(queries))
                return [[Hit(i, f"text of {i}") for i in self.ids] for _ in queries]
            def describe(self):
                return {**super().describe(), "index": {"build_seconds": 1.5, "bytes": 2048},
                        "metrics": {"coverage": 0.25}}

        class DuckTyped:
            top_k = 2
            def search(self, queries):
                return [[Hit("d3", "x"), Hit("d1", "y"), Hit("d2", "z")] for _ in queries]

        def make(first: str = "d2"):
            return DuckTyped() if first == "d3" else Slow(ids=[first, "d1"])

        class Nothing:
            def __init__(self, size: int = 1): ...
    """)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path, name


def test_env_trust_factory_and_duck_typed_search(own: tuple[Path, str]) -> None:
    cwd, name = own
    env = {"HARNESS_TRUSTED_TARGETS": f"{name}.search.make"}
    result = run_cli("retriever=custom", f"retriever._target_={name}.search.make",
                     "retriever.first=d3", *BEIR, "tracking=none", cwd=cwd, env=env)
    assert result.returncode == 0, result.stderr
    rows = result.rows()
    assert all(r["retrieved_context_ids"] == ["d3", "d1"] for r in rows)  # top_k 2 kept
    assert result.summary()["retriever"]["kind"] == f"{name}.search.DuckTyped"


@pytest.mark.slow
def test_an_object_that_is_no_retriever_gets_one_line(own: tuple[Path, str]) -> None:
    cwd, name = own
    result = run_cli("retriever=custom", f"retriever._target_={name}.search.Nothing",
                     f"trusted_targets=[{name}.*]", *BEIR, "tracking=none", cwd=cwd)
    fails(result, f"{name}.search.Nothing made a Nothing, which is not a retriever",
          "needs_corpus, prepare, retrieve_batch, describe", "search(queries)")
    result = run_cli("retriever=custom", f"retriever._target_={name}.search.Slow",
                     f"trusted_targets=[{name}.*]", "retriever.delay=3", *BEIR, "tracking=none",
                     cwd=cwd)
    fails(result, "retriever.delay: unknown setting (did you mean 'delay_ms'?)")
    result = run_cli("retriever=custom", f"retriever._target_={name}.search.Gone",
                     f"trusted_targets=[{name}.*]", *BEIR, "tracking=none", cwd=cwd)
    fails(result, f"cannot import '{name}.search.Gone': {name}.search has no 'Gone'")


@pytest.mark.parametrize(
    ("patterns", "fragment"),
    [
        (["*"], "is not a pattern"),
        (["os.*"], "would let a config call os's functions"),
        (["subprocess.run"], "would let a config call subprocess's functions"),
        (["harness.*"], "would let a config call harness's functions"),
        (["hydra.utils.call"], "would let a config call hydra's functions"),
        (["my pkg"], "is not a pattern"),
        ("mypkg", None),
        (["mypkg.*", "other.Thing"], None),
    ],
)
def test_trust_patterns_are_checked(patterns: object, fragment: str | None,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_TRUSTED_TARGETS", raising=False)
    if fragment is None:
        assert trust_patterns(patterns) == tuple([patterns] if isinstance(patterns, str)
                                                 else patterns)
        return
    with pytest.raises(ConfigError, match="^trusted_targets: ") as e:
        trust_patterns(patterns)
    assert fragment in str(e.value)


def test_a_bad_environment_pattern_names_the_variable(tmp_path: Path) -> None:
    result = run_cli(*BEIR, "tracking=none", cwd=tmp_path,
                     env={"HARNESS_TRUSTED_TARGETS": "mypkg.*, builtins.eval"})
    fails(result, "HARNESS_TRUSTED_TARGETS: 'builtins.eval' would let a config call builtins")


def test_users_yaml_in_their_search_path(own: tuple[Path, str]) -> None:
    cwd, name = own
    (cwd / "conf" / "retriever").mkdir(parents=True)
    (cwd / "conf" / "retriever" / "mine.yaml").write_text(
        f"_target_: {name}.search.Slow\nids: [d2, d3]\n")
    result = run_cli("retriever=mine", *BEIR, "tracking=none", cwd=cwd)
    assert result.returncode == 1  # Hydra cannot find it: the hint says why
    assert "error: 'mine' is in ./conf/retriever/mine.yaml" in result.stderr
    assert "hydra.searchpath=[file://conf]" in result.stderr
    result = run_cli("retriever=mine", "hydra.searchpath=[file://conf]",
                     f"trusted_targets=[{name}.*]", *BEIR, "tracking=none", cwd=cwd)
    assert result.returncode == 0, result.stderr
    assert {tuple(r["retrieved_context_ids"]) for r in result.rows()} == {("d2", "d3")}


@pytest.mark.slow
def test_latency_index_facts_and_own_metrics_are_logged(own: tuple[Path, str],
                                                         mlflow_store: str) -> None:
    cwd, name = own
    result = run_cli("retriever=custom", f"retriever._target_={name}.search.Slow",
                     f"trusted_targets=[{name}.*]", "retriever.delay_ms=30", *BEIR,
                     "experiment_name=latency", cwd=cwd, env={"MLFLOW_TRACKING_URI": mlflow_store})
    assert result.returncode == 0, result.stderr
    timing = result.summary()["timing"]
    n = result.summary()["n_samples"]
    assert timing["retrieval_calls"] == n and timing["retrieval_batch_size"] == 1
    # each query sleeps 30 ms: the percentiles measure the call, not the batch
    assert 30 <= timing["retrieval_p50_ms"] <= timing["retrieval_p95_ms"] < 1000
    assert timing["retrieval_max_ms"] >= timing["retrieval_p95_ms"]
    assert timing["retrieval_first_ms"] >= 30
    assert timing["index_build_s"] == 1.5 and timing["index_bytes"] == 2048
    [line] = [x for x in result.stdout.splitlines() if x.strip().startswith("latency ")]
    assert "retrieval p50" in line and "index built in 1.5 s, 2.05 kB" in line
    [run] = mlflow_runs.runs(mlflow_store, "latency")
    metrics = run.data.metrics
    for key in ("retrieval_p50_ms", "retrieval_p95_ms", "retrieval_max_ms", "index_build_s",
                "index_bytes", "prepare_s", "scoring_s"):
        assert metrics[key] == pytest.approx(timing[key]), key
    assert metrics["retriever/coverage"] == 0.25
    assert "judge_s" not in metrics


def test_batched_calls_and_precomputed(tmp_path: Path, own: tuple[Path, str]) -> None:
    cwd, name = own
    result = run_cli("retriever=custom", f"retriever._target_={name}.search.Slow",
                     f"trusted_targets=[{name}.*]", "run.retrieval_batch_size=3",
                     "retriever.delay_ms=10", *BEIR, "tracking=none", cwd=cwd)
    assert result.returncode == 0, result.stderr
    timing, n = result.summary()["timing"], result.summary()["n_samples"]
    assert timing["retrieval_calls"] == math.ceil(n / 3)
    assert n == 4  # calls of 3 and 1 queries, 10 ms each
    # the first call (3 queries) is apart; the percentiles are of the second (1 query)
    assert timing["retrieval_first_ms"] >= 30 and 10 <= timing["retrieval_p50_ms"] < 30
    result = run_cli("metric=id_ranked", "tracking=none", cwd=tmp_path)  # the bundled sample
    assert result.returncode == 0, result.stderr
    timing = result.summary()["timing"]
    assert timing["retrieval"].startswith("not measured")
    assert "retrieval_p50_ms" not in timing and "latency" not in result.stdout


def test_bm25_reports_its_index_and_latency_is_an_objective(tmp_path: Path) -> None:
    result = run_cli("retriever=bm25", *BEIR, "tracking=none", "run.objective=-retrieval_p95_ms",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    timing = result.summary()["timing"]
    assert timing["index_bytes"] > 0 and timing["index_build_s"] >= 0
    assert timing["prepare_s"] >= 0 and timing["retrieval_calls"] == 4


def test_judged_runs_report_the_judges_time(tmp_path: Path) -> None:
    from helpers.judge_server import JudgeServer
    from helpers.paths import sample_labels

    with JudgeServer(sample_labels(), latency_ms=200) as server:
        result = run_cli("metric=contextual_precision", "judge=local",
                         f"judge.base_url={server.base_url}", "judge.model=test-judge",
                         "judge.max_concurrency=1", "judge.pacing=fixed", "tracking=none",
                         "run.limit=2", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        calls = server.stats.ok
    summary = result.summary()
    timing = summary["timing"]
    # one request at a time, each answered after 200 ms: at least calls x 0.2 s of judging
    assert calls >= 2 and timing["judge_s"] >= 0.2 * calls
    assert timing["judge_s"] <= summary["duration_s"] + 0.01
    assert timing["retrieval"].startswith("not measured")  # the sample's own chunks


def test_python_api_takes_a_trusted_retriever(own: tuple[Path, str]) -> None:
    from harness import evaluate

    _, name = own
    samples = [{"user_input": "q1", "reference_context_ids": ["d1"]},
               {"user_input": "q2", "reference_context_ids": ["d2"]}]
    result = evaluate(samples, "id_ranked", overrides=[
        "retriever=custom", f"retriever._target_={name}.search.Slow", "retriever.ids=[d2,d1]",
        f"trusted_targets=[{name}.*]"])
    # d1 at rank 2 (AP 0.5), d2 at rank 1 (AP 1.0)
    assert result.scores == [0.5, 1.0]
    with pytest.raises(ConfigError, match="is not trusted"):
        evaluate(samples, "id_ranked", overrides=[
            "retriever=custom", f"retriever._target_={name}.search.Slow"])


def test_nested_parts_metrics_and_index_facts_are_summed() -> None:
    from harness.core.described import index_facts, retriever_metrics
    from harness.run.timing import latency_line

    hybrid = {"kind": "hybrid", "metrics": {"fused": 2},
              "retrievers": [{"kind": "bm25", "index": {"build_seconds": 1.0, "bytes": 100,
                                                        "seconds": 0.01}},
                             {"kind": "dense", "metrics": {"ann_recall": 0.99, "flag": True},
                              "index": {"seconds": 2.5, "bytes": 50}}]}
    assert retriever_metrics(hybrid) == {"retriever/fused": 2.0,
                                         "retriever/dense/ann_recall": 0.99}
    assert index_facts(hybrid) == (3.5, 150)  # build_seconds first, else seconds
    assert index_facts({"kind": "precomputed"}) == (None, None)
    line = latency_line({"retrieval_p50_ms": 8.2, "retrieval_p95_ms": 10.8,
                         "retrieval_max_ms": 228, "retrieval_first_ms": 2870.0,
                         "retrieval_calls": 300, "retrieval_batch_size": 1,
                         "index_build_s": 192.0, "index_bytes": 7_960_000, "judge_s": 3.25})
    assert line == ("retrieval p50 8.2 ms  p95 10.8 ms  max 228 ms (300 calls of 1 query; the "
                    "first 2.87 s); index built in 192 s, 7.96 MB; judge 3.25 s")
    assert latency_line({"scoring_s": 1.0}) is None


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["retriever=custom", "retriever._target_=subprocess.run"],
         "retriever._target_: 'subprocess.run' is not a harness component and is not trusted; "
         "subprocess is not a package a config may call"),
        (["retriever=langchain", "retriever.factory=os.system"],
         "retriever.factory: 'os.system' is not trusted; os is not a package a config may call"),
        (["retriever=llamaindex", "retriever.factory=mypkg.make"],
         "retriever.factory: 'mypkg.make' is not trusted; to run your own code, trust its "
         "package with trusted_targets=[mypkg.*]"),
    ],
)
def test_the_standard_library_is_never_suggested_for_trust(
    tmp_path: Path, args: list[str], fragment: str
) -> None:
    fails(run_cli(*args, *BEIR, "tracking=none", cwd=tmp_path), fragment, "nothing was imported")


def test_python_api_refuses_shards_in_one_line() -> None:
    from harness import evaluate

    with pytest.raises(ConfigError, match=r"^run.shards: the Python API scores samples in this"):
        evaluate([{"user_input": "q", "reference_context_ids": ["d1"],
                   "retrieved_context_ids": ["d1"]}], "id_ranked", overrides=["run.shards=2"])
