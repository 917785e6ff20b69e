"""LLM-judged metrics wired to the test judge (``tests/helpers/judge_server.py``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

import yaml

from harness.core.types import RagSample, SampleResult
from harness.judges.openai_chat import OpenAIJudge
from harness.metrics.contextual_precision import ContextualPrecision
from harness.metrics.judged import JudgedMetric
from harness.metrics.llm import LLMContextPrecision
from harness.prompts.template import PromptTemplate
from helpers.judge_server import JudgeServer
from helpers.paths import CONF

QUESTION = "Where is the Eiffel Tower located?"
ANSWER = "The Eiffel Tower is located in Paris."


def prompt(name: str) -> PromptTemplate:
    """The prompt of ``conf/prompt/NAME.yaml``."""
    data = yaml.safe_load((CONF / "prompt" / f"{name}.yaml").read_text("utf-8"))
    data.pop("_target_")
    return PromptTemplate(**data)


def judge(server: JudgeServer, **kw: Any) -> OpenAIJudge:
    """A judge of ``server`` (3 transport retries unless ``max_retries`` is given)."""
    kw.setdefault("max_retries", 3)
    return OpenAIJudge(model="test-judge", base_url=server.base_url, api_key_env=None, **kw)


def pointwise(
    server: JudgeServer, against: Literal["reference", "response"] = "reference", **kw: Any
) -> LLMContextPrecision:
    """``llm_with_reference`` (or ``llm_without_reference``); ``judge={...}`` sets the judge."""
    name = "llm_with_reference" if against == "reference" else "llm_without_reference"
    return LLMContextPrecision(
        name, judge(server, **kw.pop("judge", {})), prompt(name), against=against, **kw
    )


def listwise(server: JudgeServer, **kw: Any) -> ContextualPrecision:
    """``contextual_precision``; ``judge={...}`` sets the judge."""
    return ContextualPrecision(
        "contextual_precision", judge(server, **kw.pop("judge", {})),
        prompt("contextual_precision"), **kw,
    )


def sample(
    chunks: Iterable[str], sid: str = "s", question: str = QUESTION, answer: str = ANSWER
) -> RagSample:
    """A sample whose reference and response are ``answer``."""
    return RagSample(id=sid, user_input=question, reference=answer, response=answer,
                     retrieved_contexts=tuple(chunks))


def score(metric: JudgedMetric, samples: Sequence[RagSample]) -> list[SampleResult]:
    """Preflight, score ``samples`` as one batch, close."""
    try:
        metric.preflight()
        return metric.score_batch(samples)
    finally:
        metric.close()


#: Two chunks with a known relevance to the seed question (ragas's and deepeval's examples).
PARIS = "The Eiffel Tower is located in Paris, the capital of France."
BERLIN = "The Brandenburg Gate is a monument in Berlin."
