"""deepeval's LLM-judged context precision: one listwise judge call per sample."""

from __future__ import annotations

import sys
from typing import Any

from harness.core.errors import ConfigError, JudgeError
from harness.core.protocols import Judge
from harness.core.types import Completion, JudgeSubject, RagSample, SampleResult, unscored
from harness.judges.replies import parse
from harness.metrics.judged import JudgedMetric
from harness.metrics.ranking import average_precision
from harness.prompts.template import PromptTemplate

#: One draw's reading of a sample: ``[(verdict, reason), ...]`` and P("yes") when soft.
Reading = tuple[list[tuple[str, str]], list[float] | None]


class ContextualPrecision(JudgedMetric):
    """deepeval ``ContextualPrecisionMetric``: one listwise call per sample returning a
    "yes"/"no" verdict and a reason per chunk, average precision with ``eps`` 0, a pass
    threshold, strict mode and an optional second call that explains the score.

    A verdict list whose length differs from the number of chunks is re-asked, then the
    sample is unscored (deepeval scores it silently). An empty retrieval costs no call.

    Args:
        name: The metric option name.
        judge: The judge (``judge`` group).
        prompt: A listwise prompt with ``reason`` templates (``prompt`` group).
        threshold: ``success`` is ``score >= threshold``; ``null`` scores only.
        strict_mode: Threshold 1, and any score below 1 becomes 0.
        include_reason: Ask the judge to explain each score (one more call per sample).
        verbose: Print each sample's verdicts, score and reason.
        eps: Added to the average-precision denominator (deepeval: 0).
        soft: Score with P("yes") from the judge's token logprobs instead of yes/no.
    """

    def __init__(
        self,
        name: str,
        judge: Judge,
        prompt: PromptTemplate,
        threshold: float | None = 0.5,
        strict_mode: bool = False,
        include_reason: bool = True,
        verbose: bool = False,
        eps: float = 0.0,
        soft: bool = False,
    ) -> None:
        super().__init__(name, judge, prompt, "listwise", eps, soft)
        if threshold is not None and not (
            isinstance(threshold, (int, float)) and not isinstance(threshold, bool)
            and 0.0 <= threshold <= 1.0
        ):
            raise ConfigError(
                f"metric.threshold: expected a number in [0, 1] or null, got {threshold!r}"
            )
        if include_reason and prompt.reason is None:
            raise ConfigError(
                f"metric.include_reason: prompt {prompt.version} has no 'reason' templates; "
                "add them or set metric.include_reason=false"
            )
        self.threshold = 1.0 if strict_mode else threshold
        self.strict_mode, self.include_reason, self.verbose = strict_mode, include_reason, verbose
        self.requires = frozenset({"user_input", "reference", "retrieved_contexts"})

    async def _score_one(self, sample: RagSample) -> SampleResult:
        why = self._precheck(sample, "reference")
        if why:
            return unscored(sample.id, why)
        chunks = list(sample.retrieved_contexts or ())

        def read(completion: Completion) -> Reading:
            items = parse.listwise(completion.content, len(chunks))
            hard = [1 if v.strip().lower() == "yes" else 0 for v, _ in items]
            return items, self._soft_or_hard(completion, hard)

        messages = self.prompt.messages(
            question=sample.user_input, answer=sample.reference, contexts=chunks
        )
        try:
            about = JudgeSubject(sample.user_input or "", sample.reference, tuple(chunks),
                                 sample.id, sample.retrieved_context_ids)
            draws = await self._draws(messages, self.prompt.kind, read, items=len(chunks),
                                      subject=about)
        except JudgeError as e:
            return unscored(sample.id, str(e))
        hard = [[1 if v.strip().lower() == "yes" else 0 for v, _ in items] for items, _ in draws]
        # _soft_or_hard gives every draw its probabilities when soft
        soft = [probs for _, probs in draws if probs is not None] if self.soft else None
        verdicts, relevance, agreement = self._vote(hard, soft)
        items = draws[0][0]
        score = average_precision(relevance if relevance is not None else verdicts, self.eps)
        if self.strict_mode and score < 1.0:
            score = 0.0
        details: dict[str, Any] = {
            "success": None if self.threshold is None else score >= self.threshold,
        }
        if self.prompt.reasons:
            details = {"reasons": [r for _, r in items], **details}
        if relevance is not None:
            details["relevance"] = relevance
        if agreement is not None:
            details["agreement"] = agreement
        if self.include_reason:
            voted = [("yes" if v else "no", r) for v, (_, r) in zip(verdicts, items, strict=True)]
            details["reason"] = await self._reason(sample, voted, score, details)
        if self.verbose:
            marks = " ".join("yes" if v else "no" for v in verdicts)
            print(f"[{self.name}] {sample.id}: {score:.4f} [{marks}] {details.get('reason') or ''}",
                  file=sys.stderr)
        return SampleResult(sample.id, score, verdicts, None, details)

    async def _reason(
        self, sample: RagSample, items: list[tuple[str, str]], score: float, details: dict[str, Any]
    ) -> str | None:
        messages = self.prompt.reason_messages(
            question=sample.user_input,
            answer=sample.reference,
            verdicts=[{"verdict": v, "reason": r} for v, r in items],
            score=f"{score:.2f}",
        )
        try:
            return await self._ask(messages, "reason", lambda c: parse.reason(c.content))
        except JudgeError as e:
            details["reason_error"] = str(e)  # the score stands; only its explanation is missing
            return None
