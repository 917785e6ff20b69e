"""What the LLM-judged variants share: a judge, a prompt, a private event loop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from functools import partial
from pathlib import Path
from typing import Annotated, Any, TypeVar, cast

from harness.core.aio import LoopThread
from harness.core.boundary import running
from harness.core.capabilities import conform
from harness.core.errors import ConfigError
from harness.core.protocols import JUDGE, Judge, Kind, Metric, OnDone
from harness.core.types import Completion, JudgeRequest, JudgeSubject, RagSample, SampleResult
from harness.core.validation import Range, check_value
from harness.judges.replies import parse
from harness.judges.transport import turns
from harness.metrics.base import BaseMetric, missing_fields
from harness.metrics.ranking import average_precision
from harness.prompts.template import PromptTemplate

T = TypeVar("T")


class Lineup:
    """Judged together, the variants whose samples make calls one after the other (their
    verdicts, then an explanation: ``include_reason``) submit each batch first: their first
    calls take the endpoint's first free permits (``turns`` orders the waiting ones), so a
    chain's second call does not start a round trip after the others' calls have."""

    def __init__(self) -> None:
        self.submitting = 0  # leads still submitting this batch
        self.submitted: asyncio.Event | None = None

    @contextlib.asynccontextmanager
    async def batch(self, lead: bool) -> AsyncIterator[None]:
        """Around one member's submission of a batch: a lead's is counted from its task's
        first step; another's starts once the leads' are done (their tasks, created with
        its own, take their first step first)."""
        if not lead:
            await asyncio.sleep(0)
            if self.submitting > 0 and self.submitted is not None:
                await self.submitted.wait()
            yield
            return
        if self.submitting <= 0:  # the batch's first lead: an event of the running loop
            self.submitting, self.submitted = 0, asyncio.Event()
        self.submitting += 1
        try:
            yield
        finally:
            self.submitting -= 1
            if self.submitting <= 0 and self.submitted is not None:
                self.submitted.set()


class JudgedMetric(BaseMetric):
    """A context-precision variant whose verdicts come from a ``Judge``.

    Subclasses set ``requires`` and implement ``_score_one``; samples of a batch are
    scored concurrently (at most ``judge.max_concurrency`` calls in flight for the
    OpenAI judge) and reported through ``on_done`` as each one finishes.
    """

    #: The runner validates the whole dataset and checks the endpoint before any call.
    prevalidate = True
    #: A sample's verdicts are followed by one more call that explains its score (set by
    #: variants that can): its verdicts go first when requests wait (``turns``).
    include_reason = False

    def __init__(
        self, name: str, judge: Judge, prompt: PromptTemplate, mode: str, eps: float, soft: bool
    ) -> None:
        if judge is None or prompt is None:
            raise ConfigError(f"metric {name}: needs a judge and a prompt")
        if prompt.mode != mode:
            raise ConfigError(
                f"metric {name} judges {mode}, but prompt {prompt.version} is {prompt.mode}; "
                f"choose a {mode} prompt"
            )
        check_value("metric.eps", Annotated[float, Range(ge=0)], eps)
        if not isinstance(soft, bool):
            raise ConfigError(f"metric.soft: expected true or false, got {soft!r}")
        judge = conform(judge, JUDGE, f"metric {name}: judge")
        if soft and judge.top_logprobs == 0:  # soft reads the candidates
            raise ConfigError(
                "metric.soft=true reads P(relevant) from the judge's top logprobs, but "
                "judge.top_logprobs=0 asks for none; set judge.top_logprobs=5 "
                "(or metric.soft=false)"
            )
        self.name, self.judge, self.prompt, self.eps, self.soft = name, judge, prompt, eps, soft
        self.human_score = partial(average_precision, eps=float(eps))
        #: a judge that sends through a Batch API scores a batch's worth at once
        self.batch_size = judge.batch_samples
        #: scored by this class's own loop, so it can share one with the run's other variants
        self.joins_loop = type(self).score_batch is JudgedMetric.score_batch
        self._loop = LoopThread()
        self._lineup: Lineup | None = None  # set by judge_together
        self._agreement: list[float] = []

    async def _ask(
        self, messages: list[dict[str, str]], kind: Kind, read: Callable[[Completion], T],
        draw: int = 0, items: int | None = None, subject: JudgeSubject | None = None,
    ) -> T:
        request = JudgeRequest(messages, kind, logprobs=self.soft and kind != "reason",
                               draw=draw, prompt_sha=self.prompt.sha256, variant=self.name,
                               items=items, subject=subject)
        with turns.turn(after=int(self.include_reason and kind != "reason")):
            return await self.judge.ask(request, read)

    async def _draws(
        self, messages: list[dict[str, str]], kind: Kind, read: Callable[[Completion], T],
        items: int | None = None, subject: JudgeSubject | None = None,
    ) -> list[T]:
        """``judge.samples`` independent answers (one unless the judge samples); ``items``:
        the number of verdicts each listwise answer must hold; ``subject``: what the
        prompt renders, as the sample holds it."""
        if self.judge.samples == 1:
            return [await self._ask(messages, kind, read, items=items, subject=subject)]
        return list(await asyncio.gather(*(
            self._ask(messages, kind, read, draw, items, subject)
            for draw in range(self.judge.samples)
        )))

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
        """Score samples concurrently, calling ``on_done(index, result)`` as each finishes."""
        with running(f"the judge of metric {self.name}"):
            return self._loop.run(self._score_all(samples, on_done))

    @property
    def loop(self) -> LoopThread:
        """The event loop this metric's judge calls run on (a panel's members share one)."""
        return self._loop

    def scoring(self, samples: Sequence[RagSample], on_done: OnDone | None = None
                ) -> Coroutine[Any, Any, list[SampleResult]]:
        """``score_batch`` as a coroutine for ``loop``: a panel runs its judged members'
        together on their one loop."""
        return self._score_all(samples, on_done)

    async def _score_all(
        self, samples: Sequence[RagSample], on_done: OnDone | None
    ) -> list[SampleResult]:
        async def one(index: int, sample: RagSample) -> SampleResult:
            with turns.turn(sample=index):  # an earlier sample's waiting requests go first
                result = await self._score_one(sample)
            if on_done is not None:
                on_done(index, result)
            return result

        tasks: list[asyncio.Future[SampleResult]] = []
        failed = asyncio.Event()

        def watch(task: asyncio.Future[SampleResult]) -> None:
            if not task.cancelled() and task.exception() is not None:
                failed.set()

        lineup = self._lineup
        try:
            async with (lineup.batch(self.include_reason) if lineup is not None
                        else contextlib.nullcontext()):
                for i, sample in enumerate(samples):
                    tasks.append(asyncio.ensure_future(one(i, sample)))
                    tasks[-1].add_done_callback(watch)
                    # one sample at a time: the first requests go out while later samples
                    # are still being rendered, not after all of them
                    await asyncio.sleep(0)
                    if failed.is_set():
                        break
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

    def stats(self) -> dict[str, float | None]:
        """The judge counters of this run (and the draws' agreement when it samples)."""
        data = self.judge.stats.as_dict()
        if self._agreement:
            data["agreement"] = sum(self._agreement) / len(self._agreement)
        return data

    def judges(self) -> dict[str, Any]:
        """This variant's judge, by its name (``Metric.judges``; ``run.dry_run`` makes it
        run dry)."""
        return {self.name: self.judge}

    def describe(self) -> dict[str, Any]:
        """The judge and prompt, for outputs."""
        return {"judge": self.judge.describe(), "prompt": self.prompt.describe()}

    def write_artifacts(self, out_dir: Path) -> list[Path]:
        """The prompt as ``prompt.yaml``."""
        path = Path(out_dir) / "prompt.yaml"
        path.write_text(self.prompt.to_yaml(), "utf-8")
        return [path]

    def close(self) -> None:
        """Close the judge's clients and the loop."""
        try:
            self._loop.run(self.judge.aclose())
        finally:
            self._loop.close()


def judge_together(members: Sequence[Metric]) -> list[int]:
    """Put the judged ones of ``members`` (a panel's) on one event loop, so that their batches
    are judged at once, and their judges that send to one endpoint with the same settings
    under one pacing budget (``share_pacing``: they share its capacity); return their
    indices. A member whose loop already runs, or that scores its own way (a subclass's
    ``score_batch``), is left alone."""
    judged = {i: cast(JudgedMetric, m) for i, m in enumerate(members) if m.joins_loop}
    together = [i for i, m in judged.items() if not m.loop.started]
    if len(together) < 2:
        return []
    first = judged[together[0]]
    chains = {judged[i].include_reason for i in together}
    lineup = Lineup() if len(chains) > 1 else None  # some make two calls a sample, some one
    first._lineup = lineup
    for n, i in enumerate(together[1:], 1):
        member = judged[i]
        member._loop.close()  # never started: nothing to stop
        member._loop, member._lineup = first.loop.shared(), lineup
        for earlier in together[:n]:
            if judged[earlier].judge.share_pacing(member.judge):
                break
    return together
