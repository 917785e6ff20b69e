"""Several judged variants of one run are judged at once, under one pacing budget for their
endpoint (issue 34, item 4): their requests interleave, never exceed the endpoint's
``judge.max_concurrency`` together, and every variant scores as it scores alone."""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any

import pytest
from helpers.judge_server import JudgeServer

import harness
from harness.core.errors import ComponentFailed
from harness.core.types import RagSample, SampleResult
from harness.judges.openai_chat import OpenAIJudge
from harness.metrics.contextual_precision import ContextualPrecision
from harness.metrics.llm import LLMContextPrecision
from harness.metrics.panel import Panel
from harness.prompts.template import PromptTemplate

BOTH = ["llm_with_reference", "contextual_precision"]


def records(n: int = 12, chunks: int = 3) -> list[dict[str, Any]]:
    return [{"id": f"q{i}", "user_input": f"What is item {i}?", "reference": f"Item {i}.",
             "response": f"Item {i}.",
             "retrieved_contexts": [f"passage {k} about item {i}" for k in range(chunks)]}
            for i in range(n)]


def overrides(server: JudgeServer, concurrency: int) -> list[str]:
    return ["judge=local", f"judge.base_url={server.base_url}", "judge.model=test-judge",
            f"judge.max_concurrency={concurrency}", "judge.pacing=fixed", "judge.cache=false"]


def variant(entry: dict[str, Any]) -> str:
    """Which variant sent a recorded request: ``llm_with_reference`` asks for pointwise
    verdicts, ``contextual_precision`` for listwise ones and their reasons."""
    name = entry["body"]["response_format"]["json_schema"]["name"]
    return BOTH[0] if name == "pointwise_verdict" else BOTH[1]


@pytest.mark.slow
def test_two_variants_interleave_under_one_budget_and_score_as_alone() -> None:
    labels = {f"passage {k} about item {i}": int((i + k) % 2 == 0)
              for i in range(12) for k in range(3)}
    with JudgeServer(labels, latency_ms=40, latency_sd_ms=15, concurrency=16) as server:
        alone = {name: harness.evaluate(records(), name, overrides=overrides(server, 4))
                 for name in BOTH}
        server.reset_stats()
        both = harness.evaluate(records(), BOTH, overrides=overrides(server, 4))
        kinds = [(e["arrived"], variant(e)) for e in server.requests]
        peak = server.stats.in_flight_max
    for name in BOTH:  # each scores as it does alone, sample by sample
        assert both.summary["variants"][name]["mean"] == alone[name].summary["mean"]
        assert [r["variants"][name]["score"] for r in both.rows] == \
            [r["score"] for r in alone[name].rows]
    # one budget of 4 for the endpoint, not 4 per variant, and it was used in full
    assert peak == 4
    # judged at once: the second variant's first request goes out before the first's last
    firsts = {name: min(t for t, k in kinds if k == name) for _, name in kinds}
    lasts = {name: max(t for t, k in kinds if k == name) for _, name in kinds}
    assert len(firsts) == 2, firsts
    early, late = sorted(firsts, key=firsts.__getitem__)
    assert firsts[late] < lasts[early]


def judge(base_url: str, **settings: Any) -> OpenAIJudge:
    return OpenAIJudge(**{"model": "test-judge", "base_url": base_url, "api_key_env": None,
                          "cache": False, **settings})


def pair(**other: Any) -> tuple[OpenAIJudge, OpenAIJudge]:
    """Two judges of one endpoint, the second with ``other`` settings."""
    settings = {"base_url": "http://127.0.0.1:8/v1", **other}
    return judge("http://127.0.0.1:8/v1"), judge(**settings)


@pytest.mark.parametrize(("other", "shared"), [
    ({}, True),
    ({"base_url": "http://127.0.0.1:9/v1"}, False),
    ({"model": "another-model"}, False),
    ({"max_concurrency": 8}, False),
    ({"pacing": "fixed"}, False),
    ({"api_key_env": "SOME_KEY"}, False),
    ({"timeout": 5.0}, False),
    ({"temperature": 0.7, "cache": True}, True),  # what is asked differs, not where
])
def test_judges_share_a_budget_only_for_the_same_endpoint_and_pacing(
        other: dict[str, Any], shared: bool) -> None:
    first, second = pair(**other)
    assert first.share_pacing(second) is shared
    assert (first.transport.pacer is second.transport.pacer) is shared


def test_a_judge_that_sent_under_its_own_budget_keeps_it() -> None:
    first, second = judge("http://127.0.0.1:8/v1"), judge("http://127.0.0.1:8/v1")
    own = second.transport.pacer  # made: requests went out under it
    assert first.share_pacing(second) is False
    assert second.transport.pacer is own and first.transport.pacer is not own


class Broken(LLMContextPrecision):
    """A judged variant whose scoring fails after a while (a user's subclass, say)."""

    async def _score_one(self, sample: RagSample) -> SampleResult:
        await asyncio.sleep(0.3)
        raise RuntimeError("no verdict today")


