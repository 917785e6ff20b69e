"""The test judge itself, driven by the real ``openai`` SDK over HTTP."""

from __future__ import annotations

import asyncio
import json
import math
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import openai
import pytest

from helpers.billing import content_chars
from helpers.judge_server import JudgeServer, load_labels, parse_prompt

HERE = Path(__file__).resolve().parent
SYSTEM = "You are a strict relevance judge. " * 40  # ~1300 chars: a prefix worth caching
SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "verdict",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"reason": {"type": "string"}, "verdict": {"type": "integer"}},
            "required": ["reason", "verdict"],
            "additionalProperties": False,
        },
    },
}


def pointwise(question: str, chunk: str, answer: str | None = "An answer.") -> list[dict]:
    """Messages shaped like the harness's pointwise prompt, with a few-shot example first."""
    ans = f"<answer>\n{answer}\n</answer>\n" if answer is not None else ""
    shot = "<question>\nshot q\n</question>\n<context>\nshot chunk\n</context>"
    user = f"Judge this.\n<question>\n{question}\n</question>\n{ans}<context>\n{chunk}\n</context>"
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": shot},
        {"role": "assistant", "content": '{"reason": "shot", "verdict": 0}'},
        {"role": "user", "content": user},
    ]


def listwise(question: str, chunks: list[str]) -> list[dict]:
    """Messages shaped like the harness's listwise prompt."""
    blocks = "\n".join(
        f'<context index="{i}">\n{c}\n</context>' for i, c in enumerate(chunks, start=1)
    )
    user = f"<question>\n{question}\n</question>\n<contexts>\n{blocks}\n</contexts>"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def client(server: JudgeServer, **kw: Any) -> openai.AsyncOpenAI:
    kw.setdefault("api_key", "sk-test")
    kw.setdefault("max_retries", 0)
    return openai.AsyncOpenAI(base_url=server.base_url, **kw)


async def ask(c: openai.AsyncOpenAI, messages: list[dict], **kw: Any) -> Any:
    return await c.chat.completions.create(model="judge-x", messages=messages, **kw)


def fenced_json(content: str) -> Any:
    m = re.search(r"```json\n(.*?)\n```", content, re.S)
    assert m, content
    return json.loads(m.group(1))


# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["httpx", "aiohttp"])
def test_models_and_pointwise_both_modes(transport: str) -> None:
    async def go(server: JudgeServer) -> None:
        kw = {"http_client": openai.DefaultAioHttpClient()} if transport == "aiohttp" else {}
        async with client(server, **kw) as c:
            models = await c.models.list()
            assert [m.id for m in models.data] == ["test-judge"]

            r = await ask(c, pointwise("q", "good chunk"), response_format=SCHEMA)
            assert r.object == "chat.completion"
            assert r.model == "judge-x"  # echoes the request's model
            choice = r.choices[0]
            assert choice.finish_reason == "stop" and choice.message.role == "assistant"
            data = json.loads(choice.message.content)
            assert data["verdict"] == 1 and isinstance(data["reason"], str)

            r = await ask(c, pointwise("q", "bad chunk"))  # text mode: prose + fenced JSON
            content = r.choices[0].message.content
            with pytest.raises(json.JSONDecodeError):
                json.loads(content)
            assert fenced_json(content)["verdict"] == 0

            r = await ask(c, pointwise("q", "good chunk"), response_format={"type": "json_object"})
            assert json.loads(r.choices[0].message.content)["verdict"] == 1

    with JudgeServer({"good chunk": 1, "bad chunk": 0}) as server:
        asyncio.run(go(server))
        assert server.stats.ok == 3 and server.stats.requests == 3
        assert server.stats.unknown_chunks == 0
        assert server.requests[0]["status"] == 200
        assert server.requests[0]["body"]["model"] == "judge-x"
        assert server.requests[0]["headers"]["authorization"] == "Bearer sk-test"


def test_unknown_path_is_404() -> None:
    with JudgeServer() as server, pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(server.base_url + "/embeddings", timeout=5)
    assert err.value.code == 404
    assert "error" in json.loads(err.value.read())


