"""The pytest plugin, run by pytester: real pytest sessions of example test files in a
temporary project, passing and failing on the floors they set, printing the worst samples,
and rerunning from the verdict cache with no judge request."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from conftest import ROOT
from helpers.judge_server import JudgeServer

from harness.testing import checks
from harness.testing.checks import Check

pytest_plugins = ["pytester"]


@contextmanager
def decoy_checks() -> Iterator[list[Check]]:
    """Checks a test of the helpers makes to see them fail (decoys), kept apart from this
    suite's own as an inner pytest session's are, and handed to the test: this suite's
    summary lists none of them (a user's failing check is printed: the pytester tests)."""
    checks.begin_session()
    made: list[Check] = []
    try:
        yield made
    finally:
        made.extend(checks.take())
        checks.end_session()



def _plugin_args() -> tuple[str, ...]:
    """``-p harness.testing.plugin`` unless the installed package's ``pytest11`` entry point
    loads it already (loading it under two names is an error)."""
    from importlib.metadata import entry_points

    installed = any(ep.value == "harness.testing.plugin" for ep in entry_points(group="pytest11"))
    return ("-p", "no:cacheprovider") if installed else (
        "-p", "harness.testing.plugin", "-p", "no:cacheprovider")


PLUGIN = _plugin_args()

#: Three questions, each with ranked chunks and the ids of the relevant ones.
SAMPLES: list[dict[str, Any]] = [
    {"id": "q1", "user_input": "capital of France", "reference": "Paris",
     "retrieved_contexts": ["Paris is the capital of France.", "Lyon is a city.",
                            "France borders Spain."],
     "retrieved_context_ids": ["d1", "d2", "d3"], "reference_context_ids": ["d1"]},
    {"id": "q2", "user_input": "boiling point of water", "reference": "100 C",
     "retrieved_contexts": ["Ice melts at 0 C.", "Water boils at 100 C at sea level.",
                            "Steam is hot."],
     "retrieved_context_ids": ["d4", "d5", "d6"], "reference_context_ids": ["d5", "d6"]},
    {"id": "q3", "user_input": "largest planet", "reference": "Jupiter",
     "retrieved_contexts": ["Mars is red.", "Venus is hot.", "Jupiter is the largest planet."],
     "retrieved_context_ids": ["d7", "d8", "d9"], "reference_context_ids": ["d9"]},
]
#: The test judge's labels: chunk text -> relevant (1) or not (0).
LABELS = {"Paris is the capital of France.": 1, "Lyon is a city.": 0, "France borders Spain.": 0,
          "Ice melts at 0 C.": 0, "Water boils at 100 C at sea level.": 1, "Steam is hot.": 1,
          "Mars is red.": 0, "Venus is hot.": 0, "Jupiter is the largest planet.": 1}


def average_precision(verdicts: list[int], eps: float = 0.0) -> float:
    """ragas/deepeval context precision: sum_k P@k * v_k / (sum v_k + eps)."""
    hits, total = 0, 0.0
    for k, v in enumerate(verdicts, 1):
        hits += v
        total += hits / k * v
    return total / (sum(verdicts) + eps)


def _id_verdicts(s: dict[str, Any]) -> list[int]:
    return [int(i in s["reference_context_ids"]) for i in s["retrieved_context_ids"]]


ID_SCORES = {s["id"]: average_precision(_id_verdicts(s)) for s in SAMPLES}
ID_MEAN = sum(ID_SCORES.values()) / len(ID_SCORES)


def _test_file(body: str, **values: Any) -> str:
    head = f"import pytest\nfrom harness.testing import assert_context_precision\n" \
           f"SAMPLES = {SAMPLES!r}\n"
    return head + (body.format(**{k: repr(v) for k, v in values.items()}) if values else body)


def _judge(server: JudgeServer) -> list[str]:
    server.labels.update(LABELS)
    return ["judge=local", f"judge.base_url={server.base_url}", "judge.model=test-judge"]


def test_floors_pass_and_fail_around_the_mean(pytester: pytest.Pytester) -> None:
    """A floor just under the mean passes, one just over fails (id_ranked: no judge)."""
    assert 0.5 < ID_MEAN < 0.9  # (1 + 0.5833 + 0.3333) / 3: the floors below straddle it
    pytester.makepyfile(test_quality=_test_file(
        "def test_ok():\n"
        "    r = assert_context_precision(SAMPLES, 'id_ranked', floors={{'mean': {low}}})\n"
        "    assert r.mean == {mean}\n"
        "def test_too_high():\n"
        "    assert_context_precision(SAMPLES, 'id_ranked', floors={{'mean': {high}}})\n",
        low=ID_MEAN - 0.01, high=ID_MEAN + 0.01, mean=ID_MEAN))
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert f"mean {ID_MEAN:.4g} < {ID_MEAN + 0.01:.4g}" in out
    result.stdout.fnmatch_lines(["*harness context precision: 1 passed, 1 failed*",
                                 "PASS test_quality.py::test_ok id_ranked n=3 mean=*",
                                 "FAIL test_quality.py::test_too_high id_ranked n=3 mean=*"])


def test_a_failure_prints_the_worst_samples_and_a_rerun_asks_the_judge_nothing(
    pytester: pytest.Pytester, judge_server: JudgeServer
) -> None:
    overrides = _judge(judge_server)
    llm_scores = {s["id"]: average_precision([LABELS[c] for c in s["retrieved_contexts"]],
                                             eps=1e-10) for s in SAMPLES}
    mean = sum(llm_scores.values()) / 3
    pytester.makepyfile(test_llm=_test_file(
        "def test_llm():\n"
        "    assert_context_precision(SAMPLES, 'llm_with_reference', floors={{'mean': {floor}}},\n"
        "                             overrides={overrides}, worst=2)\n",
        floor=mean + 0.05, overrides=overrides))
    first = pytester.runpytest(*PLUGIN)
    first.assert_outcomes(failed=1)
    requests = judge_server.stats.requests
    assert requests == 9  # one pointwise verdict per chunk
    rows = [json.loads(line[1:]) for line in first.stdout.lines
            if line.startswith("E ") and line[1:].lstrip().startswith('{"id"')]
    worst = sorted(llm_scores, key=llm_scores.__getitem__)[:2]
    assert [r["id"] for r in rows] == worst
    for row in rows:
        sample = next(s for s in SAMPLES if s["id"] == row["id"])
        assert row["score"] == pytest.approx(llm_scores[row["id"]])
        assert row["verdicts"] == [LABELS[c] for c in sample["retrieved_contexts"]]
        assert [c["verdict"] for c in row["chunks"]] == row["verdicts"]
        assert all(c["reason"] for c in row["chunks"])
    assert "the 2 worst samples (rows of samples.jsonl):" in first.stdout.str()
    assert "verdict 0 [d7] 'Mars is red.'" in first.stdout.str()

    second = pytester.runpytest(*PLUGIN)
    second.assert_outcomes(failed=1)
    assert judge_server.stats.requests == requests  # every verdict from the cache
    second.stdout.fnmatch_lines(["FAIL *test_llm* judge requests=0 cache hits=9"])


CONFIG = """\
metric: id_ranked
overrides:
  - dataset=jsonl
  - dataset.path=data/samples.jsonl
  - run.retrieval_ks=[3]
floors: {{mean: {mean}, ndcg_at_3: {ndcg}}}
"""


def _ndcg3(s: dict[str, Any]) -> float:
    import math

    rel = _id_verdicts(s)
    dcg = sum(r / math.log2(k + 1) for k, r in enumerate(rel, 1))
    ideal = sorted([1] * len(s["reference_context_ids"]), reverse=True)[:3]
    return dcg / sum(r / math.log2(k + 1) for k, r in enumerate(ideal, 1))


def test_a_config_file_runs_as_a_marked_test(pytester: pytest.Pytester) -> None:
    """The file's dataset path is read against its folder; floors from the file, the
    marker's floors win; the body gets the run."""
    ndcg = sum(_ndcg3(s) for s in SAMPLES) / 3
    data = pytester.mkdir("checks") / "data"
    data.mkdir()
    (data / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in SAMPLES))
    (data.parent / "harness_ci.yaml").write_text(
        CONFIG.format(mean=ID_MEAN - 0.01, ndcg=ndcg - 0.01))
    pytester.makepyfile(test_conf=(
        "import pytest\n"
        "@pytest.mark.harness_config('checks/harness_ci.yaml')\n"
        "def test_ci(harness_result):\n"
        "    assert [r['id'] for r in harness_result.rows] == ['q1', 'q2', 'q3']\n"
        f"    assert harness_result.mean == {ID_MEAN!r}\n"
        "@pytest.mark.harness_config('checks/harness_ci.yaml',\n"
        f"                             floors={{'ndcg_at_3': {ndcg + 0.01}}})\n"
        "def test_stricter():\n"
        "    raise AssertionError('the body of a test below its floor never runs')\n"))
    result = pytester.runpytest(*PLUGIN, "--strict-markers")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert f"ndcg_at_3 {ndcg:.4g} < {ndcg + 0.01:.4g}" in out
    assert "the body of a test below its floor never runs" not in out


