"""Chat completions over any OpenAI-compatible endpoint, through the ``openai`` SDK.

Requests are paced and retried by ``harness.judges.transport.sending`` (permits from
``harness.judges.transport.pacing``; the SDK itself makes no retries). Per call this does as
little as possible around the SDK: the request body is JSON built once per output kind with
only the messages spliced in, the reply is read as raw JSON (no pydantic models,
``harness.judges.replies.read``), and the SDK's aiohttp transport is used. Failures become
one-line errors in ``harness.judges.replies.failures``.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from harness.core.errors import ConfigError
from harness.core.protocols import Kind, Paced
from harness.core.redact import redact, redact_uri, register
from harness.core.types import Completion, JudgeStats
from harness.judges import identity
from harness.judges.checks import header_safe, split_base_url
from harness.judges.replies import failures
from harness.judges.replies.read import cached_tokens, read_completion, tokens
from harness.judges.replies.schemas import schema
from harness.judges.transport import costs, sending
from harness.judges.transport.budget import Budget
from harness.judges.transport.pacing import MAX_RETRY_AFTER, Pacer
from harness.judges.transport.silence import Silence

if TYPE_CHECKING:
    import openai

OutputMode = Literal["json_schema", "json_object_schema", "json_object", "text"]
_FALLBACK: dict[str, OutputMode] = {
    "json_schema": "json_object", "json_object_schema": "json_object", "json_object": "text",
}


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
        pacing: Literal["adaptive", "fixed"] = "adaptive",
        top_logprobs: int,
        prices: Mapping[str, Mapping[str, float]] | None,
        extra_body: Mapping[str, Any] | None,
        preflight_timeout: float,
        max_wait: float = MAX_RETRY_AFTER,
        max_timeouts_in_a_row: int | None = 8,
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
        self.pacing, self.max_wait = pacing, max_wait
        self.silence = Silence(max_timeouts_in_a_row, timeout)  # a server that never answers
        self.server_slots: int | None = None  # the server's parallel slots, when it says
        self.output_mode: OutputMode = output_mode
        self.prices = {k: dict(v) for k, v in (prices or {}).items()}
        self.extra_body = dict(extra_body or {})
        self.preflight_timeout = preflight_timeout
        self._served: tuple[str, ...] = ()
        self.identity = identity.Identity()
        self._client: openai.AsyncOpenAI | None = None
        # one server, model, key and pacing: one budget (a provider's limits are per model and key)
        self.budget = Budget(self._new_pacer, (self._url, model, api_key_env, self._credentials,
                                               max_concurrency, pacing, timeout, max_wait))
        self._bodies: dict[tuple[str, str, bool, int, int | None], bytes] = {}

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
        return header_safe(key, self.api_key_env)

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
        if self._client is None:  # one per budget (loading TLS certificates takes 20 ms)
            self._client = self.budget.client(self._new_client)
        return self._client

    def _new_client(self) -> openai.AsyncOpenAI:
        from openai import AsyncOpenAI, DefaultAioHttpClient

        # no retries: ours are paced (harness.judges.transport.sending)
        return AsyncOpenAI(api_key=self._api_key(), base_url=self._url, timeout=self.timeout,
                           max_retries=0, default_headers=self._headers(),
                           http_client=DefaultAioHttpClient())

    @property
    def pacer(self) -> Pacer:
        """The permits for requests in flight (``budget``'s, shared by ``share_pacing``)."""
        return self.budget.get()

    def _new_pacer(self) -> Pacer:
        pacer = Pacer(
            self.max_concurrency, adaptive=self.pacing == "adaptive",
            slots=self.server_slots, stats=self.stats, timeout=self.timeout,
            memory=f"{self._url}|{self.model}|{self.max_concurrency}",
            max_wait=self.max_wait, where=self.endpoint.where,
        )
        pacer.note_tokens(self.max_tokens or 0)  # a token quota counts max_tokens per request
        return pacer

    def share_pacing(self, other: Paced) -> bool:
        """Send ``other``'s requests under this transport's pacing budget when both send to
        the same endpoint with the same settings; whether they now share one. Its pacing
        counters (``peak_in_flight``, ``backoffs``...) count into this one's stats; both
        must run on one event loop (they share the preflight's findings and the client)."""
        if not self.budget.admits(other.budget):
            return False
        other.budget = self.budget
        return True

    async def preflight(self) -> None:
        """Check, before the first call, that the endpoint answers and accepts the key, and
        learn which model it serves (``harness.judges.identity``); once for the transports
        sharing a budget."""
        client = self._ensure_client().with_options(timeout=self.preflight_timeout, max_retries=0)
        ident, self.model = await self.budget.check(self, lambda: identity.identify(
            client, self._url, self.endpoint, self.preflight_timeout))
        self.identity, self._served, self.server_slots = ident, ident.listed, ident.slots
        self._bodies.clear()  # judge.model=auto: the name to send is known now
        identity.warn_once(ident, self.model, self.endpoint.where, ident.source or "/models")
        self.charge(0, 0, 0)

    def _body_template(self, kind: Kind, logprobs: bool, draw: int, items: int | None) -> bytes:
        """The request JSON minus the messages, built once per mode, kind, draw and count."""
        key = (self.output_mode, kind, logprobs, draw, items)
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
                        "name": f"{kind}_verdict", "strict": True,
                        "schema": schema(kind, items, self.model),
                    },
                }
            elif self.output_mode == "json_object":
                body["response_format"] = {"type": "json_object"}
            elif self.output_mode == "json_object_schema":  # llama.cpp's servers: a grammar
                body["response_format"] = {
                    "type": "json_object", "schema": schema(kind, items, self.model)
                }
            if logprobs:
                body["logprobs"] = True
                body["top_logprobs"] = self.top_logprobs
            body.update(self.extra_body)
            self._bodies[key] = json.dumps(body, ensure_ascii=False, sort_keys=True).encode()
        return self._bodies[key]

    def body(
        self, messages: list[dict[str, str]], kind: Kind, logprobs: bool, draw: int,
        items: int | None = None,
    ) -> bytes:
        """The request JSON for ``messages`` (also what the verdict cache keys on); ``items``:
        the number of verdicts a listwise reply must hold (pinned by the schema)."""
        template = self._body_template(kind, logprobs, draw, items)
        spliced = json.dumps(messages, ensure_ascii=False).encode()
        return b'{"messages":' + spliced + b"," + template[1:]

    async def complete(
        self, messages: list[dict[str, str]], kind: Kind, logprobs: bool = False, draw: int = 0,
        items: int | None = None,
    ) -> Completion:
        """One chat completion (paced and retried by ``harness.judges.transport.sending``).

        Raises ``JudgeError`` when this call failed for good, ``JudgeUnavailable`` or
        ``ConfigError`` when no call can succeed (the endpoint is down, rejects the key,
        does not serve the model or the path).
        """
        client = self._ensure_client()
        raw = await sending.post(self, client, self.pacer, messages, kind, logprobs, draw, items)
        return self.take(raw, logprobs)

    def take(self, raw: bytes, logprobs: bool, batch: bool = False) -> Completion:
        """The completion in a 200 reply's body ``raw``, its tokens and cost counted
        (``batch``: a line answered through the Batch API, at its price); raises
        ``JudgeParseError`` when it holds none."""
        completion = read_completion(raw, logprobs)
        self._count_reply(completion, batch)
        clean = redact(completion.content)
        if clean != completion.content:  # a reply quoting a secret: keep it out of rows
            completion = dataclasses.replace(completion, content=clean, logprobs=None)
        return completion

    def step_down(self, mode: str) -> bool:
        """After the server refused the output format ``mode``: use the next mode for the rest
        of the run (``False``: there is none)."""
        if mode not in _FALLBACK:
            return False
        if self.output_mode == mode:  # concurrent calls: only the first one steps down
            self.output_mode = _FALLBACK[mode]
            self.stats.output_mode_fallbacks += 1
        return True

    def _count_reply(self, completion: Completion, batch: bool = False) -> None:
        """Count a reply's tokens and cost, and note the model it says answered."""
        identity.seen_reply(self.identity, completion.model, self.model, self.endpoint.where)
        usage = completion.usage
        prompt = tokens(usage.get("prompt_tokens"))
        done = tokens(usage.get("completion_tokens"))
        cached = min(cached_tokens(usage), prompt)
        costs.count(self.stats, prompt, cached, done, batch)
        if not batch and self.budget.pacer is not None:  # a token quota counts max_tokens
            self.budget.pacer.note_tokens(prompt + max(done, self.max_tokens or 0))
        self.charge(prompt, cached, done, batch=batch)

    def unpriced(self) -> str | None:
        """Why this run's cost cannot be estimated (``None``: it can)."""
        return identity.unpriced(self.model, self.prices, self._url, self.identity)

    def charge(self, prompt: int, cached: int, completion: int, *, saved: bool = False,
               batch: bool = False) -> None:
        """Add the tokens' estimated USD (``batch``: at the Batch API's price) to
        ``cost_usd`` (``saved_cost_usd`` when ``saved``); both become ``None`` (unknown)
        when the run cannot be priced."""
        stats = self.stats
        if self.unpriced() is not None:
            stats.cost_usd = stats.saved_cost_usd = None
            return
        usd = costs.usd(self.prices[self.model], prompt, cached, completion, batch)
        if saved and stats.saved_cost_usd is not None:
            stats.saved_cost_usd += usd
        elif not saved and stats.cost_usd is not None:
            stats.cost_usd += usd

    async def aclose(self) -> None:
        """Close the HTTP client (once no transport sharing it uses it)."""
        if self._client is not None:
            client, self._client = self._client, None
            if self.budget.done_with(client):
                await client.close()