def test_listwise_order_labels_and_unknown_chunks() -> None:
    tricky = 'a chunk with {"verdict": 0} braces, "quotes"\nand a second line'
    chunks = ["c1", tricky, "c3", "never labelled"]
    labels = {"c1": 0, tricky: 1, "c3": 0.7}

    async def go(server: JudgeServer) -> list[dict]:
        async with client(server) as c:
            r = await ask(c, listwise("q", chunks), response_format={"type": "json_object"})
            return json.loads(r.choices[0].message.content)["verdicts"]

    with JudgeServer(labels) as server:
        verdicts = asyncio.run(go(server))
        assert [v["verdict"] for v in verdicts] == ["no", "yes", "yes", "no"]
        assert all(v["reason"] for v in verdicts)
        assert server.stats.unknown_chunks == 1

        server.configure(default_label=1)
        assert [v["verdict"] for v in asyncio.run(go(server))][-1] == "yes"


def test_question_chunk_label_takes_precedence() -> None:
    labels = {"shared chunk": 0, ("special q", "shared chunk"): 1}

    async def go(server: JudgeServer) -> list[int]:
        async with client(server) as c:
            out = []
            for q in ("special q", "other q"):
                r = await ask(c, pointwise(q, "shared chunk"), response_format=SCHEMA)
                out.append(json.loads(r.choices[0].message.content)["verdict"])
            return out

    with JudgeServer(labels) as server:
        assert asyncio.run(go(server)) == [1, 0]


def test_parse_prompt_strips_one_newline_and_reads_last_user() -> None:
    msgs = pointwise("q", "\n  padded chunk  \n", answer=None)
    prompt = parse_prompt({"messages": msgs})
    assert prompt.kind == "pointwise" and prompt.question == "q" and prompt.answer is None
    assert prompt.chunks == ["\n  padded chunk  \n"]


def test_logprobs_concatenate_and_give_log_p() -> None:
    async def go(server: JudgeServer) -> None:
        async with client(server) as c:
            # float label 0.8 -> verdict 1, logprob log(0.8); text mode
            r = await ask(c, pointwise("q", "maybe"), logprobs=True, top_logprobs=3)
            choice = r.choices[0]
            tokens = choice.logprobs.content
            assert "".join(t.token for t in tokens) == choice.message.content
            (vt,) = [t for t in tokens if len(t.top_logprobs) == 2]
            assert vt.token == "1"
            assert vt.logprob == pytest.approx(math.log(0.8))
            top = {t.token: t.logprob for t in vt.top_logprobs}
            assert top == pytest.approx({"1": math.log(0.8), "0": math.log(0.2)})
            assert all(t.logprob == 0.0 for t in tokens if t is not vt)

            # listwise: yes/no words are their own tokens; int labels give 0.97/0.03
            r = await ask(c, listwise("q", ["maybe", "no way"]), logprobs=True,
                          response_format={"type": "json_object"})
            choice = r.choices[0]
            tokens = choice.logprobs.content
            assert "".join(t.token for t in tokens) == choice.message.content
            verdict_tokens = [t for t in tokens if len(t.top_logprobs) == 2]
            assert [t.token for t in verdict_tokens] == ["yes", "no"]
            assert verdict_tokens[1].logprob == pytest.approx(math.log(0.97))
            assert {t.token for t in verdict_tokens[1].top_logprobs} == {"yes", "no"}

            r = await ask(c, pointwise("q", "maybe"))
            assert r.choices[0].logprobs is None

    with JudgeServer({"maybe": 0.8, "no way": 0}) as server:
        asyncio.run(go(server))


def test_usage_counts_four_characters_a_token() -> None:
    async def go(server: JudgeServer) -> Any:
        async with client(server) as c:
            return await ask(c, pointwise("q", "c1"), response_format=SCHEMA)

    with JudgeServer({"c1": 1}) as server:
        first = asyncio.run(go(server))
    chars = sum(len(m["content"]) for m in pointwise("q", "c1"))
    assert first.usage.prompt_tokens == math.ceil(chars / 4)
    content = first.choices[0].message.content
    assert first.usage.completion_tokens == math.ceil(len(content) / 4)
    assert first.usage.total_tokens == first.usage.prompt_tokens + first.usage.completion_tokens
    assert first.usage.prompt_tokens_details.cached_tokens == 0


