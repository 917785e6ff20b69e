"""A judged run's rows reach ``samples.jsonl`` as each sample has every variant's result,
not when a whole batch has (an interrupted run keeps what was judged).

The loop writes rows in input order, a row once its sample has every variant's result. The
judge's requests used to wait critical path first across the whole batch: every sample's
``contextual_precision`` verdicts (their explanation follows) before any other call, so no
sample was finished, and no row written, until the batch's verdicts were all in: a run of 60
samples stopped 4 s in kept no row though it had paid for hundreds of verdicts. Counted here
in judge requests (no clock): the requests the server had received when each row could be
written, against the calls the samples up to it make, plus the calls in flight.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
import yaml
from helpers.judge_server import JudgeServer
from helpers.paths import ROOT

from harness.core.types import RagSample, SampleResult
from harness.judges.openai_chat import OpenAIJudge
from harness.metrics.contextual_precision import ContextualPrecision
from harness.metrics.llm import LLMContextPrecision
from harness.metrics.panel import Panel
from harness.prompts.template import PromptTemplate

N, CHUNKS, SLOTS = 16, 3, 3
#: Judge calls one sample makes, per variant: a verdict per chunk; verdicts, then a reason.
CALLS = {"llm_with_reference": CHUNKS, "contextual_precision": 2}


def samples() -> list[RagSample]:
    return [RagSample(id=f"q{i}", user_input=f"What is item {i}?", reference=f"Item {i}.",
                      response=f"Item {i}.",
                      retrieved_contexts=tuple(f"passage {k} about item {i}"
                                               for k in range(CHUNKS)))
            for i in range(N)]


def variant(name: str, base_url: str) -> Any:
    data = yaml.safe_load((ROOT / "conf" / "prompt" / f"{name}.yaml").read_text())
    data.pop("_target_")
    judge = OpenAIJudge(model="test-judge", base_url=base_url, api_key_env=None, cache=False,
                        max_concurrency=SLOTS, pacing="fixed")
    kind = ContextualPrecision if name == "contextual_precision" else LLMContextPrecision
    return kind(name, judge, PromptTemplate(**data))


def requests_per_row(names: Sequence[str]) -> list[int]:
    """The requests the judge had received when each row (in input order) could be written."""
    labels = {f"passage {k} about item {i}": int((i + k) % 2 == 0)
              for i in range(N) for k in range(CHUNKS)}
    with JudgeServer(labels, latency_ms=2) as server:
        members = [variant(name, server.base_url) for name in names]
        metric: Any = members[0] if len(members) == 1 else Panel(members, list(names))
        metric.preflight()
        server.reset_stats()
        finished: dict[int, int] = {}
        written: list[int] = []

        def on_done(index: int, result: SampleResult) -> None:
            assert result.score is not None, result.error
            finished[index] = server.stats.requests
            while len(written) in finished:  # the loop writes rows in input order
                written.append(finished[len(written)])

        try:
            metric.score_batch(samples(), on_done)
        finally:
            metric.close()
    assert len(written) == N
    return written


@pytest.mark.parametrize("names", [
    ("llm_with_reference", "contextual_precision"),
    ("contextual_precision", "llm_with_reference"),
    ("contextual_precision",),
    ("llm_with_reference",),
])
def test_each_row_is_written_once_its_samples_calls_are_answered(names: tuple[str, ...]
                                                                   ) -> None:
    per_sample = sum(CALLS[name] for name in names)
    got = requests_per_row(names)
    # row i: the calls of samples 0..i, and a few rounds of the permits on later samples
    # while its own calls, one after the other, are answered
    assert all(sent <= per_sample * (i + 1) + 3 * SLOTS for i, sent in enumerate(got)), got
    # the first row before the batch's last sample was even asked about, not after every
    # sample's contextual_precision verdicts (N of them) went out
    assert got[0] < N, got
