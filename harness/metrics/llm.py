"""ragas's LLM-judged context precision: one pointwise judge call per retrieved chunk.

deepeval's listwise variant is ``harness.metrics.contextual_precision.ContextualPrecision`` (also
importable from here).
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from harness.core.errors import ConfigError, JudgeError
from harness.core.protocols import Judge
from harness.core.types import Completion, JudgeSubject, RagSample, SampleResult, unscored
from harness.judges.replies import parse
from harness.metrics.contextual_precision import ContextualPrecision
from harness.metrics.judged import JudgedMetric
from harness.metrics.ranking import average_precision
from harness.prompts.template import PromptTemplate

__all__ = ["ContextualPrecision", "LLMContextPrecision"]

#: One draw's reading of one chunk: (verdict, reason, P(relevant) when soft).
Reading = tuple[int, str, float | None]


class LLMContextPrecision(JudgedMetric):
    """ragas ``ContextPrecision`` (``against=reference``) or ``ContextUtilization``
    (``against=response``): one judge call per retrieved chunk, verdict 0/1, then average
    precision with ``eps`` (1e-10 as in ragas).

    Args:
        name: The metric option name.
        judge: The judge (``judge`` group).
        prompt: A pointwise prompt (``prompt`` group).
        against: ``reference`` (the ground-truth answer) or ``response`` (the generated one).
        eps: Added to the average-precision denominator.
        soft: Score with P(relevant) from the judge's token logprobs instead of 0/1.
    """

    def __init__(
        self,
        name: str,
        judge: Judge,
        prompt: PromptTemplate,
        against: Literal["reference", "response"] = "reference",
        eps: float = 1e-10,
        soft: bool = False,
    ) -> None:
        if against not in ("reference", "response"):
            raise ConfigError(
                f"metric.against: expected 'reference' or 'response', got {against!r}"
            )
        super().__init__(name, judge, prompt, "pointwise", eps, soft)
        self.against = against
        self.requires = frozenset({"user_input", against, "retrieved_contexts"})

    async def _score_one(self, sample: RagSample) -> SampleResult:
        why = self._precheck(sample, self.against)
        if why:
            return unscored(sample.id, why)
        answer = getattr(sample, self.against)

        def read(completion: Completion) -> Reading:
            verdict, reason = parse.pointwise(completion.content)
            soft = self._soft_or_hard(completion, [verdict])
            return verdict, reason, None if soft is None else soft[0]

        async def judge(i: int, chunk: str) -> list[Reading]:
            messages = self.prompt.messages(
                question=sample.user_input, answer=answer, context=chunk
            )
            ids = sample.retrieved_context_ids
            about = JudgeSubject(sample.user_input or "", answer, (chunk,), sample.id,
                                 None if ids is None or i >= len(ids) else (ids[i],))
            return await self._draws(messages, self.prompt.kind, read, subject=about)

        chunks = sample.retrieved_contexts or ()
        outcomes = await asyncio.gather(*(judge(i, c) for i, c in enumerate(chunks)),
                                        return_exceptions=True)
        per_chunk: list[list[Reading]] = []
        failed: list[tuple[int, JudgeError]] = []
        for i, outcome in enumerate(outcomes):
            if isinstance(outcome, JudgeError):
                failed.append((i, outcome))
            elif isinstance(outcome, BaseException):
                raise outcome
            else:
                per_chunk.append(outcome)
        if failed:
            i, error = failed[0]
            return unscored(sample.id, f"chunk {i + 1} of {len(chunks)}: {error}")
        draws = [list(d) for d in zip(*per_chunk, strict=True)]
        hard = [[o[0] for o in draw] for draw in draws]
        soft = [[float(o[2] or 0.0) for o in draw] for draw in draws] if self.soft else None
        verdicts, relevance, agreement = self._vote(hard, soft)
        details: dict[str, Any] = {}
        if self.prompt.reasons:  # a verdicts-only prompt has none
            details["reasons"] = [o[1] for o in draws[0]]
        if relevance is not None:
            details["relevance"] = relevance
        if agreement is not None:
            details["agreement"] = agreement
        score = average_precision(relevance if relevance is not None else verdicts, self.eps)
        return SampleResult(sample.id, score, verdicts, None, details)