@pytest.mark.parametrize(("floors", "overrides", "message"), [
    # cut-offs above the depth dropped (by default they are scored, as trec_eval does)
    ("{'mean': 0.5, 'ndcg_at_10': 0.5}", ["run.retrieval_beyond_depth=false"],
     "floors['ndcg_at_10']: not computed: its cut-off is above the longest retrieved list "
     "(3 chunks)"),
    ("{'maen': 0.5}", [], "floors['maen']: this run has no such number (did you mean 'mean'?)"),
    ("{'mean': 'high'}", [], "floors['mean']: expected a number, got 'high'"),
    ("{}", [], "floors: expected a mapping of metric name"),
])
def test_a_bad_floor_fails_in_one_line(
    pytester: pytest.Pytester, floors: str, overrides: list[str], message: str
) -> None:
    pytester.makepyfile(test_bad=_test_file(
        "def test_bad(harness_eval):\n"
        f"    harness_eval.assert_context_precision(SAMPLES, 'id_ranked', floors={floors},\n"
        f"                                          overrides={overrides!r})\n"))
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(failed=1)
    errors = [line for line in result.stdout.lines if line.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {message}"), errors
    assert "Traceback" not in result.stdout.str()
    assert "During handling" not in result.stdout.str()


def test_session_overrides_reach_the_fixture(
    pytester: pytest.Pytester, judge_server: JudgeServer
) -> None:
    """``--harness-override`` (after the ini's) sets the judge for every check."""
    _judge(judge_server)
    pytester.makeini("[pytest]\nharness_overrides =\n    judge=local\n    judge.model=test-judge\n")
    pytester.makepyfile(test_s=_test_file(
        "def test_s(harness_eval):\n"
        "    r = harness_eval.assert_context_precision(SAMPLES, 'llm_with_reference',\n"
        "                                              floors={'mean': 0.0})\n"
        "    assert r.summary['judge']['requests'] == 9\n"))
    url = f"--harness-override=judge.base_url={judge_server.base_url}"
    result = pytester.runpytest(*PLUGIN, url)
    result.assert_outcomes(passed=1)
    assert judge_server.stats.requests == 9


def test_a_session_that_checks_nothing_is_unchanged(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    assert 1\n")
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(passed=1)
    # only the header's list of installed plugins names it (pytest prints every plugin there)
    said = [line for line in result.stdout.lines if not line.startswith("plugins:")]
    assert not [line for line in said if "harness" in line], said


def test_importing_the_plugin_loads_nothing_heavy() -> None:
    """Every pytest session of anyone who installs the package imports the plugin."""
    code = ("import sys, harness.testing.plugin\n"
            "heavy = ('hydra', 'omegaconf', 'mlflow', 'openai', 'numpy', 'yaml', 'harness.api',\n"
            "         'harness.config', 'harness.metrics', 'harness.judges')\n"
            "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(("text", "message"), [
    ("metric: id_ranked\nflors: {mean: 0.5}\n", "unknown key 'flors' (did you mean 'floors'?)"),
    ("overrides: dataset=jsonl\nfloors: {mean: 0.5}\n", "overrides: expected a list of KEY=VALUE"),
    ("floors: {mean: 0.5}\nworst: -1\n", "worst: expected a whole number >= 0, got -1"),
    ("floors: [0.5]\n", "floors: expected a mapping of metric name"),
    ("- a\n", "expected a mapping with keys metric, overrides, floors, worst"),
    ("metric: [\n", "not YAML"),
])
def test_a_bad_config_file_is_named_with_its_key(
    tmp_path: Any, text: str, message: str
) -> None:
    from harness.core.errors import ConfigError
    from harness.testing import check_config

    path = tmp_path / "harness_ci.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        check_config(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert message in str(caught.value)


def test_a_missing_config_file_fails_the_marked_test_in_one_line(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_m=("import pytest\n"
                                "@pytest.mark.harness_config('nowhere.yaml')\n"
                                "def test_m():\n    pass\n"))
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(failed=1)
    errors = [line for line in result.stdout.lines if line.startswith("error: ")]
    assert errors == [f"error: {pytester.path / 'nowhere.yaml'}: cannot read the config file "
                      "(No such file or directory)"]


@pytest.mark.slow
def test_the_summary_sees_checks_made_in_xdist_workers(pytester: pytest.Pytester) -> None:
    """Under ``-n 2`` the checks run in worker processes; their lines reach the summary."""
    pytester.makepyfile(test_x=_test_file(
        "import pytest\n"
        "@pytest.mark.parametrize('floor', [0.1, 0.2, 0.99])\n"
        "def test_x(floor):\n"
        "    assert_context_precision(SAMPLES, 'id_ranked', floors={'mean': floor})\n"))
    result = pytester.runpytest_subprocess(*PLUGIN, "-n", "2", "-p", "xdist")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*harness context precision: 2 passed, 1 failed*"])
    lines = [line for line in result.stdout.lines if line.startswith(("PASS ", "FAIL "))]
    assert sorted(line.split()[1] for line in lines) == [
        "test_x.py::test_x[0.1]", "test_x.py::test_x[0.2]", "test_x.py::test_x[0.99]"]
