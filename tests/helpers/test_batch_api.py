"""The test judge's Batch API, driven by the real ``openai`` SDK over HTTP: each line is
answered as the chat endpoint answers it, billed at half price; its faults are knobs."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import openai
import pytest

from helpers.judge_server import JudgeServer

SYSTEM = "You are a strict relevance judge. " * 160  # 5,280 characters: a cacheable prefix
CHUNKS = ["c1", "c2", "c3", "c4"]


def body(chunk: str) -> dict[str, Any]:
    user = f"<question>\nq\n</question>\n<context>\n{chunk}\n</context>"
    return {"model": "judge-x", "temperature": 0,
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
            "response_format": {"type": "json_object"}}


def jsonl(chunks: list[str], prefix: str = "r") -> bytes:
    return "".join(json.dumps({"custom_id": f"{prefix}{i}", "method": "POST",
                               "url": "/v1/chat/completions", "body": body(c)}) + "\n"
                   for i, c in enumerate(chunks)).encode()


def run(server: JudgeServer, work: Callable[[openai.AsyncOpenAI], Awaitable[Any]]) -> Any:
    async def go() -> Any:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-test",
                                      max_retries=0) as c:
            return await work(c)
    return asyncio.run(go())


async def submit(c: openai.AsyncOpenAI, data: bytes) -> Any:
    f = await c.files.create(file=("in.jsonl", data, "application/jsonl"), purpose="batch")
    return await c.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions",
                                  completion_window="24h")


async def lines(c: openai.AsyncOpenAI, file_id: str | None) -> list[dict[str, Any]]:
    if file_id is None:
        return []
    return [json.loads(x) for x in (await c.files.content(file_id)).content.splitlines()]


def test_a_batch_answers_each_line_as_the_chat_endpoint_at_half_the_price() -> None:
    labels = {"c1": 1, "c2": 0, "c3": 1, "c4": 0}

    async def batch(c: openai.AsyncOpenAI) -> tuple[Any, list[dict[str, Any]]]:
        made = await submit(c, jsonl(CHUNKS))
        assert made.status == "validating" and made.request_counts.total == 4
        got = await c.batches.retrieve(made.id)
        return got, await lines(c, got.output_file_id)

    async def chat(c: openai.AsyncOpenAI) -> list[Any]:
        return [await c.chat.completions.create(**body(ch)) for ch in CHUNKS]

    with JudgeServer(labels) as server, JudgeServer(labels) as twin:
        done, out = run(server, batch)
        replies = run(twin, chat)
        assert done.status == "completed" and done.error_file_id is None
        assert (done.request_counts.completed, done.request_counts.failed) == (4, 0)
        assert [x["custom_id"] for x in out] == ["r0", "r1", "r2", "r3"]
        for line, reply in zip(out, replies, strict=True):
            assert line["error"] is None and line["response"]["status_code"] == 200
            answer = line["response"]["body"]
            assert answer["choices"][0]["message"]["content"] == reply.choices[0].message.content
            assert answer["usage"] == reply.usage.model_dump(exclude_none=True)
        # the serialized messages share all but the chunk's last character: "system\x1f",
        # the system prompt, "\x1e", "user\x1f", the question and "<context>\nc"
        shared = 7 + len(SYSTEM) + 1 + 5 + len("<question>\nq\n</question>\n<context>\nc")
        assert shared // 4 // 128 * 128 == 1280
        assert [r.usage.prompt_tokens_details.cached_tokens for r in replies] == [0] + [1280] * 3
        bill, chat_bill = server.stats, twin.stats
        assert bill.batch_billed_requests == bill.billed_requests == 4
        assert bill.billed_prompt_tokens == chat_bill.billed_prompt_tokens
        assert bill.billed_cached_tokens == chat_bill.billed_cached_tokens == 3 * 1280
        assert bill.billed_usd == pytest.approx(chat_bill.billed_usd / 2)
        assert (bill.batches_created, bill.batch_lines_submitted, bill.batch_lines_answered,
                bill.files_uploaded, bill.requests) == (1, 4, 4, 1, 0)


def test_a_batch_takes_its_time_through_every_status() -> None:
    async def go(c: openai.AsyncOpenAI) -> list[str]:
        made = await submit(c, jsonl(CHUNKS[:2]))
        seen = [made.status]
        while seen[-1] != "completed":
            await asyncio.sleep(0.02)
            seen.append((await c.batches.retrieve(made.id)).status)
        return seen

    with JudgeServer(batch_seconds=0.5) as server:
        began = time.monotonic()
        seen = run(server, go)
        assert time.monotonic() - began >= 0.5
    order = ["validating", "in_progress", "finalizing", "completed"]
    assert [s for s in order if s in seen] == order  # each status, in this order
    assert seen == sorted(seen, key=order.index)


def test_failed_lines_go_to_the_error_file_on_their_first_submissions() -> None:
    many = [f"c{i}" for i in range(12)]

    async def go(c: openai.AsyncOpenAI) -> tuple[list[Any], list[Any], list[Any]]:
        first = await c.batches.retrieve((await submit(c, jsonl(many))).id)
        out, err = await lines(c, first.output_file_id), await lines(c, first.error_file_id)
        again = await c.batches.retrieve((await submit(c, jsonl(many))).id)
        return out, err, await lines(c, again.output_file_id)

    with JudgeServer(batch_fail_lines=0.5, batch_fail_times=1, batch_fail_status=503) as server:
        out, err, again = run(server, go)
        assert 0 < len(err) < 12 and len(out) + len(err) == 12
        for line in err:
            assert line["response"]["status_code"] == 503 and line["error"] is None
            assert "error" in line["response"]["body"]
        assert len(again) == 12  # the second submission of each line is answered
        assert server.stats.batch_lines_failed == len(err)
        assert server.stats.billed_requests == len(out) + 12


@pytest.mark.parametrize(("outcome", "status", "code"), [
    ("expire", "expired", "batch_expired"), ("cancel", "cancelled", "batch_cancelled")])
def test_an_expired_or_cancelled_batch_answers_part_of_its_lines(
    outcome: str, status: str, code: str,
) -> None:
    async def go(c: openai.AsyncOpenAI) -> tuple[list[str], list[Any], list[Any]]:
        made = await submit(c, jsonl(CHUNKS))
        statuses = []
        while not statuses or statuses[-1] not in ("expired", "cancelled"):
            got = await c.batches.retrieve(made.id)
            statuses.append(got.status)
        return statuses, await lines(c, got.output_file_id), await lines(c, got.error_file_id)

    with JudgeServer(batch_script=[outcome], batch_answered=0.5) as server:
        statuses, out, err = run(server, go)
        assert statuses == ([status] if outcome == "expire" else ["cancelling", status])
        assert [x["custom_id"] for x in out] == ["r0", "r1"]
        assert [x["custom_id"] for x in err] == ["r2", "r3"]
        assert all(x["response"] is None and x["error"]["code"] == code for x in err)
        assert server.stats.billed_requests == 2


def test_a_client_cancels_a_running_batch() -> None:
    async def go(c: openai.AsyncOpenAI) -> tuple[str, str]:
        made = await submit(c, jsonl(CHUNKS))
        asked = await c.batches.cancel(made.id)
        return asked.status, (await c.batches.retrieve(made.id)).status

    with JudgeServer(batch_seconds=60) as server:
        assert run(server, go) == ("cancelling", "cancelled")


def test_a_forgotten_batch_is_404_and_never_answered() -> None:
    async def go(c: openai.AsyncOpenAI) -> None:
        made = await submit(c, jsonl(CHUNKS))
        with pytest.raises(openai.NotFoundError):
            await c.batches.retrieve(made.id)
        assert (await c.batches.list()).data == []

    with JudgeServer(batch_script=["forget"]) as server:
        run(server, go)
        assert server.stats.batches_created == 1 and server.stats.batch_lines_submitted == 4
        assert server.stats.billed_requests == 0


@pytest.mark.parametrize(("knobs", "data", "code"), [
    ({"batch_script": ["fail"]}, jsonl(CHUNKS), None),
    ({"batch_max_lines": 3}, jsonl(CHUNKS), "too_many_requests"),
    ({}, jsonl(CHUNKS[:1]) + b"not json\n", "invalid_json_line"),
    ({}, jsonl(CHUNKS[:1]) + jsonl(CHUNKS[:1]), "duplicate_custom_id"),
])
def test_a_batch_that_fails_validation_answers_nothing(knobs: dict[str, Any], data: bytes,
                                                       code: str | None) -> None:
    async def go(c: openai.AsyncOpenAI) -> Any:
        return await c.batches.retrieve((await submit(c, data)).id)

    with JudgeServer(**knobs) as server:
        got = run(server, go)
        assert got.status == "failed" and got.output_file_id is None
        if code is not None:
            assert [e.code for e in got.errors.data] == [code]
        assert server.stats.billed_requests == 0


def test_an_endpoint_without_the_batch_api_answers_404() -> None:
    async def go(c: openai.AsyncOpenAI) -> None:
        with pytest.raises(openai.NotFoundError):
            await c.batches.list(limit=1)
        with pytest.raises(openai.NotFoundError):
            await c.files.create(file=("in.jsonl", jsonl(CHUNKS), "application/jsonl"),
                                 purpose="batch")

    with JudgeServer(batch_api=False) as server:
        run(server, go)
        assert server.stats.files_uploaded == 0


def test_rate_limits_on_the_batch_endpoints() -> None:
    async def go(c: openai.AsyncOpenAI) -> Any:
        for _ in range(2):
            with pytest.raises(openai.RateLimitError) as refused:
                await c.batches.list(limit=1)
        headers = refused.value.response.headers
        assert headers["retry-after"] == "7"
        assert headers["x-ratelimit-remaining-requests"] == "0"
        return await c.batches.list(limit=1)

    with JudgeServer(batch_429=2, retry_after="7") as server:
        assert run(server, go).data == []
        assert server.stats.batch_refused == 2


def test_the_list_is_newest_first_in_pages() -> None:
    async def go(c: openai.AsyncOpenAI) -> None:
        made = [await submit(c, jsonl(CHUNKS[:1], f"b{i}-")) for i in range(3)]
        page = await c.batches.list(limit=2)
        assert [b.id for b in page.data] == [made[2].id, made[1].id] and page.has_more
        rest = await c.batches.list(limit=2, after=made[1].id)
        assert [b.id for b in rest.data] == [made[0].id] and not rest.has_more
        assert rest.data[0].status == "completed"  # listing moves them on too

    with JudgeServer() as server:
        run(server, go)


@pytest.mark.parametrize(("purpose", "size", "said"), [
    ("fine-tune", 10, "purpose must be 'batch'"), ("batch", 10_000, "file too large")])
def test_uploads_the_batch_api_refuses(purpose: str, size: int, said: str) -> None:
    async def go(c: openai.AsyncOpenAI) -> None:
        with pytest.raises(openai.BadRequestError, match=said):
            await c.files.create(file=("in.jsonl", b"x" * size, "application/jsonl"),
                                 purpose=purpose)  # type: ignore[arg-type]

    with JudgeServer(batch_max_bytes=1000) as server:
        run(server, go)
        assert server.stats.files_uploaded == 0