#: Reply schemas without reasons, as the harness sends for a ``reasons: false`` prompt.
BARE_POINT = {"type": "object", "properties": {"verdict": {"type": "integer", "enum": [0, 1]}},
              "required": ["verdict"], "additionalProperties": False}
BARE_LIST = {"type": "object", "properties": {"verdicts": {
    "type": "array", "minItems": 2, "maxItems": 2,
    "items": {"type": "object", "properties": {"verdict": {"type": "string"}},
              "required": ["verdict"], "additionalProperties": False}}},
    "required": ["verdicts"], "additionalProperties": False}
WITH_REASONS_LIST = json.loads(json.dumps(BARE_LIST).replace(
    '"properties": {"verdict"', '"properties": {"reason": {"type": "string"}, "verdict"'))


def strict(schema: dict) -> dict:
    return {"type": "json_schema", "json_schema": {"name": "v", "strict": True, "schema": schema}}


@pytest.mark.parametrize(("fmt", "content"), [
    (strict(BARE_POINT), '{"verdict": 1}'),
    ({"type": "json_object", "schema": BARE_POINT}, '{"verdict": 1}'),  # llama.cpp's form
    (SCHEMA, '{"reason": "The context is relevant to the question.", "verdict": 1}'),
    ({"type": "json_object"}, '{"reason": "The context is relevant to the question.", '
                              '"verdict": 1}'),  # no schema: reasons as before
])
def test_a_pointwise_reply_holds_what_its_schema_allows(fmt: dict, content: str) -> None:
    async def go(server: JudgeServer) -> Any:
        async with client(server) as c:
            return await ask(c, pointwise("q", "good"), response_format=fmt, logprobs=True)

    with JudgeServer({"good": 1}) as server:
        reply = asyncio.run(go(server))
        billed = server.stats.billed_completion_tokens
    choice = reply.choices[0]
    assert choice.message.content == content
    assert "".join(t.token for t in choice.logprobs.content) == content
    assert reply.usage.completion_tokens == billed == math.ceil(len(content) / 4)


@pytest.mark.parametrize(("fmt", "reasons"), [
    (strict(BARE_LIST), False),
    ({"type": "json_object", "schema": BARE_LIST}, False),
    (strict(WITH_REASONS_LIST), True),  # a reason inside the items' schema counts
    (None, True),  # text mode
])
def test_a_listwise_reply_holds_what_its_schema_allows(fmt: dict | None, reasons: bool) -> None:
    async def go(server: JudgeServer) -> Any:
        async with client(server) as c:
            kw = {} if fmt is None else {"response_format": fmt}
            return await ask(c, listwise("q", ["good", "bad"]), **kw)

    with JudgeServer({"good": 1, "bad": 0}) as server:
        content = asyncio.run(go(server)).choices[0].message.content
    data = fenced_json(content) if fmt is None else json.loads(content)
    if reasons:
        assert [v["verdict"] for v in data["verdicts"]] == ["yes", "no"]
        assert all(set(v) == {"reason", "verdict"} for v in data["verdicts"])
    else:
        assert content == '{"verdicts": [{"verdict": "yes"}, {"verdict": "no"}]}'


def test_a_batch_line_holds_what_its_schema_allows() -> None:
    body = {"model": "m", "messages": listwise("q", ["good", "bad"]),
            "response_format": strict(BARE_LIST)}
    with JudgeServer({"good": 1, "bad": 0}) as server:
        status, reply = server.answer_line(body)
    assert status == 200
    assert reply["choices"][0]["message"]["content"] == \
        '{"verdicts": [{"verdict": "yes"}, {"verdict": "no"}]}'


