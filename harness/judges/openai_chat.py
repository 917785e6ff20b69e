"""A judge on any OpenAI-compatible chat-completions endpoint, through the ``openai`` SDK.

The SDK owns transport retries (429 honouring Retry-After, 5xx, timeouts, dropped
connections: ``max_retries``); this class owns retries of unusable replies
(``parse_retries``). Per call it does as little as possible around the SDK: the request
body is JSON built once per output kind with only the messages spliced in, the reply is
read as raw JSON (no pydantic models), and the SDK's aiohttp transport is used.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypeVar

from harness.errors import ConfigError, JudgeError, JudgeParseError, JudgeUnavailable
from harness.judges.cache import VerdictCache, cache_key, default_path

T = TypeVar("T")
OutputMode = Literal["json_schema", "json_object", "text"]
Kind = Literal["pointwise", "listwise", "reason"]
_FALLBACK: dict[str, OutputMode] = {"json_schema": "json_object", "json_object": "text"}

SCHEMAS: dict[str, dict[str, Any]] = {
    "pointwise": {
        "type": "object",
        "properties": {"reason": {"type": "string"}, "verdict": {"type": "integer", "enum": [0, 1]}},
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


@dataclass
class JudgeStats:
    """Counters of one run's judge traffic."""

    calls: int = 0
    requests: int = 0
    retries: int = 0
    parse_failures: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    soft_fallbacks: int = 0
    output_mode_fallbacks: int = 0
    cost_usd: float = 0.0
    cache_hits: int = 0
    cache_misses: int = 0
    saved_prompt_tokens: int = 0
    saved_completion_tokens: int = 0
    saved_cost_usd: float = 0.0

    def as_dict(self) -> dict[str, float]:
        """All counters (costs rounded to micro-dollars)."""
        data: dict[str, float] = asdict(self)
        data["cost_usd"] = round(self.cost_usd, 6)
        data["saved_cost_usd"] = round(self.saved_cost_usd, 6)
        return data


@dataclass
class Completion:
    """What the judge replied: the text, token logprobs when asked for, and usage."""

    content: str
    logprobs: list[dict[str, Any]] | None = None
    usage: dict[str, Any] = field(default_factory=dict)


