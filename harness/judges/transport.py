"""Chat completions over any OpenAI-compatible endpoint, through the ``openai`` SDK.

The SDK owns transport retries (429 honouring Retry-After, 5xx, timeouts, dropped
connections: ``max_retries``). Per call this does as little as possible around the SDK: the
request body is JSON built once per output kind with only the messages spliced in, the reply
is read as raw JSON (no pydantic models, ``harness.judges.reply``), and the SDK's aiohttp
transport is used. Failures become one-line errors in ``harness.judges.failures``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from harness.errors import ConfigError, JudgeError
from harness.judges import failures
from harness.judges.checks import split_base_url
from harness.judges.reply import cached_tokens, read_completion, tokens
from harness.judges.schemas import SCHEMAS
from harness.protocols import Kind
from harness.redact import redact, redact_uri, register
from harness.types import Completion, JudgeStats

if TYPE_CHECKING:
    import openai

OutputMode = Literal["json_schema", "json_object", "text"]
_FALLBACK: dict[str, OutputMode] = {"json_schema": "json_object", "json_object": "text"}


class ChatTransport:
    """Sends chat requests and counts their traffic into ``stats``.

    The arguments are ``OpenAIJudge``'s of the same names (checked there). ``output_mode``
    steps down for the rest of the run after a 400 that rejects the response format.
    Credentials in ``base_url`` (``http://user:pass@host/v1``) are sent as HTTP basic auth
    when no ``api_key_env`` is set, and never printed.
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
        # base_url null: the SDK's default, $OPENAI_BASE_URL when set, else OpenAI's API
        self._effective = base_url or os.environ.get("OPENAI_BASE_URL") or None
        setting = "judge.base_url" if base_url else "$OPENAI_BASE_URL"
        self._url, self._credentials = split_base_url(self._effective, setting)
        if self._credentials is not None and api_key_env is not None:
            raise ConfigError(
                f"{setting}: {redact_uri(str(self._effective))} carries credentials and "
                f"judge.api_key_env={api_key_env} names a key; only one can be sent: "
                "set judge.api_key_env=null to send the URL's credentials (HTTP basic auth), "
                "or drop them from the URL"
            )
        self.temperature, self.top_p, self.seed = temperature, top_p, seed
        self.max_tokens, self.top_logprobs = max_tokens, top_logprobs
        self.timeout, self.max_retries, self.max_concurrency = timeout, max_retries, max_concurrency
        self.output_mode: OutputMode = output_mode
        self.prices = {k: dict(v) for k, v in (prices or {}).items()}
        self.extra_body = dict(extra_body or {})
        self.preflight_timeout = preflight_timeout
        self._served: tuple[str, ...] = ()
        self._client: openai.AsyncOpenAI | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._bodies: dict[tuple[str, str, bool, int], bytes] = {}

    @property
    def endpoint(self) -> failures.Endpoint:
        """Who this transport talks to, for messages (no credentials)."""
        return failures.Endpoint(
            self._effective, self.api_key_env, self.model, self.timeout,
            self._credentials is not None, self._served,
        )

    def _api_key(self) -> str:
        if self.api_key_env is None:
            return "EMPTY"  # servers without auth still expect a bearer header
        key = os.environ.get(self.api_key_env)
        register(key)  # masked in every text the harness writes from now on
        if not key:
            raise ConfigError(
                f"judge.api_key_env: the environment variable {self.api_key_env} is not set; "
                f"export it, or set judge.api_key_env=null for a server without keys"
            )
        return key

    def _headers(self) -> dict[str, str] | None:
        """Basic auth from the URL's credentials (the SDK refuses them inside the URL)."""
        if self._credentials is None:
            return None
        user, password = self._credentials
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        for secret in (password, token, f"{user}:{password}"):
            register(secret)
        return {"Authorization": f"Basic {token}"}

    def _ensure_client(self) -> openai.AsyncOpenAI:
        if self._client is None:
            from openai import AsyncOpenAI, DefaultAioHttpClient

            self._client = AsyncOpenAI(
                api_key=self._api_key(),
                base_url=self._url,
                timeout=self.timeout,
                max_retries=self.max_retries,
                default_headers=self._headers(),
                http_client=DefaultAioHttpClient(),
            )
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
        return self._client

    async def preflight(self) -> None:
        """Check, before the first call, that the endpoint answers and accepts the key."""
        import httpx2
        import openai

        client = self._ensure_client().with_options(timeout=self.preflight_timeout, max_retries=0)
        end = self.endpoint
        try:
            page = await client.models.list()
        except (openai.AuthenticationError, openai.PermissionDeniedError) as e:
            raise failures.auth_failure(end, e.status_code, failures.server_message(e)) from None
        except openai.NotFoundError:
            return  # some servers have no /models; the first call will tell
        except openai.APIConnectionError as e:  # includes timeouts
            cause = e.__cause__
            if isinstance(e, openai.APITimeoutError) and "connect" not in str(cause).lower():
                raise JudgeError(
                    f"judge: {end.where} did not answer within {self.preflight_timeout:g} s"
                ) from None
            raise JudgeError(
                f"judge: cannot reach {end.where} ({redact(str(cause or e))}); "
                "is the server running?"
            ) from None
        except openai.APIStatusError as e:
            if e.status_code >= 500:
                what = failures.status_text(e.status_code, failures.server_message(e))
                raise JudgeError(f"judge: {end.where} answered {what}") from None
            return  # another 4xx: the first call will tell
        except (openai.APIError, httpx2.HTTPError, httpx2.InvalidURL):
            return  # an odd /models answer: the first call will tell
        data = getattr(page, "data", None)
        ids = [getattr(m, "id", None) for m in data] if isinstance(data, list) else []
        self._served = tuple(i for i in ids if isinstance(i, str))

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
        """One chat completion (transport retries by the SDK).

        Raises ``JudgeError`` when this call failed for good, ``JudgeUnavailable`` or
        ``ConfigError`` when no call can succeed (the endpoint is down, rejects the key,
        does not serve the model or the path).
        """
        import httpx2
        import openai

        client = self._ensure_client()
        assert self._semaphore is not None
        while True:
            self.stats.calls += 1
            try:
                async with self._semaphore:
                    # the mode as it is now: a step-down while this call queued applies
                    mode = self.output_mode
                    body = self.body(messages, kind, logprobs, draw)
                    response = await client.post(
                        "/chat/completions",
                        cast_to=httpx2.Response,
                        content=body,
                        options={"headers": {"Content-Type": "application/json"}},
                    )
                    raw = await response.aread()
            except openai.APIError as e:
                self._count_sent(1 + failures.retries_taken(e))
                if isinstance(e, openai.BadRequestError) and self._step_down(e, mode):
                    continue
                self.stats.failures += 1
                raise failures.call_failure(self.endpoint, e, "/chat/completions") from None
            except (httpx2.HTTPError, httpx2.InvalidURL) as e:  # not wrapped by the SDK
                self.stats.failures += 1
                raise JudgeError(f"judge call failed: {redact(str(e))}") from None
            self._count_sent(1 + int(response.request.headers.get("x-stainless-retry-count", "0")))
            completion = read_completion(raw, logprobs)
            self._count_usage(completion.usage)
            clean = redact(completion.content)
            if clean != completion.content:  # a reply quoting a secret: keep it out of rows
                completion = Completion(clean, None, completion.usage)
            return completion

    def _count_sent(self, sent: int) -> None:
        """``sent`` requests went out for one call: the first and the SDK's retries."""
        self.stats.requests += sent
        self.stats.retries += sent - 1

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
        prompt = tokens(usage.get("prompt_tokens"))
        completion = tokens(usage.get("completion_tokens"))
        cached = min(cached_tokens(usage), prompt)
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
