"""LLM-judged context precision: ragas's pointwise variants and deepeval's listwise one."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from typing import Any, Literal

from harness.aio import LoopThread
from harness.errors import ConfigError, JudgeError
from harness.judges import parse
from harness.judges.openai_chat import Completion, OpenAIJudge
from harness.metrics.base import missing_fields
from harness.metrics.ranking import average_precision
from harness.prompts.template import PromptTemplate
from harness.types import RagSample, SampleResult, unscored

#: Called with (index in the batch, result) as each sample finishes.
OnDone = Callable[[int, SampleResult], None]


class _Judged:
    """What the LLM variants share: a judge, a prompt, a private event loop."""

    name: str
    requires: frozenset[str]
    #: The runner validates the whole dataset and checks the endpoint before any call.
    prevalidate = True
    reports_progress = True

    def __init__(
        self, name: str, judge: OpenAIJudge, prompt: PromptTemplate, mode: str, eps: float, soft: bool
    ) -> None:
        if not isinstance(judge, OpenAIJudge) or not isinstance(prompt, PromptTemplate):
            raise ConfigError(f"metric {name}: needs a judge and a prompt")
        if prompt.mode != mode:
            raise ConfigError(
                f"metric {name} judges {mode}, but prompt {prompt.version} is {prompt.mode}; "
                f"choose a {mode} prompt"
            )
        if eps < 0:
            raise ConfigError(f"metric.eps: expected a number >= 0, got {eps!r}")
        self.name, self.judge, self.prompt, self.eps, self.soft = name, judge, prompt, eps, soft
        self._loop = LoopThread()
        self._agreement: list[float] = []

    async def _ask(self, messages: list[dict[str, str]], kind: Any, read: Any, draw: int = 0) -> Any:
        return await self.judge.ask(
            messages, kind, read, logprobs=self.soft and kind != "reason", draw=draw,
            prompt_sha=self.prompt.sha256, variant=self.name,
        )

    async def _draws(self, messages: list[dict[str, str]], kind: Any, read: Any) -> list[Any]:
        """``judge.samples`` independent answers (one unless the judge samples)."""
        if self.judge.samples == 1:
            return [await self._ask(messages, kind, read)]
        return list(await asyncio.gather(
            *(self._ask(messages, kind, read, draw) for draw in range(self.judge.samples))
        ))

    def _vote(
        self, hard: list[list[int]], soft: list[list[float]] | None
    ) -> tuple[list[int], list[float] | None, list[float] | None]:
        """Combine draws (outer list) of per-chunk verdicts: ``(verdicts, relevance,
        agreement)``. Majority: relevant iff at least half the draws say so; ``mean``
        (or soft verdicts) also gives the graded relevance used for the score."""
        n = len(hard)
        per_chunk = list(zip(*hard, strict=True))
        verdicts = [1 if 2 * sum(c) >= n else 0 for c in per_chunk]
        relevance: list[float] | None = None
        if soft is not None:
            relevance = [sum(c) / n for c in zip(*soft, strict=True)]
        elif n > 1 and self.judge.vote == "mean":
            relevance = [sum(c) / n for c in per_chunk]
        agreement = None
        if n > 1:
            agreement = [max(sum(c), n - sum(c)) / n for c in per_chunk]
            self._agreement.extend(agreement)
        return verdicts, relevance, agreement

    def preflight(self) -> None:
        """Check the endpoint before the first judge call."""
        self._loop.run(self.judge.preflight())

    def score_batch(
        self, samples: Sequence[RagSample], on_done: OnDone | None = None
    ) -> list[SampleResult]:
        """Score samples concurrently (at most ``judge.max_concurrency`` calls in flight)."""
        return self._loop.run(self._score_all(samples, on_done))

    async def _score_all(
        self, samples: Sequence[RagSample], on_done: OnDone | None
    ) -> list[SampleResult]:
        async def one(index: int, sample: RagSample) -> SampleResult:
            result = await self._score_one(sample)
            if on_done is not None:
                on_done(index, result)
            return result

        tasks = [asyncio.ensure_future(one(i, s)) for i, s in enumerate(samples)]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:  # e.g. the endpoint went down: stop the other calls too
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _score_one(self, sample: RagSample) -> SampleResult:
        raise NotImplementedError

    def _precheck(self, sample: RagSample, answer_field: str) -> str | None:
        why = missing_fields(sample, self.requires)
        if why:
            return why
        for field in ("user_input", answer_field):
            if not str(getattr(sample, field)).strip():
                return f"{field} is empty"
        if not sample.retrieved_contexts:
            return "retrieved_contexts is empty: nothing to judge"
        return None

    def _soft_or_hard(self, completion: Completion, hard: list[int]) -> list[float] | None:
        if not self.soft:
            return None
        probs = parse.soft_verdicts(completion.content, completion.logprobs)
        if probs is None or len(probs) != len(hard):
            self.judge.stats.soft_fallbacks += 1
            return [float(v) for v in hard]
        return probs

    def stats(self) -> dict[str, float]:
        """The judge counters of this run (and the draws' agreement when it samples)."""
        data = self.judge.stats.as_dict()
        if self._agreement:
            data["agreement"] = sum(self._agreement) / len(self._agreement)
        return data

    def describe(self) -> dict[str, Any]:
        """The judge and prompt, for outputs."""
        return {"judge": self.judge.describe(), "prompt": self.prompt.describe()}

    def close(self) -> None:
        """Close the HTTP client and the loop."""
        try:
            self._loop.run(self.judge.aclose())
        finally:
            self._loop.close()


class LLMContextPrecision(_Judged):
    """ragas ``ContextPrecision`` (``against=reference``) or ``ContextUtilization``
    (``against=response``): one judge call per retrieved chunk, verdict 0/1, then average
    precision with ``eps`` (1e-10 as in ragas).

    Args:
        name: The metric option name.
        judge: The judge endpoint (``judge`` group).
        prompt: A pointwise prompt (``prompt`` group).
        against: ``reference`` (the ground-truth answer) or ``response`` (the generated one).
        eps: Added to the average-precision denominator.
        soft: Score with P(relevant) from the judge's token logprobs instead of 0/1.
    """

    def __init__(
        self,
        name: str,
        judge: OpenAIJudge,
        prompt: PromptTemplate,
        against: Literal["reference", "response"] = "reference",
        eps: float = 1e-10,
        soft: bool = False,
    ) -> None:
        if against not in ("reference", "response"):
            raise ConfigError(f"metric.against: expected 'reference' or 'response', got {against!r}")
        super().__init__(name, judge, prompt, "pointwise", eps, soft)
        self.against = against
        self.requires = frozenset({"user_input", against, "retrieved_contexts"})

    async def _score_one(self, sample: RagSample) -> SampleResult:
        why = self._precheck(sample, self.against)
        if why:
            return unscored(sample.id, why)
        answer = getattr(sample, self.against)

        def read(completion: Completion) -> tuple[int, str, float | None]:
            verdict, reason = parse.pointwise(completion.content)
            soft = self._soft_or_hard(completion, [verdict])
            return verdict, reason, None if soft is None else soft[0]

        async def judge(chunk: str) -> list[tuple[int, str, float | None]]:
            messages = self.prompt.messages(question=sample.user_input, answer=answer, context=chunk)
            return await self._draws(messages, "pointwise", read)

        chunks = sample.retrieved_contexts or ()
        outcomes = await asyncio.gather(*(judge(c) for c in chunks), return_exceptions=True)
        failed = [(i, o) for i, o in enumerate(outcomes) if isinstance(o, BaseException)]
        for _, outcome in failed:
            if not isinstance(outcome, JudgeError):
                raise outcome
        if failed:
            i, error = failed[0]
            return unscored(sample.id, f"chunk {i + 1} of {len(chunks)}: {error}")
        draws = [list(d) for d in zip(*outcomes, strict=True)]  # type: ignore[call-overload]
        hard = [[o[0] for o in draw] for draw in draws]
        soft = [[float(o[2]) for o in draw] for draw in draws] if self.soft else None
        verdicts, relevance, agreement = self._vote(hard, soft)
        details: dict[str, Any] = {"reasons": [o[1] for o in draws[0]]}
        if relevance is not None:
            details["relevance"] = relevance
        if agreement is not None:
            details["agreement"] = agreement
        score = average_precision(relevance if relevance is not None else verdicts, self.eps)
        return SampleResult(sample.id, score, verdicts, None, details)


class ContextualPrecision(_Judged):
    """deepeval ``ContextualPrecisionMetric``: one listwise call per sample returning a
    "yes"/"no" verdict and a reason per chunk, average precision with ``eps`` 0, a pass
    threshold, strict mode and an optional second call that explains the score.

    A verdict list whose length differs from the number of chunks is re-asked, then the
    sample is unscored (deepeval scores it silently). An empty retrieval costs no call.

    Args:
        name: The metric option name.
        judge: The judge endpoint (``judge`` group).
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
        judge: OpenAIJudge,
        prompt: PromptTemplate,
        threshold: float | None = 0.5,
        strict_mode: bool = False,
        include_reason: bool = True,
        verbose: bool = False,
        eps: float = 0.0,
        soft: bool = False,
    ) -> None:
        super().__init__(name, judge, prompt, "listwise", eps, soft)
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise ConfigError(f"metric.threshold: expected a number in [0, 1] or null, got {threshold!r}")
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

        def read(completion: Completion) -> tuple[list[tuple[str, str]], list[float] | None]:
            items = parse.listwise(completion.content, len(chunks))
            hard = [1 if v.strip().lower() == "yes" else 0 for v, _ in items]
            return items, self._soft_or_hard(completion, hard)

        messages = self.prompt.messages(
            question=sample.user_input, answer=sample.reference, contexts=chunks
        )
        try:
            draws = await self._draws(messages, "listwise", read)
        except JudgeError as e:
            return unscored(sample.id, str(e))
        hard = [[1 if v.strip().lower() == "yes" else 0 for v, _ in items] for items, _ in draws]
        soft = [probs for _, probs in draws] if self.soft else None
        verdicts, relevance, agreement = self._vote(hard, soft)  # type: ignore[arg-type]
        items = draws[0][0]
        score = average_precision(relevance if relevance is not None else verdicts, self.eps)
        if self.strict_mode and score < 1.0:
            score = 0.0
        details: dict[str, Any] = {
            "reasons": [r for _, r in items],
            "success": None if self.threshold is None else score >= self.threshold,
        }
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
            return await self._ask(messages, "reason", lambda c: parse.reason(c.content))  # type: ignore[no-any-return]
        except JudgeError as e:
            details["reason_error"] = str(e)  # the score stands; only its explanation is missing
            return None