def chat(system: str, user: str) -> list[dict]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def cached_of(server: JudgeServer, *prompts: list[dict]) -> list[int]:
    """The cached tokens the server reports for each prompt, asked in turn."""
    async def go() -> list[int]:
        async with client(server) as c:
            return [(await ask(c, m)).usage.prompt_tokens_details.cached_tokens for m in prompts]
    return asyncio.run(go())


A6000 = "a" * 6000


def test_cached_tokens_are_the_shared_prefix_from_1024_tokens_in_steps_of_128() -> None:
    # the prompts share the system text and "<context>\n", then the chunks differ: 6000 + 10
    # = 6010 characters of content = 1502 whole tokens -> 1408 (a multiple of 128)
    shared = 6000 + len("<context>\n")
    assert shared // 4 // 128 * 128 == 1408
    with JudgeServer() as server:
        assert cached_of(server, chat(A6000, "<context>\nc1\n</context>"),
                         chat(A6000, "<context>\nc2\n</context>"),
                         chat(A6000, "<context>\nc1\n</context>")) == [0, 1408, 1408]
        # 4000 shared characters: 1000 tokens, under 1,024: none cached
        assert cached_of(server, chat("b" * 3990 + "1", "<context>\nx\n</context>"),
                         chat("b" * 3990 + "2", "<context>\nx\n</context>")) == [0, 0]
        # roles count: the same text from another role shares only up to the role
        assert cached_of(server, [{"role": "user",
                                   "content": A6000 + "<context>\nq\n</context>"}]) == [0]


