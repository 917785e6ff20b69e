"""``Panel``: several built variants as one ``Metric`` (``metric=[a,b]``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from helpers.paths import ROOT

from harness import evaluate
from harness.core.errors import ComponentFailed, ConfigError
from harness.core.protocols import OnDone
from harness.core.types import RagSample, SampleResult
from harness.metrics.base import BaseMetric
from harness.metrics.id_based import IdContextPrecision
from harness.metrics.non_llm import StringContextPrecision
from harness.metrics.panel import Panel
from harness.run.loop import evaluate as score_all

ROWS = [json.loads(line) for line in
        (ROOT / "harness" / "data" / "sample_rag.jsonl").read_text("utf-8").splitlines()]


def samples(n: int = 4) -> list[RagSample]:
    return [RagSample(id=f"s{i}", user_input="q", retrieved_contexts=("a", "b"),
                      retrieved_context_ids=("d1", "d2"), reference_context_ids=("d2",))
            for i in range(n)]


class Reversed(BaseMetric):
    """Reports its samples through on_done last first, with a detail of its own."""

    name = "reversed"

    def __init__(self) -> None:
        self.closed = False

    def score_batch(self, samples: Sequence[RagSample],
                    on_done: OnDone | None = None) -> list[SampleResult]:
        results = [SampleResult(s.id, 0.25 * i, [1, 0], None, {"similarities": [0.9, 0.1]})
                   for i, s in enumerate(samples)]
        for i in reversed(range(len(samples))):
            if on_done is not None:
                on_done(i, results[i])
        return results

    def stats(self) -> dict[str, float | None]:
        return {"requests": 3, "cost_usd": 0.5, "peak_in_flight": 2, "final_limit": 8}

    def describe(self) -> dict[str, Any]:
        return {"judge": {"model": "m1"}, "prompt": {"version": "p1"}}

    def write_artifacts(self, out_dir: Path) -> list[Path]:
        path = out_dir / "prompt.yaml"
        path.write_text("p1")
        return [path]

    def close(self) -> None:
        self.closed = True
        raise RuntimeError("close failed")


class Returning(BaseMetric):
    """Calls no on_done: its results only come back."""

    name = "returning"
    requires = frozenset({"response"})

    def __init__(self, fail: bool = False) -> None:
        self.fail, self.closed = fail, False

    def score_batch(self, samples: Sequence[RagSample],
                    on_done: OnDone | None = None) -> list[SampleResult]:
        if self.fail:
            raise ValueError("broken")
        return [SampleResult(s.id, None, None, "missing field response") for s in samples]

    def stats(self) -> dict[str, float | None]:
        return {"requests": 4, "cost_usd": None, "peak_in_flight": 5, "final_limit": 2}

    def describe(self) -> dict[str, Any]:
        return {"judge": {"model": "m2"}, "prompt": {"version": "p2"}}

    def write_artifacts(self, out_dir: Path) -> list[Path]:
        path = out_dir / "prompt.yaml"
        path.write_text("p2")
        return [path]

    def close(self) -> None:
        self.closed = True


def test_merged_results_go_out_once_every_member_has_the_sample() -> None:
    panel = Panel([Reversed(), Returning()])
    seen: list[tuple[int, SampleResult]] = []
    results = panel.score_batch(samples(), lambda i, r: seen.append((i, r)))
    # the second member only returns: every merged result goes out after it, in order
    assert [i for i, _ in seen] == [0, 1, 2, 3]
    assert [r for _, r in seen] == results
    first = results[1]
    assert (first.score, first.verdicts, first.error) == (0.25, [1, 0], None)
    assert first.details["similarities"] == [0.9, 0.1]
    assert first.details["variants"] == {
        "reversed": {"score": 0.25, "verdicts": [1, 0], "error": None,
                     "similarities": [0.9, 0.1]},
        "returning": {"score": None, "verdicts": None, "error": "missing field response"},
    }
    assert panel.name == "reversed" and panel.requires == frozenset({"response"})
    assert panel.needing("response") == ["returning"]


def test_out_of_order_members_go_out_as_each_index_completes() -> None:
    panel = Panel([Returning(), Reversed()])  # the last member reports last first
    seen: list[int] = []
    panel.score_batch(samples(), lambda i, r: seen.append(i))
    assert seen == [3, 2, 1, 0]


def test_the_loop_counts_each_variant_as_its_own_run_would() -> None:
    def tupled(value: Any) -> Any:
        return None if value is None else tuple(value)

    batch = [RagSample(id=r["id"], user_input=r["user_input"],
                       retrieved_contexts=tupled(r["retrieved_contexts"]),
                       retrieved_context_ids=tupled(r["retrieved_context_ids"]),
                       reference_contexts=tupled(r.get("reference_contexts")),
                       reference_context_ids=tupled(r.get("reference_context_ids")))
             for r in ROWS]
    members = [IdContextPrecision("id_ranked", "average_precision"),
               StringContextPrecision("non_llm")]
    tally = score_all([batch], Panel(members), variants=("id_ranked", "non_llm"))
    for member in (IdContextPrecision("id_ranked", "average_precision"),
                   StringContextPrecision("non_llm")):
        alone = score_all([batch], member)
        mine = tally.variants[member.name]
        assert list(mine.scores) == list(alone.scores)
        assert mine.mean == alone.mean and mine.reasons == alone.reasons
        assert mine.rank_totals == alone.rank_totals
        assert mine.rank_relevant == alone.rank_relevant
    assert tally.mean == tally.variants["id_ranked"].mean


def test_stats_add_up_and_each_member_keeps_its_own() -> None:
    panel = Panel([Reversed(), Returning()])
    assert panel.stats() == {"requests": 7, "cost_usd": None, "peak_in_flight": 5,
                             "final_limit": 8}
    assert panel.member_stats()["returning"]["requests"] == 4
    described = panel.describe()
    assert described["judge"] == {"model": "m1"} and described["prompt"] == {"version": "p1"}
    assert described["variants"]["returning"]["prompt"] == {"version": "p2"}


def test_artifacts_of_two_members_do_not_overwrite_each_other(tmp_path: Path) -> None:
    paths = Panel([Reversed(), Returning()]).write_artifacts(tmp_path)
    assert paths == [tmp_path / "prompt.yaml", tmp_path / "variants" / "returning" / "prompt.yaml"]
    assert [p.read_text() for p in paths] == ["p1", "p2"]


def test_close_closes_every_member_even_when_one_raises() -> None:
    first, second = Reversed(), Returning()
    with pytest.raises(RuntimeError, match="close failed"):
        Panel([first, second]).close()
    assert first.closed and second.closed


def test_a_failing_member_is_named() -> None:
    panel = Panel([Reversed(), Returning(fail=True)], names=["id_ranked", "non_llm"])
    with pytest.raises(ComponentFailed, match=r"^metric non_llm: score_batch\(\) raised "
                                              "ValueError: broken$"):
        panel.score_batch(samples())


def test_the_python_api_takes_a_list_or_the_string() -> None:
    listed = evaluate(ROWS, ["id_ranked", "non_llm"])
    same = evaluate(ROWS, "[id_ranked,non_llm]")
    for name in ("id_ranked", "non_llm"):
        alone = evaluate(ROWS, name)
        for run in (listed, same):
            assert [r["variants"][name]["score"] for r in run.rows] == alone.scores
            assert run.summary["variants"][name]["mean"] == alone.mean
    assert listed.scores == evaluate(ROWS, "id_ranked").scores
    assert listed.summary["metric"] == "[id_ranked,non_llm]"
    assert set(listed.summary["config"]["metric"]) == {"id_ranked", "non_llm"}
    with pytest.raises(ConfigError, match="'id_rankd' is not a metric option"):
        evaluate(ROWS, ["id_rankd", "non_llm"])
    with pytest.raises(ConfigError, match="'non_llm' is listed twice"):
        evaluate(ROWS, ["non_llm", "non_llm"])
    with pytest.raises(ConfigError, match="^metric.treshold: no listed variant"):
        evaluate(ROWS, ["id_ranked", "non_llm"], overrides=["metric.treshold=0.2"])


def test_a_single_variant_run_has_no_variants() -> None:
    result = evaluate(ROWS, "id_ranked")
    assert "variants" not in result.summary
    assert all("variants" not in r for r in result.rows)
