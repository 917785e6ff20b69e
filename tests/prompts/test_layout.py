"""Requests are laid out shared part first, the chunk last, so a provider's prefix cache serves
what they share: the instructions and examples (every request of a run), the question and
answer (every request of a sample). Read from the requests the test judge received."""

from __future__ import annotations

import os

import pytest
from helpers.judge import judge, prompt, sample, score
from helpers.judge_server import JudgeServer

from harness.metrics.contextual_precision import ContextualPrecision
from harness.metrics.llm import LLMContextPrecision

#: OpenAI caches a prompt prefix from 1,024 tokens; a token is 4 characters here.
CACHE_FROM_CHARS = 1024 * 4

POINTWISE = ["llm_with_reference", "llm_without_reference", "llm_with_reference_cached"]


def contents(body: dict) -> str:
    """Everything a model reads of a request, in order: each message's role and content."""
    return "".join(f"<{m['role']}>{m['content']}" for m in body["messages"])


def judged_bodies(server: JudgeServer, option: str, samples: list, **judge_kw: object) -> list:
    """The request bodies, in the order received, of a pointwise run with prompt ``option``."""
    against = "response" if option == "llm_without_reference" else "reference"
    metric = LLMContextPrecision(option, judge(server, **judge_kw), prompt(option),
                                 against=against)
    results = score(metric, samples)
    assert all(r.score is not None for r in results), [r.error for r in results]
    return [r["body"] for r in server.requests]


def three_samples() -> list:
    return [sample([f"chunk {k} of sample {i}: facts {i * k}" for k in range(3)], str(i),
                   question=f"Question {i}: what is the value of item {i}?",
                   answer=f"The value of item {i} is {i * 7}.")
            for i in range(3)]


@pytest.mark.parametrize("option", POINTWISE)
def test_a_samples_requests_share_every_byte_before_the_chunk(judge_server, option):
    samples = three_samples()
    bodies = judged_bodies(judge_server, option, samples)
    assert len(bodies) == 9
    instructions = {repr(b["messages"][:-1]) for b in bodies}
    assert len(instructions) == 1  # system and examples: the same for every request
    for s in samples:
        heads, tails = set(), set()
        for chunk in s.retrieved_contexts:
            (body,) = [b for b in bodies if chunk in b["messages"][-1]["content"]]
            last = body["messages"][-1]["content"]
            at = last.index(chunk)
            heads.add(last[:at])
            tails.add(last[at + len(chunk):])
            # the question and the answer come before the chunk, never after it
            assert s.user_input in last[:at]
            assert (s.reference or "") in last[:at]
        assert len(heads) == 1 and len(tails) == 1  # the chunk is all that differs
        assert len(next(iter(tails))) < 20  # only the closing tag follows the chunk


def test_the_cached_option_shares_past_1024_tokens_with_every_earlier_request(judge_server):
    bodies = judged_bodies(judge_server, "llm_with_reference_cached", three_samples())
    texts = [contents(b) for b in bodies]
    for i in range(1, len(texts)):
        shared = max(len(os.path.commonprefix([texts[i], earlier])) for earlier in texts[:i])
        assert shared >= CACHE_FROM_CHARS, (i, shared)


def test_todays_prompt_shares_less_than_a_provider_caches(judge_server):
    # what makes the cached option worth having: the default's shared part stays below
    bodies = judged_bodies(judge_server, "llm_with_reference", three_samples())
    texts = [contents(b) for b in bodies]
    shared = max(len(os.path.commonprefix([a, b])) for a in texts for b in texts if a is not b)
    assert 0 < shared < CACHE_FROM_CHARS


def test_a_listwise_request_puts_its_chunks_after_question_and_answer(judge_server):
    samples = three_samples()
    metric = ContextualPrecision("contextual_precision", judge(judge_server),
                                 prompt("contextual_precision"), include_reason=False)
    score(metric, samples)
    bodies = [r["body"] for r in judge_server.requests]
    assert len({repr(b["messages"][:-1]) for b in bodies}) == 1
    for s, body in zip(samples, sorted(bodies, key=lambda b: b["messages"][-1]["content"]),
                       strict=True):
        last = body["messages"][-1]["content"]
        first_chunk = last.index(s.retrieved_contexts[0])
        assert last.index(s.user_input) < first_chunk
        assert last.index(s.reference or "") < first_chunk


def test_a_samples_requests_go_out_one_after_the_other(judge_server):
    samples = three_samples()
    bodies = judged_bodies(judge_server, "llm_with_reference", samples, max_concurrency=1,
                           pacing="fixed")
    owner = []
    for body in bodies:
        last = body["messages"][-1]["content"]
        owner.append(next(s.id for s in samples if s.user_input in last))
    # each sample's three requests, then the next sample's: never interleaved
    assert owner == ["0"] * 3 + ["1"] * 3 + ["2"] * 3
