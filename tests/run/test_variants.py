"""Several metric variants in one run (issue 26): ``metric=[a,b,c]`` retrieves once and
scores every listed variant, each exactly as a run of it alone would."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from helpers import mlflow_runs
from helpers.errors import fails
from helpers.paths import ROOT
from helpers.user_code import user_package

TINY = ROOT / "tests" / "data" / "beir_tiny"
BEIR = ("dataset=beir", f"dataset.path={TINY}", f"dataset.answers={TINY / 'answers.jsonl'}")
SAMPLE = ("tracking=none", "run.report=false")

COUNTING = """
    from pathlib import Path

    from harness.core.types import Hit
    from harness.retrievers.search import SearchRetriever


    class Counting(SearchRetriever):
        '''Ranks documents by the words they share with the question; appends the number of
        questions of each search() call to a log file.'''

        needs_corpus = True

        def __init__(self, log: str, top_k: int = 4) -> None:
            super().__init__(top_k=top_k)
            self.log = log

        def index(self, corpus):
            self.docs = [(d, set(d.content.lower().split())) for d in corpus.documents]

        def search(self, queries):
            with open(self.log, "a") as f:
                f.write(f"{len(queries)}\\n")
            out = []
            for q in queries:
                words = set(q.lower().split())
                ranked = sorted(self.docs, key=lambda doc: -len(words & doc[1]))
                out.append([Hit(d.id, d.content) for d, _ in ranked])
            return out
"""


@pytest.fixture
def counting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A package of a counting retriever on the path; its import name."""
    return user_package(tmp_path, monkeypatch, "count", search=COUNTING)


def calls(log: Path) -> list[int]:
    return [int(x) for x in log.read_text().split()] if log.exists() else []


def variant_scores(rows: list[dict[str, Any]], name: str) -> list[Any]:
    return [r["variants"][name]["score"] for r in rows]


@pytest.mark.slow
def test_three_variants_retrieve_once_and_log_each(tmp_path: Path, counting: str) -> None:
    listed = ["id_ranked", "non_llm", "llm_with_reference"]
    own = ("retriever=custom", f"retriever._target_={counting}.search.Counting",
           f"trusted_targets=[{counting}.*]", "judge=fixture", *BEIR)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    log = tmp_path / "multi.log"
    multi = run_cli(f"metric=[{','.join(listed)}]", f"retriever.log={log}", *own,
                    "tracking=mlflow", "tracking.background=false",  # logged in this process
                    "experiment_name=variants", cwd=tmp_path,
                    env={"MLFLOW_TRACKING_URI": uri})
    assert multi.returncode == 0, multi.stderr
    singles = {}
    for name in listed:
        single_log = tmp_path / f"{name}.log"
        single = run_cli(f"metric={name}", f"retriever.log={single_log}", *own, "tracking=none",
                         cwd=tmp_path)
        assert single.returncode == 0, single.stderr
        singles[name] = single
        # the three-variant run searched exactly as a run of one variant does: once a query
        assert calls(log) == calls(single_log) == [1] * single.summary()["n_samples"]

    summary, rows = multi.summary(), multi.rows()
    assert list(summary["variants"]) == listed
    assert summary["metric"] == f"[{','.join(listed)}]"
    head = singles["id_ranked"]
    assert summary["mean"] == head.summary()["mean"]  # the headline is the first variant
    assert [r["score"] for r in rows] == [r["score"] for r in head.rows()]
    for name, single in singles.items():
        alone, numbers = single.summary(), summary["variants"][name]
        assert variant_scores(rows, name) == [r["score"] for r in single.rows()]
        assert [r["variants"][name]["verdicts"] for r in rows] == [
            r["verdicts"] for r in single.rows()]
        assert numbers["mean"] == alone["mean"]
        assert (numbers["n_scored"], numbers["n_unscored"]) == (alone["n_scored"],
                                                                alone["n_unscored"])
        assert numbers["unscored_reasons"] == alone["unscored_reasons"]
    # only q1 and q2 have reference answers: the judged variant leaves the others unscored
    assert summary["variants"]["llm_with_reference"]["n_scored"] == 2
    assert summary["variants"]["id_ranked"]["n_unscored"] == 0

    [run] = mlflow_runs.runs(uri, "variants")
    logged = run.data.metrics
    for name, single in singles.items():
        assert logged[f"{name}/mean"] == single.summary()["mean"]
        assert logged[f"{name}/n_scored"] == single.summary()["n_scored"]
        assert logged[f"{name}/n_unscored"] == single.summary()["n_unscored"]
    assert logged["mean"] == head.summary()["mean"]
    assert run.data.tags["choice.metric"] == "[id_ranked,non_llm,llm_with_reference]"
    assert run.data.params["metric.non_llm.threshold"] == "0.5"
    assert run.data.params["metric.id_ranked.aggregate"] == "average_precision"


