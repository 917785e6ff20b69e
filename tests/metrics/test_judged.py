"""The LLM-judged variants through the ``Judge`` protocol alone: a judge that answers from
labels, with no HTTP and no ``OpenAIJudge``."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
import yaml
from conftest import CONF

from harness.core.errors import ConfigError
from harness.core.protocols import Kind
from harness.core.types import Completion, JudgeRequest, JudgeStats, RagSample, SampleResult
from harness.metrics.contextual_precision import ContextualPrecision
from harness.metrics.llm import LLMContextPrecision
from harness.prompts.template import PromptTemplate

T = TypeVar("T")
_CONTEXT = re.compile(r"<context(?: index=\"\d+\")?>\n(.*?)\n</context>", re.DOTALL)


class LabelJudge:
    """Relevant iff ``labels[chunk]`` is 1; the chunks are read back from the prompt."""

    model = "labels"
    samples = 1
    vote = "majority"

    def __init__(self, labels: dict[str, int]) -> None:
        self.labels = labels
        self.stats = JudgeStats()
        self.asked: list[tuple[Kind, str, str]] = []
        self.items: list[int | None] = []
        self.closed = False

    async def ask(self, request: JudgeRequest, parse: Callable[[Completion], T]) -> T:
        messages, kind, items = request.messages, request.kind, request.items
        prompt_sha, variant = request.prompt_sha, request.variant
        self.stats.calls += 1
        self.asked.append((kind, prompt_sha, variant))
        self.items.append(items)
        chunks = _CONTEXT.findall(messages[-1]["content"])
        reply: dict[str, Any]
        if kind == "pointwise":
            [chunk] = chunks
            reply = {"reason": "from labels", "verdict": self.labels[chunk]}
        elif kind == "listwise":
            reply = {"verdicts": [
                {"reason": "from labels", "verdict": "yes" if self.labels[c] else "no"}
                for c in chunks
            ]}
        else:
            reply = {"reason": "explained"}
        return parse(Completion(json.dumps(reply)))

    async def preflight(self) -> None:
        pass

    async def aclose(self) -> None:
        self.closed = True

    def describe(self) -> dict[str, Any]:
        return {"model": self.model}


def prompt(name: str) -> PromptTemplate:
    data = yaml.safe_load((CONF / "prompt" / f"{name}.yaml").read_text())
    data.pop("_target_")
    return PromptTemplate(**data)


SAMPLE = RagSample(id="s", user_input="Q?", reference="A.", retrieved_contexts=("a", "b", "c"))
LABELS = {"a": 1, "b": 0, "c": 1}


def run(metric: Any) -> tuple[list[SampleResult], list[int]]:
    finished: list[int] = []
    try:
        metric.preflight()
        results = metric.score_batch([SAMPLE], on_done=lambda i, r: finished.append(i))
    finally:
        metric.close()
    return results, finished


def test_pointwise_scores_with_any_judge(tmp_path):
    judge = LabelJudge(LABELS)
    metric = LLMContextPrecision("llm_with_reference", judge, prompt("llm_with_reference"))
    assert metric.prevalidate is True
    assert metric.requires == {"user_input", "reference", "retrieved_contexts"}
    [r], finished = run(metric)
    # docs/reference/metrics.md section 1, verdicts [1, 0, 1] with ragas's eps 1e-10
    assert r.verdicts == [1, 0, 1] and repr(r.score) == "0.8333333332916666"
    assert finished == [0] and judge.closed
    sha = metric.prompt.sha256
    assert judge.asked == [("pointwise", sha, "llm_with_reference")] * 3
    assert judge.items == [None] * 3
    assert metric.stats() == JudgeStats(calls=3).as_dict()
    assert metric.describe() == {"judge": {"model": "labels"}, "prompt": metric.prompt.describe()}
    [path] = metric.write_artifacts(tmp_path)
    assert path == tmp_path / "prompt.yaml"
    assert path.read_text("utf-8") == metric.prompt.to_yaml()


def test_listwise_scores_with_any_judge():
    judge = LabelJudge(LABELS)
    metric = ContextualPrecision("contextual_precision", judge, prompt("contextual_precision"))
    [r], finished = run(metric)
    # docs/reference/metrics.md section 1, verdicts [1, 0, 1] with deepeval's eps 0
    assert r.verdicts == [1, 0, 1] and repr(r.score) == "0.8333333333333333"
    assert r.details["success"] is True and r.details["reason"] == "explained"
    assert [kind for kind, _, _ in judge.asked] == ["listwise", "reason"]
    assert judge.items == [3, None]  # the listwise call pins its count: one verdict per chunk
    assert finished == [0]


def test_a_judge_is_required():
    with pytest.raises(ConfigError, match="needs a judge and a prompt"):
        LLMContextPrecision("llm_with_reference", None, prompt("llm_with_reference"))