class OpenAIJudge:
    """A chat model judging relevance over an OpenAI-compatible endpoint.

    Args:
        model: The model name the endpoint serves.
        base_url: The endpoint (``None``: OpenAI). vLLM, Ollama, llama.cpp and LiteLLM
            serve the same protocol under ``http://HOST:PORT/v1``.
        api_key_env: NAME of the environment variable holding the API key (the key is
            never in config or logs). ``None`` for servers that need no key.
        temperature: Sampling temperature.
        top_p: Nucleus sampling (``None``: the endpoint's default).
        max_tokens: Cap on reply tokens (``None``: the endpoint's default).
        seed: Sampling seed, for endpoints that honour it.
        timeout: Seconds per HTTP request.
        max_retries: Transport retries by the SDK (429, 5xx, timeouts, dropped connections).
        max_concurrency: Requests in flight at most.
        output_mode: ``json_schema`` (structured output, default), ``json_object`` or
            ``text`` (lenient JSON extraction). A 400 that rejects the response format
            steps down to the next mode for the rest of the run.
        parse_retries: Re-asks after an unusable reply, before the sample is unscored.
        top_logprobs: Candidates per token requested for soft verdicts.
        prices: USD per million tokens by model: ``{model: {input, cached_input, output}}``.
        extra_body: Extra JSON fields sent with every request (endpoint-specific options).
        preflight_timeout: Seconds to wait for the endpoint's answer before the run starts.
        cache: Keep every usable reply in a persistent cache and reuse it: a rerun, or a
            sweep whose retrievals overlap, pays for each distinct question once.
        cache_path: The cache file (``null``: ``$XDG_CACHE_HOME/harness/verdicts.sqlite``).
        samples: Independent verdicts per judgement (for temperature > 0): draw ``i`` is
            sent with seed ``seed + i`` and cached on its own.
        vote: How several verdicts combine: ``majority`` (relevant iff at least half say
            so) or ``mean`` (the share that say so, a graded relevance).
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        temperature: float = 0.0,
        top_p: float | None = None,
        max_tokens: int | None = 1024,
        seed: int | None = 0,
        timeout: float = 60.0,
        max_retries: int = 5,
        max_concurrency: int = 16,
        output_mode: OutputMode = "json_schema",
        parse_retries: int = 2,
        top_logprobs: int = 5,
        prices: Mapping[str, Mapping[str, float]] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        preflight_timeout: float = 10.0,
        cache: bool = True,
        cache_path: str | None = None,
        samples: int = 1,
        vote: Literal["majority", "mean"] = "majority",
    ) -> None:
        if max_concurrency < 1:
            raise ConfigError(f"judge.max_concurrency: expected >= 1, got {max_concurrency}")
        if max_retries < 0 or parse_retries < 0:
            raise ConfigError("judge.max_retries and judge.parse_retries must be >= 0")
        self.model, self.base_url, self.api_key_env = model, base_url, api_key_env
        self.temperature, self.top_p, self.max_tokens, self.seed = temperature, top_p, max_tokens, seed
        self.timeout, self.max_retries, self.max_concurrency = timeout, max_retries, max_concurrency
        self.output_mode: OutputMode = output_mode
        self.parse_retries, self.top_logprobs = parse_retries, top_logprobs
        self.prices = {k: dict(v) for k, v in (prices or {}).items()}
        self.extra_body = dict(extra_body or {})
        self.preflight_timeout = preflight_timeout
        if samples < 1:
            raise ConfigError(f"judge.samples: expected >= 1, got {samples}")
        if vote not in ("majority", "mean"):
            raise ConfigError(f"judge.vote: expected 'majority' or 'mean', got {vote!r}")
        self.cache_enabled, self.cache_path = cache, cache_path
        self.samples, self.vote = samples, vote
        self.stats = JudgeStats()
        self._client: Any = None
        self._cache: VerdictCache | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._bodies: dict[tuple[str, str, bool, int], bytes] = {}

    def describe(self) -> dict[str, Any]:
        """Everything that can change a verdict (no secrets): for outputs and cache keys."""
        from harness.tracking.mlflow import redact_uri

        return {
            "model": self.model,
            "base_url": None if self.base_url is None else redact_uri(self.base_url),
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "output_mode": self.output_mode,
            "extra_body": self.extra_body,
            "samples": self.samples,
            "vote": self.vote,
            "cache": str(self._cache_file()) if self.cache_enabled else None,
        }

    def _cache_file(self) -> Path:
        return Path(self.cache_path).expanduser() if self.cache_path else default_path()

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

    def _ensure_client(self) -> Any:
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
        """Check, before the first judge call, that the endpoint answers and accepts the key."""
        import openai

        client = self._ensure_client().with_options(
            timeout=self.preflight_timeout, max_retries=0
        )
        where = self.base_url or "the OpenAI API"
        try:
            await client.models.list()
        except openai.AuthenticationError:
            raise ConfigError(
                f"judge: {where} rejected the API key from ${self.api_key_env}"
            ) from None
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
        """The request JSON minus the messages, built once per kind and draw."""
        key = (self.output_mode, kind, logprobs, draw)
        if key not in self._bodies:
            body: dict[str, Any] = {"model": self.model, "temperature": self.temperature}
            for name in ("top_p", "max_tokens"):
                if getattr(self, name) is not None:
                    body[name] = getattr(self, name)
            if self.seed is not None:
                body["seed"] = self.seed + draw
            if self.output_mode == "json_schema":
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": f"{kind}_verdict", "strict": True, "schema": SCHEMAS[kind]},
                }
            elif self.output_mode == "json_object":
                body["response_format"] = {"type": "json_object"}
            if logprobs:
                body["logprobs"] = True
                body["top_logprobs"] = self.top_logprobs
            body.update(self.extra_body)
            self._bodies[key] = json.dumps(body, ensure_ascii=False, sort_keys=True).encode()
        return self._bodies[key]

    def _body(self, messages: list[dict[str, str]], kind: Kind, logprobs: bool, draw: int) -> bytes:
        template = self._body_template(kind, logprobs, draw)
        return b'{"messages":' + json.dumps(messages, ensure_ascii=False).encode() + b"," + template[1:]

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
            body = self._body(messages, kind, logprobs, draw)
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
                self.stats.requests += 1 + self.max_retries
                self.stats.retries += self.max_retries
                self.stats.failures += 1
                raise JudgeError(f"judge call failed after {self.max_retries} retries: {_short(e)}") from None
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

    def _step_down(self, error: Any, mode: OutputMode) -> bool:
        """After a 400 that rejects the output format: use the next mode, and retry."""
        text = str(getattr(error, "message", error)).lower()
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
        self.stats.cost_usd += self._cost(prompt, cached, completion)

    def _cost(self, prompt: int, cached: int, completion: int) -> float:
        """Estimated USD for the tokens, from ``prices`` (0 for unpriced models)."""
        price = self.prices.get(self.model)
        if not price:
            return 0.0
        return (
            (prompt - cached) * price.get("input", 0.0)
            + cached * price.get("cached_input", price.get("input", 0.0))
            + completion * price.get("output", 0.0)
        ) / 1e6

    async def ask(
        self,
        messages: list[dict[str, str]],
        kind: Kind,
        parse: Callable[[Completion], T],
        logprobs: bool = False,
        *,
        draw: int = 0,
        prompt_sha: str = "",
        variant: str = "",
    ) -> T:
        """Call and parse, through the cache; re-ask up to ``parse_retries`` times after an
        unusable reply.

        A re-ask repeats the request with a note on what was wrong appended to the last
        user message (resending the same request to a deterministic model tends to return
        the same reply; the note changes only the end, so a cached prefix still applies).
        A usable reply is cached under the key of the original request.

        Args:
            messages: The rendered prompt.
            kind: ``pointwise``, ``listwise`` or ``reason`` (selects the JSON schema).
            parse: Turns a completion into the caller's value; raises ``JudgeParseError``.
            logprobs: Ask for token logprobs (soft verdicts).
            draw: Which of ``samples`` independent verdicts this is.
            prompt_sha: The prompt template's hash (part of the cache key; for pruning).
            variant: The metric asking (part of the cache key; for inspection).
        """
        key = None
        cache = self._open_cache()
        if cache is not None:
            key = cache_key({
                "v": 1,
                "endpoint": self.base_url or "openai",
                "variant": variant,
                "prompt_sha256": prompt_sha,
                "request": self._body(messages, kind, logprobs, draw).decode(),
            })
            hit = cache.get(key)
            if hit is not None:
                try:
                    value = parse(Completion(hit["content"], hit.get("logprobs"), hit.get("usage") or {}))
                except JudgeParseError:
                    pass  # an entry our parser no longer accepts: ask again
                else:
                    self._count_hit(hit.get("usage") or {})
                    return value
            self.stats.cache_misses += 1
        attempt_messages = messages
        error: JudgeParseError | None = None
        for _ in range(self.parse_retries + 1):
            try:
                completion = await self.complete(attempt_messages, kind, logprobs, draw)
                value = parse(completion)
            except JudgeParseError as e:
                self.stats.parse_failures += 1
                error = e
            else:
                if cache is not None and key is not None:
                    cache.put(
                        key,
                        {"content": completion.content, "logprobs": completion.logprobs,
                         "usage": completion.usage},
                        model=self.model, prompt_sha=prompt_sha, variant=variant,
                    )
                return value
            last = messages[-1]
            attempt_messages = [
                *messages[:-1],
                {
                    "role": last["role"],
                    "content": f"{last['content']}\n\nYour previous reply could not be used "
                    f"({_clip(str(error), 300)}). Reply with only the JSON object described above.",
                },
            ]
        self.stats.failures += 1
        raise JudgeParseError(
            f"unusable judge reply after {self.parse_retries + 1} attempts: {error}"
        )

    def _open_cache(self) -> VerdictCache | None:
        if self.cache_enabled and self._cache is None:
            self._cache = VerdictCache(self._cache_file())
        return self._cache

    def _count_hit(self, usage: Mapping[str, Any]) -> None:
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        self.stats.cache_hits += 1
        self.stats.saved_prompt_tokens += prompt
        self.stats.saved_completion_tokens += completion
        self.stats.saved_cost_usd += self._cost(prompt, 0, completion)

    async def aclose(self) -> None:
        """Close the HTTP client and the cache."""
        if self._cache is not None:
            self._cache.close()
            self._cache = None
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()


def _short(error: Any) -> str:
    status = getattr(error, "status_code", None)
    message = str(getattr(error, "message", "") or error).splitlines()[0][:200]
    return f"HTTP {status}: {message}" if status else message


def _clip(text: str, limit: int = 2000) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
