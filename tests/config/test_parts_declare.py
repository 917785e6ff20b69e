"""Each part is checked against its role once, when the parts are built
(``harness.core.capabilities.conform``, as pluggy checks a plugin against its hook specs): a
part that lacks a member its role or the run's settings need is refused there, in one line
naming the part and the member, before any work; the optional members a part leaves out get
their defaults, and the run then reads what a part can do from its members."""

from __future__ import annotations

import textwrap
import uuid
from pathlib import Path

import mlflow
import pytest
from conftest import run_cli
from helpers.errors import fails

from harness.core.capabilities import Role, conform, lacking
from harness.core.errors import ConfigError
from harness.core.protocols import DATASET, JUDGE, METRIC, RETRIEVER

#: A user's metrics: ids against reference ids, average precision over the retrieved order
#: (what ``metric=id_ranked`` computes), with and without a ``human_score``.
METRICS = """
    from harness.extend import BaseMetric, SampleResult, average_precision, unscored

    class Ranked(BaseMetric):
        requires = frozenset({"retrieved_context_ids", "reference_context_ids"})

        def __init__(self, name: str = "ranked"):
            self.name = name

        def score_batch(self, samples, on_done=None):
            out = []
            for s in samples:
                refs = set(s.reference_context_ids or ())
                verdicts = [int(i in refs) for i in s.retrieved_context_ids or ()]
                out.append(SampleResult(s.id, average_precision(verdicts), verdicts=verdicts)
                           if verdicts else unscored(s.id, "nothing retrieved"))
            return out

    class Scored(Ranked):
        def human_score(self, verdicts):
            return average_precision(verdicts)

    class Bare:
        name = "bare"
        requires = frozenset()
        prevalidate = False

        def describe(self):
            return {}
"""


@pytest.fixture
def own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A package of the user's metrics and a config folder with one option per class."""
    name = f"usermetrics_{uuid.uuid4().hex[:8]}"
    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / name / "m.py").write_text(textwrap.dedent(METRICS))
    (tmp_path / "conf" / "metric").mkdir(parents=True)
    for cls in ("Ranked", "Scored", "Bare"):
        (tmp_path / "conf" / "metric" / f"{cls.lower()}.yaml").write_text(
            f"_target_: {name}.m.{cls}\n" + ("" if cls == "Bare" else f"name: {cls.lower()}\n"))
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path, name


def _args(name: str, metric: str, *more: str) -> tuple[str, ...]:
    return (f"metric={metric}", "hydra.searchpath=[file://conf]",
            f"trusted_targets=[{name}.*]", *more)


def test_a_users_metric_without_human_score_is_refused_naming_it(own: tuple[Path, str]) -> None:
    cwd, name = own
    result = run_cli(*_args(name, "ranked", "run.human_labels=qrels",
                            "run.human_label_samples=10", "tracking=none"), cwd=cwd)
    fails(result, "run.human_labels: metric ranked "
          f"({name}.m.Ranked) has no human_score, which scores a sample's labelled chunks")
    assert not (result.out_dir / "samples.jsonl").exists()


@pytest.mark.slow
def test_a_users_metric_without_human_score_starts_no_mlflow_run(
        own: tuple[Path, str]) -> None:
    cwd, name = own
    store = f"sqlite:///{cwd / 'mlflow.db'}"
    result = run_cli(*_args(name, "ranked", "run.human_labels=qrels",
                            "run.human_label_samples=10"), cwd=cwd,
                     env={"MLFLOW_TRACKING_URI": store})
    assert result.returncode == 2, result.stderr
    client = mlflow.MlflowClient(store)
    assert client.search_runs([e.experiment_id for e in client.search_experiments()]) == []


def test_a_users_metric_that_declares_human_score_gets_the_interval(
        own: tuple[Path, str]) -> None:
    cwd, name = own
    result = run_cli(*_args(name, "scored", "run.human_labels=qrels",
                            "run.human_label_samples=10", "tracking=none"), cwd=cwd)
    assert result.returncode == 0, result.stderr
    block = result.summary()["confidence"]
    # the same arithmetic as id_ranked, labelled from the qrels it scores against: the same
    # block as id_ranked's own, and labels that agree with every verdict
    ours = run_cli("metric=id_ranked", "run.human_labels=qrels", "run.human_label_samples=10",
                   "tracking=none", cwd=cwd).summary()["confidence"]
    assert block["n_labelled"] == 10 and block["judge_agreement"]["kappa"] == 1.0
    assert (block["mean"], block["ci"]) == (ours["mean"], ours["ci"])


def test_a_metric_lacking_a_required_member_is_named_with_the_members(
        own: tuple[Path, str]) -> None:
    cwd, name = own
    result = run_cli(*_args(name, "bare", "tracking=none"), cwd=cwd)
    fails(result, f"metric {name}.m.Bare: a Bare is not a metric: it lacks preflight, "
          "score_batch, stats, write_artifacts, close (harness.core.protocols.Metric, API v1); "
          "subclass harness.metrics.base.BaseMetric")
    assert not (result.out_dir / "samples.jsonl").exists()


def test_optional_members_get_their_defaults_and_required_ones_are_listed_in_order() -> None:
    class Minimal:
        name, requires, prevalidate = "m", frozenset(), False

        def preflight(self) -> None: ...
        def score_batch(self, samples: object, on_done: object = None) -> list[object]:
            return []
        def describe(self) -> dict[str, object]:
            return {}
        def stats(self) -> dict[str, object]:
            return {}
        def write_artifacts(self, out_dir: object) -> list[object]:
            return []
        def close(self) -> None: ...

    metric = conform(Minimal(), METRIC, "metric m")
    assert (metric.batch_size, metric.human_score, metric.joins_loop) == (None, None, False)
    assert METRIC.required == ("name", "requires", "prevalidate", "preflight", "score_batch",
                               "describe", "stats", "write_artifacts", "close")
    assert RETRIEVER.required == ("needs_corpus", "prepare", "retrieve_batch", "describe")
    assert "splittable" not in DATASET.required and "share_pacing" not in JUDGE.required


def test_a_member_that_is_not_callable_counts_as_lacking_and_slots_are_named() -> None:
    role = Role("thing", "a spec", ("run", "size"), frozenset({"run"}),
                {"extra": lambda part: 1}, "do this")

    class NotCallable:
        run, size = 3, 1

    class Slotted:
        __slots__ = ("size",)

        def __init__(self) -> None:
            self.size = 1

        def run(self) -> None: ...

    assert lacking(NotCallable(), role) == ["run"]
    with pytest.raises(ConfigError, match=r"^x: a NotCallable is not a thing: it lacks run "
                                          r"\(a spec\); do this$"):
        conform(NotCallable(), role, "x")
    with pytest.raises(ConfigError, match="a Slotted lacks extra .* declare extra on its class"):
        conform(Slotted(), role, "x")