def prompt() -> PromptTemplate:
    import yaml
    from helpers.paths import ROOT

    data = yaml.safe_load((ROOT / "conf" / "prompt" / "llm_with_reference.yaml").read_text())
    data.pop("_target_")
    return PromptTemplate(**data)


def test_a_failing_variant_stops_the_other_and_is_named() -> None:
    samples = [RagSample(id=r["id"], user_input=r["user_input"], reference=r["reference"],
                         response=r["response"], retrieved_contexts=tuple(r["retrieved_contexts"]))
               for r in records(40, 3)]
    with JudgeServer(latency_ms=200, concurrency=2) as server:
        slow = LLMContextPrecision("llm_with_reference", judge(server.base_url,
                                   max_concurrency=2, pacing="fixed"), prompt())
        broken = Broken("broken", judge(server.base_url, max_concurrency=2, pacing="fixed"),
                        prompt())
        panel = Panel([slow, broken], ["llm_with_reference", "broken"])
        assert panel.together == [0, 1] and slow.loop is broken.loop
        panel.preflight()
        t0 = time.monotonic()
        with pytest.raises(ComponentFailed) as caught:
            panel.score_batch(samples)
        took = time.monotonic() - t0
        sent = server.stats.requests
        thread = slow.loop._thread
        assert thread is not None and thread.is_alive()
        panel.close()
    assert str(caught.value) == \
        "metric broken: score_batch() raised RuntimeError: no verdict today"
    # the broken one fails after 0.3 s, when about 4 of the slow one's 120 calls (2 at a time,
    # 200 ms each) went out: it was stopped then, not left to send the rest
    assert sent < 40, (sent, took)
    assert not thread.is_alive()  # the one shared loop stopped with the last member


def test_members_that_already_run_or_score_their_own_way_are_left_alone() -> None:
    class OwnWay(LLMContextPrecision):
        def score_batch(self, samples: Any, on_done: Any = None) -> list[SampleResult]:
            return super().score_batch(samples, on_done)

    a = LLMContextPrecision("a", judge("http://127.0.0.1:8/v1"), prompt())
    b = OwnWay("b", judge("http://127.0.0.1:8/v1"), prompt())
    assert Panel([a, b], ["a", "b"]).together == []
    c, d = (LLMContextPrecision(n, judge("http://127.0.0.1:8/v1"), prompt()) for n in "cd")
    c.loop.run(asyncio.sleep(0))  # c's loop runs already: its clients are bound to it
    assert Panel([c, d], ["c", "d"]).together == []
    for m in (a, b, c, d):
        m.close()


@pytest.mark.slow
def test_one_sample_after_the_other_its_chain_head_first() -> None:
    # contextual_precision asks for its verdicts, then for their reason; llm_with_reference
    # makes one round of calls a sample. Through one permit, every call of a sample goes
    # before the next sample's (its rows are written as it finishes, not once the whole
    # batch's verdicts are in), and within a sample the chain's head first
    labels = {f"passage {k} about item {i}": int((i + k) % 2 == 0)
              for i in range(6) for k in range(3)}
    with JudgeServer(labels, latency_ms=2) as server:
        alone = {name: harness.evaluate(records(6), name, overrides=overrides(server, 1))
                 for name in BOTH}
        server.reset_stats()
        both = harness.evaluate(records(6), BOTH, overrides=overrides(server, 1))
        sent = [(e["body"]["response_format"]["json_schema"]["name"],
                 int(re.findall(r"What is item (\d+)\?", json.dumps(e["body"]))[0]))
                for e in server.requests]
    for name in BOTH:
        assert [r["variants"][name]["score"] for r in both.rows] == \
            [r["score"] for r in alone[name].rows]
    assert sent == [(kind, i) for i in range(6) for kind in
                    ("listwise_verdict", *["pointwise_verdict"] * 3, "reason_verdict")]


class BrokenChain(ContextualPrecision):
    """A variant that would send its first calls first (``include_reason``), failing."""

    async def _score_one(self, sample: RagSample) -> SampleResult:
        raise RuntimeError("no verdict today")


def test_a_failing_variant_that_goes_first_does_not_hold_the_other_back() -> None:
    import yaml
    from helpers.paths import ROOT

    data = yaml.safe_load((ROOT / "conf" / "prompt" / "contextual_precision.yaml").read_text())
    data.pop("_target_")
    samples = [RagSample(id=r["id"], user_input=r["user_input"], reference=r["reference"],
                         response=r["response"], retrieved_contexts=tuple(r["retrieved_contexts"]))
               for r in records(8, 3)]
    with JudgeServer(latency_ms=20) as server:
        other = LLMContextPrecision("llm_with_reference", judge(server.base_url), prompt())
        broken = BrokenChain("broken", judge(server.base_url), PromptTemplate(**data))
        panel = Panel([other, broken], ["llm_with_reference", "broken"])
        assert other._lineup is broken._lineup is not None
        panel.preflight()
        for _ in range(2):  # and the next batch is not held back by the failed one
            with pytest.raises(ComponentFailed, match="metric broken: score_batch"):
                panel.score_batch(samples)
        panel.close()