@pytest.mark.slow
def test_two_judged_variants_each_use_their_own_prompt(tmp_path: Path) -> None:
    listed = ("llm_with_reference", "llm_without_reference")
    multi = run_cli(f"metric=[{','.join(listed)}]", "judge=fixture", *SAMPLE, cwd=tmp_path)
    assert multi.returncode == 0, multi.stderr
    rows, variants = multi.rows(), multi.summary()["variants"]
    prompts = []
    for name in listed:
        single = run_cli(f"metric={name}", "judge=fixture", *SAMPLE, cwd=tmp_path)
        assert single.returncode == 0, single.stderr
        assert variant_scores(rows, name) == [r["score"] for r in single.rows()]
        assert [r["variants"][name]["verdicts"] for r in rows] == [
            r["verdicts"] for r in single.rows()]
        assert variants[name]["prompt"] == single.summary()["prompt"]
        assert variants[name]["mean"] == single.summary()["mean"]
        prompts.append((single.out_dir / "prompt.yaml").read_text())
    assert variants[listed[0]]["prompt"]["version"] != variants[listed[1]]["prompt"]["version"]
    # each variant's prompt file, neither written over the other
    assert (multi.out_dir / "prompt.yaml").read_text() == prompts[0]
    assert (multi.out_dir / "variants" / listed[1] / "prompt.yaml").read_text() == prompts[1]


@pytest.mark.slow
def test_a_metric_setting_goes_to_the_variants_that_have_it(tmp_path: Path) -> None:
    multi = run_cli("metric=[id_ranked,non_llm]", "metric.threshold=0.9", "metric.eps=0.25",
                    *SAMPLE, cwd=tmp_path)
    assert multi.returncode == 0, multi.stderr
    non_llm = run_cli("metric=non_llm", "metric.threshold=0.9", "metric.eps=0.25", *SAMPLE,
                      cwd=tmp_path)
    id_ranked = run_cli("metric=id_ranked", "metric.eps=0.25", *SAMPLE, cwd=tmp_path)
    rows = multi.rows()
    assert variant_scores(rows, "non_llm") == [r["score"] for r in non_llm.rows()]
    assert variant_scores(rows, "id_ranked") == [r["score"] for r in id_ranked.rows()]
    config = multi.summary()["config"]["metric"]
    assert config["non_llm"]["threshold"] == 0.9
    assert "threshold" not in config["id_ranked"]
    assert config["id_ranked"]["eps"] == config["non_llm"]["eps"] == 0.25
    # the setting changed the scores: the default threshold scores differently
    default = run_cli("metric=non_llm", "metric.eps=0.25", *SAMPLE, cwd=tmp_path)
    assert [r["score"] for r in default.rows()] != variant_scores(rows, "non_llm")


@pytest.mark.parametrize(("args", "fragments"), [
    (("metric=[id_ranked,non_llm]", "metric.treshold=0.9"),
     ("metric.treshold: no listed variant has the setting 'treshold'",
      "(did you mean 'threshold'?)")),
    (("metric=[id_ranked,non_lm]",),
     ("'non_lm' is not a metric option (did you mean 'non_llm'?)",
      "the options: contextual_precision, id_based, id_ranked")),
])
def test_a_list_that_does_not_compose_is_one_line_and_exit_1(
        tmp_path: Path, args: tuple[str, ...], fragments: tuple[str, ...]) -> None:
    """As the same typo alone (``metric=non_lm``, ``metric.treshold=0.9``): exit 1."""
    fails(run_cli(*args, *SAMPLE, cwd=tmp_path), *fragments, code=1)


@pytest.mark.parametrize(("args", "fragments"), [
    (("metric=[id_ranked,non_llm,id_ranked]",), ("'id_ranked' is listed twice",)),
    (("metric=[id_ranked,non_llm]", "run.objective=non_lm/mean"),
     ("run.objective: 'non_lm/mean' is not a metric a run logs (did you mean "
      "'non_llm/mean'?)",)),
    (("metric=[id_ranked,non_llm]", "run.fail_under={id_based/mean: 0.5}"),
     ("run.fail_under: 'id_based/mean' is not a metric a run logs",)),
    (("metric=[id_ranked,llm_with_reference]", "judge=fixture", "run.shards=2",
      "dataset=jsonl", f"dataset.path={ROOT / 'harness' / 'data' / 'sample_rag.jsonl'}"),
     ("run.shards=2: metric llm_with_reference asks a judge",)),
])
def test_a_bad_list_is_one_line_and_exit_2(tmp_path: Path, args: tuple[str, ...],
                                           fragments: tuple[str, ...]) -> None:
    fails(run_cli(*args, *SAMPLE, cwd=tmp_path), *fragments)


def test_the_member_that_needs_a_missing_field_is_named(tmp_path: Path) -> None:
    fails(run_cli("metric=[id_ranked,llm_without_reference]", "judge=fixture", "retriever=bm25",
                  *BEIR, *SAMPLE, cwd=tmp_path),
          "metric llm_without_reference needs the field 'response'")