def test_cached_tokens_come_from_any_earlier_prompt_not_only_the_last() -> None:
    x, y = "x" * 6000, "y" * 6000

    def user(n: int) -> str:
        return f"{n}<context>\nc\n</context>"

    with JudgeServer() as server:
        assert cached_of(server, chat(x, user(1)), chat(y, user(2)), chat("z", user(3)),
                         chat(x, user(4))) == [0, 0, 0, 6000 // 4 // 128 * 128]
        server.clear_prefix_cache()
        assert cached_of(server, chat(x, user(5))) == [0]


def test_cache_knobs_change_threshold_and_step() -> None:
    with JudgeServer(cache_min_tokens=0, cache_step=1) as server:
        first, second = cached_of(server, chat("s" * 400, "u1<context>\nc\n</context>"),
                                  chat("s" * 400, "u2<context>\nc\n</context>"))
    assert (first, second) == (0, (400 + len("u")) // 4)


def test_cached_tokens_count_the_shared_content_not_the_roles() -> None:
    # four messages shared, then the last one's "u" before the chunk's number: 400 + 40 +
    # 40 + 1 = 481 characters of content = 120 tokens (roles and marks would add 30 more)
    def asked(n: int) -> list[dict]:
        return [{"role": "system", "content": "s" * 400}, {"role": "user", "content": "a" * 40},
                {"role": "assistant", "content": "b" * 40},
                {"role": "user", "content": f"u{n}<context>\nc\n</context>"}]

    with JudgeServer(cache_min_tokens=0, cache_step=1) as server:
        assert cached_of(server, asked(1), asked(2)) == [0, 120]
    assert content_chars(["system", "user"], ["ab", "cd"], len("system\x1fab\x1euser\x1fc")) == 3
    assert content_chars(["system", "user"], ["ab", "cd"], len("system\x1fab\x1eus")) == 2
    assert content_chars(["system"], ["ab"], 3) == 0


def test_prefix_cache_matches_a_brute_force_over_every_earlier_prompt() -> None:
    import os
    import random

    from helpers.billing import PrefixCache

    rng = random.Random(7)
    stems = ["".join(rng.choice("ab") for _ in range(rng.randrange(4000, 9000)))
             for _ in range(6)]
    cache, seen, cached = PrefixCache(), [], 0
    for _ in range(90):
        text = rng.choice(stems)[: rng.randrange(3000, 9000)] + rng.choice("abc") * 3
        tokens = math.ceil(len(text) / 4)
        shared = max((len(os.path.commonprefix([text, s])) for s in seen), default=0)
        expected = min(shared // 4, tokens)
        expected = expected // 128 * 128 if expected >= 1024 else 0
        assert cache.cached(text, tokens) == expected
        seen.append(text)
        cached += expected > 0
    assert cached > 30  # most prompts share a cached prefix with an earlier one


def test_the_bill_at_the_knobs_prices() -> None:
    async def go(server: JudgeServer) -> list[Any]:
        async with client(server) as c:
            return [await ask(c, chat(A6000, f"<context>\nc{i}\n</context>"))
                    for i in range(3)]

    with JudgeServer(price_input=2.0, price_cached_input=0.5, price_output=8.0) as server:
        replies = asyncio.run(go(server))
        stats = server.stats
    prompt = sum(r.usage.prompt_tokens for r in replies)
    cached = sum(r.usage.prompt_tokens_details.cached_tokens for r in replies)
    done = sum(r.usage.completion_tokens for r in replies)
    assert cached == 2 * 1408
    assert (stats.billed_requests, stats.billed_prompt_tokens, stats.billed_cached_tokens,
            stats.billed_completion_tokens) == (3, prompt, cached, done)
    assert stats.billed_usd == pytest.approx(
        ((prompt - cached) * 2.0 + cached * 0.5 + done * 8.0) / 1e6)
    assert stats.batch_billed_requests == 0 and stats.batch_billed_usd == 0


def test_what_is_not_answered_is_not_billed() -> None:
    with JudgeServer({"c": 1}, script=["429", "500", "ok"], retry_after="0") as server:
        async def go() -> None:
            async with client(server) as c:
                for _ in range(2):
                    with pytest.raises(openai.APIStatusError):
                        await ask(c, pointwise("q", "c"))
                await ask(c, pointwise("q", "c"))
        asyncio.run(go())
        assert server.stats.requests == 3 and server.stats.billed_requests == 1


def test_wrong_api_key_is_401() -> None:
    async def go(server: JudgeServer) -> None:
        async with client(server, api_key="wrong") as c:
            with pytest.raises(openai.AuthenticationError) as err:
                await ask(c, pointwise("q", "c"))
            assert err.value.status_code == 401
            assert err.value.code == "invalid_api_key"
        async with client(server, api_key="right") as c:
            await ask(c, pointwise("q", "c"))

    with JudgeServer(api_key="right") as server:
        asyncio.run(go(server))
        assert server.stats.status_401 == 1 and server.stats.ok == 1
        assert [r["status"] for r in server.requests] == [401, 200]


def test_sdk_retries_a_scripted_429() -> None:
    async def go(server: JudgeServer) -> str:
        async with client(server, max_retries=2) as c:
            r = await ask(c, pointwise("q", "c"), response_format=SCHEMA)
            return r.choices[0].message.content

    with JudgeServer({"c": 1}, script=["429", "ok"], retry_after="0.01") as server:
        assert json.loads(asyncio.run(go(server)))["verdict"] == 1
        assert server.stats.status_429 == 1 and server.stats.ok == 1
        assert server.stats.by_retry_count == {0: 1, 1: 1}
        assert [r["status"] for r in server.requests] == [429, 200]


def test_500_and_malformed() -> None:
    async def go(server: JudgeServer) -> None:
        async with client(server) as c:
            with pytest.raises(openai.InternalServerError):
                await ask(c, pointwise("q", "c"))
            r = await ask(c, pointwise("q", "c"), response_format=SCHEMA)
            with pytest.raises(json.JSONDecodeError):
                json.loads(r.choices[0].message.content)
            r = await ask(c, pointwise("q", "c"))  # text mode: no JSON at all
            assert "```" not in r.choices[0].message.content

    with JudgeServer({"c": 1}, script=["500", "malformed", "malformed"]) as server:
        asyncio.run(go(server))
        assert server.stats.status_500 == 1 and server.stats.malformed == 2


def test_count_mismatch_listwise_only() -> None:
    async def go(server: JudgeServer) -> tuple[int, int]:
        async with client(server) as c:
            fmt = {"type": "json_object"}
            r = await ask(c, listwise("q", ["a", "b", "c"]), response_format=fmt)
            p = await ask(c, pointwise("q", "a"), response_format=SCHEMA)
            return len(json.loads(r.choices[0].message.content)["verdicts"]), json.loads(
                p.choices[0].message.content
            )["verdict"]

    with JudgeServer({"a": 1, "b": 1, "c": 1}, count_mismatch=1.0) as server:
        assert asyncio.run(go(server)) == (2, 1)
        assert server.stats.mismatches == 1 and server.stats.ok == 1


def test_random_faults_follow_the_seed_and_configure_reset() -> None:
    async def go(server: JudgeServer) -> list[int]:
        async with client(server) as c:
            out = []
            for _ in range(12):
                try:
                    await ask(c, pointwise("q", "c"))
                    out.append(200)
                except openai.APIStatusError as exc:
                    out.append(exc.status_code)
            return out

    runs = []
    for _ in range(2):
        with JudgeServer({"c": 1}, seed=7, fail_500=0.5) as server:
            runs.append(asyncio.run(go(server)))
            assert server.stats.status_500 == runs[-1].count(500)
            server.reset_stats()
            assert server.stats.requests == 0 and server.requests == []
            server.configure(fail_500=0.0)
            assert set(asyncio.run(go(server))) == {200}
    assert runs[0] == runs[1] and {200, 500} <= set(runs[0])
    with pytest.raises(TypeError):
        JudgeServer(no_such_knob=1)


def test_concurrency_cap() -> None:
    async def go(server: JudgeServer) -> float:
        async with client(server) as c:
            t0 = time.monotonic()
            await asyncio.gather(*(ask(c, pointwise("q", f"c{i}")) for i in range(20)))
            return time.monotonic() - t0

    with JudgeServer(latency_ms=100, concurrency=5) as server:
        elapsed = asyncio.run(go(server))
        assert server.stats.in_flight_max == 5
        assert server.stats.unknown_chunks == 20 and server.stats.ok == 20
        assert elapsed >= 0.35  # 4 waves of 100 ms


def test_hang_and_client_timeout() -> None:
    async def go(server: JudgeServer) -> float:
        async with client(server, timeout=0.5, max_retries=0) as c:
            t0 = time.monotonic()
            with pytest.raises(openai.APITimeoutError):
                await ask(c, pointwise("q", "c"))
            return time.monotonic() - t0

    with JudgeServer(hang=1.0) as server:
        assert asyncio.run(go(server)) < 2.0
        assert server.stats.hangs == 1 and server.stats.ok == 0


def test_stop_drops_hung_connections_quickly() -> None:
    server = JudgeServer(script=["hang"]).__enter__()

    async def go() -> tuple[float, float]:
        async with client(server, timeout=10) as c:
            call = asyncio.create_task(ask(c, pointwise("q", "c")))
            await asyncio.sleep(0.3)
            assert server.stats.hangs == 1
            t0 = time.monotonic()
            await asyncio.to_thread(server.stop)
            stop_s = time.monotonic() - t0
            with pytest.raises(openai.APIConnectionError):
                await call
            return stop_s, time.monotonic() - t0

    stop_s, seen_s = asyncio.run(go())
    assert stop_s < 1.0 and seen_s < 1.5


def test_subprocess_mode(tmp_path: Path) -> None:
    labels_file = tmp_path / "labels.json"
    labels_file.write_text(
        json.dumps([{"chunk": "c", "label": 0}, {"chunk": "c", "question": "q", "label": 0.9}])
    )
    assert load_labels(labels_file) == {"c": 0, ("q", "c"): 0.9}
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "judge_server.py"), "--port", "0",
         "--labels", str(labels_file), "--latency-ms", "1", "--concurrency", "4"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        m = re.fullmatch(r"READY (http://127\.0\.0\.1:\d+/v1)\n", line)
        assert m, line
        base_url = m.group(1)
        with urllib.request.urlopen(base_url + "/models", timeout=5) as resp:
            assert json.loads(resp.read())["data"][0]["id"] == "test-judge"

        async def go() -> int:
            async with openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0) as c:
                r = await ask(c, pointwise("q", "c"), response_format=SCHEMA)
                return json.loads(r.choices[0].message.content)["verdict"]

        assert asyncio.run(go()) == 1
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=5)
    assert proc.returncode == 0, err
    assert out == ""  # exactly one stdout line, already read
    stats = json.loads(err.split("STATS ", 1)[1])
    assert stats["ok"] == 1


