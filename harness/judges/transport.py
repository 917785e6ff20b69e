"""Chat completions over any OpenAI-compatible endpoint, through the ``openai`` SDK.

The SDK owns transport retries (429 honouring Retry-After, 5xx, timeouts, dropped
connections: ``max_retries``). Per call this does as little as possible around the SDK: the
request body is JSON built once per output kind with only the messages spliced in, the reply
is read as raw JSON (no pydantic models), and the SDK's aiohttp transport is used.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from harness.errors import ConfigError, JudgeError, JudgeParseError, JudgeUnavailable
from harness.protocols import Kind
from harness.types import Completion, JudgeStats

if TYPE_CHECKING:
    import openai

OutputMode = Literal["json_schema", "json_object", "text"]
_FALLBACK: dict[str, OutputMode] = {"json_schema": "json_object", "json_object": "text"}

SCHEMAS: dict[str, dict[str, Any]] = {
    "pointwise": {
        "type": "object",
        "properties": {
            "reason": {"type": "string"},
            "verdict": {"type": "integer", "enum": [0, 1]},
        },
        "required": ["reason", "verdict"],
        "additionalProperties": False,
    },
    "listwise": {
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "reason": {"type": "string"},
                        "verdict": {"type": "string", "enum": ["yes", "no"]},
                    },
                    "required": ["reason", "verdict"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["verdicts"],
        "additionalProperties": False,
    },
    "reason": {
        "type": "object",
        "properties": {"reason": {"type": "string"}},
        "required": ["reason"],
        "additionalProperties": False,
    },
}


class ChatTransport:
    """Sends chat requests and counts their traffic into ``stats``.

    The arguments are ``OpenAIJudge``'s of the same names (checked there). ``output_mode``
    steps down for the rest of the run after a 400 that rejects the response format.
    """

    def __init__(
        self,
        model: str,
        stats: JudgeStats,
        *,
        base_url: str | None,
        api_key_env: str | None,
        temperature: float,
        top_p: float | None,
        max_tokens: int | None,
        seed: int | None,
        timeout: float,
        max_retries: int,
        max_concurrency: int,
        output_mode: OutputMode,
        top_logprobs: int,
        prices: Mapping[str, Mapping[str, float]] | None,
        extra_body: Mapping[str, Any] | None,
        preflight_timeout: float,
    ) -> None:
        self.model, self.stats = model, stats
        self.base_url, self.api_key_env = base_url, api_key_env
        self.temperature, self.top_p, self.seed = temperature, top_p, seed
        self.max_tokens, self.top_logprobs = max_tokens, top_logprobs
        self.timeout, self.max_retries, self.max_concurrency = timeout, max_retries, max_concurrency
        self.output_mode: OutputMode = output_mode
        self.prices = {k: dict(v) for k, v in (prices or {}).items()}
        self.extra_body = dict(extra_body or {})
        self.preflight_timeout = preflight_timeout
        self._client: openai.AsyncOpenAI | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._bodies: dict[tuple[str, str, bool, int], bytes] = {}

    def _api_key(self) -> str:
        if self.api_key_env is None:
            return "EMPTY"  # servers without auth still expect a bearer header
        key = os.environ.get(self.api_key_env)
        if not key:
            raise ConfigError(
                f"judge.api_key_env: the environment variable {self.api_key_env} is not set; "
                f"export it, or set judge.api_key_env=null for a server without keys"
            )
        return key

    def _ensure_client(self) -> openai.AsyncOpenAI:
        if self._client is None:
            from openai import AsyncOpenAI, DefaultAioHttpClient

            self._client = AsyncOpenAI(
                api_key=self._api_key(),
                base_url=self.base_url,
                timeout=self.timeout,
                max_retries=self.max_retries,
                http_client=DefaultAioHttpClient(),
            )
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
        return self._client

    async def preflight(self) -> None:
        """Check, before the first call, that the endpoint answers and accepts the key."""
        import openai

        client = self._ensure_client().with_options(timeout=self.preflight_timeout, max_retries=0)
        where = self.base_url or "the OpenAI API"
        try:
            await client.models.list()
        except openai.AuthenticationError:
            rejected = f"judge: {where} rejected the API key from ${self.api_key_env}"
            raise ConfigError(rejected) from None
        except openai.NotFoundError:
            return  # some servers have no /models; the first call will tell
        except openai.APIConnectionError as e:  # includes timeouts
            cause = e.__cause__
            if isinstance(e, openai.APITimeoutError) and "connect" not in str(cause).lower():
                raise JudgeError(
                    f"judge: {where} did not answer within {self.preflight_timeout:g} s"
                ) from None
            raise JudgeError(
                f"judge: cannot reach {where} ({cause or e}); is the server running?"
            ) from None
        except openai.APIStatusError as e:
            if e.status_code >= 500:
                raise JudgeError(f"judge: {where} answered HTTP {e.status_code}") from None

    def _body_template(self, kind: Kind, logprobs: bool, draw: int) -> bytes:
        """The request JSON minus the messages, built once per mode, kind and draw."""
        key = (self.output_mode, kind, logprobs, draw)
        if key not in self._bodies:
            body: dict[str, Any] = {"model": self.model, "temperature": self.temperature}
            if self.top_p is not None:
                body["top_p"] = self.top_p
            if self.max_tokens is not None:
                body["max_tokens"] = self.max_tokens
            if self.seed is not None:
                body["seed"] = self.seed + draw
            if self.output_mode == "json_schema":
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {
                        "name": f"{kind}_verdict", "strict": True, "schema": SCHEMAS[kind]
                    },
                }
            elif self.output_mode == "json_object":
                body["response_format"] = {"type": "json_object"}
            if logprobs:
                body["logprobs"] = True
                body["top_logprobs"] = self.top_logprobs
            body.update(self.extra_body)
            self._bodies[key] = json.dumps(body, ensure_ascii=False, sort_keys=True).encode()
        return self._bodies[key]

    def body(self, messages: list[dict[str, str]], kind: Kind, logprobs: bool, draw: int) -> bytes:
        """The request JSON for ``messages`` (also what the verdict cache keys on)."""
        template = self._body_template(kind, logprobs, draw)
        spliced = json.dumps(messages, ensure_ascii=False).encode()
        return b'{"messages":' + spliced + b"," + template[1:]

    async def complete(
        self, messages: list[dict[str, str]], kind: Kind, logprobs: bool = False, draw: int = 0
    ) -> Completion:
        """One chat completion (transport retries by the SDK); raise ``JudgeError`` on failure."""
        import httpx2
        import openai

        client = self._ensure_client()
        assert self._semaphore is not None
        while True:
            mode = self.output_mode
            body = self.body(messages, kind, logprobs, draw)
            self.stats.calls += 1
            try:
                async with self._semaphore:
                    response = await client.post(
                        "/chat/completions",
                        cast_to=httpx2.Response,
                        content=body,
                        options={"headers": {"Content-Type": "application/json"}},
                    )
                    raw = await response.aread()
            except openai.BadRequestError as e:
                if self._step_down(e, mode):
                    continue
                self.stats.requests += 1
                self.stats.failures += 1
                raise JudgeError(f"judge rejected the request: {_short(e)}") from None
            except openai.APIConnectionError as e:
                self._count_failure()
                cause = e.__cause__
                if not isinstance(e, openai.APITimeoutError) or "connect" in str(cause).lower():
                    # Refused or dropped connections after every retry: the endpoint is
                    # down, and every other call would wait out the same retries.
                    raise JudgeUnavailable(
                        f"judge endpoint {self.base_url or 'OpenAI'} stopped answering "
                        f"({cause or e}); finished rows are kept, rerun to resume from the cache"
                    ) from None
                raise JudgeError(
                    f"judge call failed after {self.max_retries} retries: {_short(e)}"
                ) from None
            except openai.APIError as e:
                self._count_failure()
                raise JudgeError(
                    f"judge call failed after {self.max_retries} retries: {_short(e)}"
                ) from None
            retried = int(response.request.headers.get("x-stainless-retry-count", "0"))
            self.stats.requests += 1 + retried
            self.stats.retries += retried
            try:
                data = json.loads(raw)
                choice = data["choices"][0]
                content = choice["message"]["content"] or ""
            except (ValueError, KeyError, IndexError, TypeError):
                raise JudgeParseError(f"not a chat completion: {raw[:120]!r}") from None
            usage = data.get("usage") or {}
            self._count_usage(usage)
            lp = (choice.get("logprobs") or {}).get("content") if logprobs else None
            return Completion(content, lp, usage)

    def _count_failure(self) -> None:
        self.stats.requests += 1 + self.max_retries
        self.stats.retries += self.max_retries
        self.stats.failures += 1

    def _step_down(self, error: openai.BadRequestError, mode: OutputMode) -> bool:
        """After a 400 that rejects the output format: use the next mode, and retry."""
        text = error.message.lower()
        if mode not in _FALLBACK or not ("response_format" in text or "json_schema" in text):
            return False
        if self.output_mode == mode:  # concurrent calls: only the first one steps down
            self.output_mode = _FALLBACK[mode]
            self.stats.output_mode_fallbacks += 1
        return True

    def _count_usage(self, usage: Mapping[str, Any]) -> None:
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        self.stats.prompt_tokens += prompt
        self.stats.completion_tokens += completion
        self.stats.cached_prompt_tokens += cached
        self.stats.cost_usd += self.cost(prompt, cached, completion)

    def cost(self, prompt: int, cached: int, completion: int) -> float:
        """Estimated USD for the tokens, from ``prices`` (0 for unpriced models)."""
        price = self.prices.get(self.model)
        if not price:
            return 0.0
        return (
            (prompt - cached) * price.get("input", 0.0)
            + cached * price.get("cached_input", price.get("input", 0.0))
            + completion * price.get("output", 0.0)
        ) / 1e6

    async def aclose(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()


def _short(error: openai.APIError) -> str:
    import openai

    with_status = (openai.APIStatusError, openai.APIResponseValidationError)
    status = error.status_code if isinstance(error, with_status) else None
    message = str(error.message or error).splitlines()[0][:200]
    return f"HTTP {status}: {message}" if status else message