@pytest.mark.slow
def test_a_gate_and_the_objective_on_a_listed_variant(tmp_path: Path) -> None:
    gated = run_cli("metric=[id_ranked,non_llm]", "run.fail_under={non_llm/mean: 0.99}",
                    *SAMPLE, cwd=tmp_path)
    assert gated.returncode == 4, gated.stderr
    mean = gated.summary()["variants"]["non_llm"]["mean"]
    assert f"non_llm/mean {mean:.4f} is below its floor 0.99" in gated.stderr
    assert gated.summary()["gate"]["passed"] is False
    passed = run_cli("metric=[id_ranked,non_llm]", "run.fail_under={non_llm/mean: 0.5}",
                     *SAMPLE, cwd=tmp_path)
    assert passed.returncode == 0, passed.stderr


@pytest.mark.slow
def test_a_sweep_over_two_lists_runs_two_jobs_of_several(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    result = run_cli("-m", "metric=[id_ranked,non_llm],[id_based,id_ranked]",
                     "run.objective=id_ranked/mean", f"hydra.sweep.dir={sweep}", *SAMPLE,
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    jobs = {}
    for path in sorted(sweep.glob("*/summary.json")):
        data = json.loads(path.read_text())
        jobs[data["metric"]] = data
    assert set(jobs) == {"[id_ranked,non_llm]", "[id_based,id_ranked]"}
    assert list(jobs["[id_ranked,non_llm]"]["variants"]) == ["id_ranked", "non_llm"]
    assert list(jobs["[id_based,id_ranked]"]["variants"]) == ["id_based", "id_ranked"]
    # the same variant on the same data scores the same in both jobs
    assert (jobs["[id_ranked,non_llm]"]["variants"]["id_ranked"]["mean"]
            == jobs["[id_based,id_ranked]"]["variants"]["id_ranked"]["mean"]
            == jobs["[id_ranked,non_llm]"]["mean"])
    assert jobs["[id_based,id_ranked]"]["mean"] == (
        jobs["[id_based,id_ranked]"]["variants"]["id_based"]["mean"])
    mean = jobs["[id_ranked,non_llm]"]["mean"]
    assert f"(id_ranked/mean {mean:.4f})" in result.stdout


def test_the_console_has_a_line_per_variant(tmp_path: Path) -> None:
    result = run_cli("metric=[non_llm,id_based]", "tracking=none", "run.report=true",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    variants = result.summary()["variants"]
    for name in ("non_llm", "id_based"):
        v = variants[name]
        line = (f"{name}: mean {v['mean']:.4f}, {v['n_scored']} scored, "
                f"{v['n_unscored']} unscored")
        assert [x.split()[0] for x in result.stdout.splitlines() if x.endswith(line)] == [
            "variant"]
    html = (result.out_dir / "report.html").read_text()
    assert html.count('<h3 id="variant-') == 2
    assert '"variants":[["non_llm",' in html


def test_the_guide_command_runs_as_written(tmp_path: Path) -> None:
    """The command of docs/guide/metrics.md's "Several variants in one run", word for word."""
    import shlex

    text = (ROOT / "docs" / "guide" / "metrics.md").read_text("utf-8")
    section = text.split("## Several variants in one run", 1)[1].split("\n## ", 1)[0]
    command = section.split("```bash\n", 1)[1].split("```", 1)[0].strip()
    words = shlex.split(command)
    assert words[:3] == ["python", "-m", "harness"], words
    result = run_cli(*words[3:], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = result.summary()
    assert list(summary["variants"]) == ["id_ranked", "non_llm", "llm_with_reference"]
    assert all(v["n_scored"] == summary["n_samples"] for v in summary["variants"].values())


@pytest.mark.slow  # starts shard workers
def test_a_sharded_run_of_several_variants_is_the_unsharded_one(tmp_path: Path) -> None:
    data = ("dataset=jsonl", f"dataset.path={ROOT / 'harness' / 'data' / 'sample_rag.jsonl'}",
            "metric=[non_llm,id_ranked,id_based]", *SAMPLE)
    whole = run_cli(*data, cwd=tmp_path)
    split = run_cli(*data, "run.shards=3", cwd=tmp_path)
    assert whole.returncode == split.returncode == 0, split.stderr
    assert split.summary()["variants"] == whole.summary()["variants"]
    assert split.summary()["mean"] == whole.summary()["mean"]
    assert split.rows() == whole.rows()
    assert len({json.dumps(v) for v in whole.summary()["variants"].values()}) == 3


def test_printing_the_config_of_a_list_says_each_variant_has_its_own(tmp_path: Path) -> None:
    result = run_cli("--cfg", "job", "metric=[id_ranked,non_llm]", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stderr.strip().splitlines() == [
        "note: --cfg prints Hydra's merge of the listed metric files; a run composes each "
        "variant on its own (--cfg job metric=NAME prints one)"]
    single = run_cli("--cfg", "job", "metric=id_ranked", cwd=tmp_path)
    assert single.returncode == 0 and single.stderr == ""