# ------------------------------------------------------------------ shapes of real servers


def _latencies(n: int = 20000, **knobs: Any) -> list[float]:
    server = JudgeServer(seed=3, **knobs)  # not started: the latency draw alone
    return sorted(server._latency(server.knobs) for _ in range(n))


def test_latency_shapes_have_the_spread_asked_for() -> None:
    flat = _latencies(200, latency_ms=200)
    assert flat[0] == flat[-1] == 200
    gauss = _latencies(latency_ms=200, latency_sd_ms=50)
    mean = sum(gauss) / len(gauss)
    sd = math.sqrt(sum((x - mean) ** 2 for x in gauss) / len(gauss))
    assert mean == pytest.approx(200, rel=0.02) and sd == pytest.approx(50, rel=0.05)
    tail = _latencies(latency_ms=200, latency_tail=5)
    median, p99 = tail[len(tail) // 2], tail[int(0.99 * len(tail))]
    assert median == pytest.approx(200, rel=0.03) and p99 / median == pytest.approx(5, rel=0.1)
    mixed = _latencies(latency_ms=100, slow_ms=1000, slow_share=0.2)
    assert sum(x == 1000 for x in mixed) / len(mixed) == pytest.approx(0.2, abs=0.01)
    with pytest.raises(ValueError, match="latency_tail"):
        JudgeServer(latency_tail=0.5)


def test_token_bucket_refuses_with_rate_limit_headers() -> None:
    async def go(server: JudgeServer) -> list[tuple[int, dict[str, str]]]:
        async with client(server) as c:
            out = []
            for _ in range(3):
                try:
                    r = await c.chat.completions.with_raw_response.create(
                        model="judge-x", messages=pointwise("q", "c"))
                    out.append((r.status_code, dict(r.headers)))
                except openai.APIStatusError as exc:
                    out.append((exc.status_code, dict(exc.response.headers)))
            return out

    # 1000 tokens a second, a bucket of 1000, 400 a request: two pass, the third waits 0.2 s
    with JudgeServer({"c": 1}, token_rate=1000, token_burst=1000, token_cost=400) as server:
        (s1, h1), (s2, h2), (s3, h3) = asyncio.run(go(server))
    assert (s1, s2, s3) == (200, 200, 429)
    assert h1["x-ratelimit-limit-tokens"] == "1000"
    assert int(h1["x-ratelimit-remaining-tokens"]) == 600
    assert 200 <= int(h2["x-ratelimit-remaining-tokens"]) <= 300  # refilled meanwhile
    assert h3["retry-after"] == "1" and float(h3["x-ratelimit-reset-tokens"][:-1]) > 0.7
    assert server.stats.rate_limited == 1 == server.stats.status_429


def test_quick_429_comes_before_a_slot_and_the_latency() -> None:
    async def go(server: JudgeServer) -> float:
        async with client(server) as c:
            t0 = time.monotonic()
            with pytest.raises(openai.RateLimitError):
                await ask(c, pointwise("q", "c"))
            return time.monotonic() - t0

    with JudgeServer(latency_ms=800, script=["429"], quick_429=True) as server:
        assert asyncio.run(go(server)) < 0.5
        assert server.stats.status_429 == 1 and server.stats.in_flight_max == 0


def test_a_dripped_reply_arrives_whole_after_its_pieces() -> None:
    async def go(server: JudgeServer) -> tuple[Any, float]:
        async with client(server) as c:
            t0 = time.monotonic()
            reply = await ask(c, pointwise("q", "c"), response_format=SCHEMA)
            return reply, time.monotonic() - t0

    with JudgeServer({"c": 1}, drip_ms=60) as server:
        reply, elapsed = asyncio.run(go(server))
    assert json.loads(reply.choices[0].message.content)["verdict"] == 1
    assert elapsed >= 8 * 0.06 - 0.02
