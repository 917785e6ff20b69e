"""A judge on any OpenAI-compatible chat-completions endpoint.

``ChatTransport`` (``harness.judges.transport.chat``) sends the requests, with the SDK's
transport retries, or the Batch API does (``judge.batch``, ``harness.judges.batch``); this
wrapper adds the verdict cache, retries of unusable replies (``parse_retries``) and
independent draws.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated, Any, Literal, TypeVar

from harness.core.errors import ConfigError
from harness.core.protocols import Judge, Kind
from harness.core.redact import redact_uri
from harness.core.types import Completion, JudgeRequest, JudgeStats
from harness.core.validation import Range, check_call
from harness.judges import batch as batched
from harness.judges.cache import lookup as cached
from harness.judges.checks import MAX_TOP_LOGPROBS, check_names, check_prices, split_base_url
from harness.judges.dry import GoesDry
from harness.judges.identity import AUTO
from harness.judges.replies import reask
from harness.judges.replies.read import tokens
from harness.judges.replies.schemas import SCHEMAS
from harness.judges.transport.chat import ChatTransport, OutputMode

T = TypeVar("T")

__all__ = ["SCHEMAS", "Completion", "JudgeStats", "Kind", "OpenAIJudge", "OutputMode"]


class OpenAIJudge(GoesDry):
    """A chat model judging relevance over an OpenAI-compatible endpoint.

    Args:
        model: The model name the endpoint serves (``auto``: the one model it lists).
        base_url: The endpoint (``None``: ``$OPENAI_BASE_URL``, else OpenAI). vLLM, Ollama,
            llama.cpp and LiteLLM serve the same protocol under ``http://HOST:PORT/v1``.
            Credentials in it (``http://user:pass@host/v1``) are sent as HTTP basic auth
            (with ``api_key_env`` null) and never printed or written.
        api_key_env: NAME of the environment variable holding the API key (the key is
            never in config or logs). ``None`` for servers that need no key.
        temperature: Sampling temperature.
        top_p: Nucleus sampling (``None``: the endpoint's default).
        max_tokens: Cap on reply tokens (``None``: the endpoint's default).
        seed: Sampling seed, for endpoints that honour it.
        timeout: Seconds per HTTP request.
        max_retries: Retries of a request (429, 5xx, timeouts, dropped connections), each
            after a back-off (``Retry-After`` when the server gives one) and a new permit.
        max_wait: Seconds at most that a server's header (``Retry-After``,
            ``x-ratelimit-reset-*``) can make requests wait; a refusal asking for longer ends
            the run (exit 2), a quota said spent for longer is not waited for.
        max_timeouts_in_a_row: Time-outs in a row, with nothing answered in between nor for
            two ``timeout``, that end the run (exit 2): the server accepts connections but
            does not answer. ``None``: never stop for time-outs.
        max_concurrency: Requests in flight at most (variants of one run judged at one
            endpoint with the same settings share them: ``share_pacing``).
        pacing: ``adaptive`` (default): the limit on requests in flight starts low (or at
            the server's slot count when it tells) and follows the server's latency, 429s,
            503s and time-outs, up to ``max_concurrency`` (``harness.judges.transport.pacing``);
            ``fixed``: always ``max_concurrency``.
        output_mode: ``json_schema`` (structured output, default), ``json_object_schema``
            (a JSON object constrained by the schema: llama.cpp's servers), ``json_object`` or
            ``text`` (lenient JSON extraction). An error that rejects the response format
            steps down to the next mode for the rest of the run.
        parse_retries: Re-asks after an unusable reply, before the sample is unscored.
        top_logprobs: Candidates per token requested for soft verdicts.
        prices: USD per million tokens by model: ``{model: {input, cached_input, output}}``,
            and ``batch``: the share of these the Batch API bills (0.5 unless set).
        extra_body: Extra JSON fields sent with every request (endpoint-specific options).
        preflight_timeout: Seconds to wait for the endpoint's answer before the run starts.
        cache: Keep every usable reply in a persistent cache and reuse it: a rerun, or a
            sweep whose retrievals overlap, pays for each distinct question once.
        cache_path: The cache file (``null``: ``$XDG_CACHE_HOME/harness/verdicts.sqlite``).
        cache_url: A PostgreSQL cache shared by every process and machine
            (``postgresql://USER@HOST:PORT/DB``; the password in it or in ``PGPASSWORD``,
            never printed): instead of the file. A key being paid for is claimed, so two
            processes asking for it at once pay once (``harness.judges.cache.postgres``).
        samples: Independent verdicts per judgement (for temperature > 0): draw ``i`` is
            sent with seed ``seed + i`` and cached on its own.
        vote: How several verdicts combine: ``majority`` (relevant iff at least half say
            so) or ``mean`` (the share that say so, a graded relevance).
        batch: Send the run's requests through the endpoint's Batch API (half price,
            answered within 24 h): one batch per round of requests, its ids kept in the
            verdict cache, so the same command run again resumes it (``harness.judges.batch``).
        batch_poll: Seconds between two looks at a running batch.
        batch_retry: How a line that failed is tried again (up to ``max_retries`` times):
            in a later ``batch``, or as a ``realtime`` request.
        batch_max_requests: Requests one batch holds at most (OpenAI: 50,000); also the
            samples scored at once when ``run.batch_size`` is null.
        batch_max_bytes: Bytes one batch's input file holds at most (OpenAI: 200 MB).
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str | None = "OPENAI_API_KEY",
        temperature: Annotated[float, Range(ge=0)] = 0.0,
        top_p: Annotated[float, Range(gt=0, le=1)] | None = None,
        max_tokens: Annotated[int, Range(ge=1)] | None = 1024,
        seed: int | None = 0,
        timeout: Annotated[float, Range(gt=0)] = 60.0,
        max_retries: Annotated[int, Range(ge=0)] = 5,
        max_concurrency: Annotated[int, Range(ge=1)] = 16,
        pacing: Literal["adaptive", "fixed"] = "adaptive",
        output_mode: OutputMode = "json_schema",
        parse_retries: Annotated[int, Range(ge=0)] = 2,
        top_logprobs: Annotated[int, Range(ge=0, le=MAX_TOP_LOGPROBS)] = 5,
        prices: Mapping[str, Mapping[str, float]] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        preflight_timeout: Annotated[float, Range(gt=0)] = 10.0,
        cache: bool = True,
        cache_path: str | None = None,
        cache_url: str | None = None,
        samples: Annotated[int, Range(ge=1)] = 1,
        vote: Literal["majority", "mean"] = "majority",
        max_wait: Annotated[float, Range(ge=0)] = 60.0,
        max_timeouts_in_a_row: Annotated[int, Range(ge=1)] | None = 8,
        batch: bool = False,
        batch_poll: Annotated[float, Range(gt=0)] = 30.0,
        batch_retry: Literal["batch", "realtime"] = "batch",
        batch_max_requests: Annotated[int, Range(ge=1)] = 50_000,
        batch_max_bytes: Annotated[int, Range(ge=1)] = 200_000_000,
    ) -> None:
        check_names(model, api_key_env)
        prices = check_prices(prices)
        check_call("judge", OpenAIJudge.__init__, locals())  # the ranges annotated above
        if batch and not cache:
            raise ConfigError("judge.batch=true keeps its batches in the verdict cache, so that "
                              "a rerun resumes them and pays nothing twice; set judge.cache="
                              "true (or judge.batch=false)")
        self._endpoint_key = split_base_url(base_url)[0] or "openai"  # not its credentials
        self.stats = JudgeStats()
        self.transport = ChatTransport(
            model,
            self.stats,
            base_url=base_url,
            api_key_env=api_key_env,
            temperature=temperature,
            top_p=top_p,
            max_tokens=max_tokens,
            seed=seed,
            timeout=timeout,
            max_retries=max_retries,
            max_wait=max_wait,
            max_timeouts_in_a_row=max_timeouts_in_a_row,
            max_concurrency=max_concurrency,
            pacing=pacing,
            output_mode=output_mode,
            top_logprobs=top_logprobs,
            prices=prices,
            extra_body=extra_body,
            preflight_timeout=preflight_timeout,
        )
        self.parse_retries, self.top_logprobs = parse_retries, top_logprobs
        self.cache_enabled, self.cache_path = cache, cache_path
        self.cache_url = cached.check_location(cache_path, cache_url) if cache else None
        self.samples = samples
        self.vote: str = vote
        self._resolving: asyncio.Future[None] | None = None
        #: Samples to score at once (a run's batch) when ``run.batch_size`` is null:
        #: ``None`` for the run's default; in batch mode a batch's worth.
        self.batch_samples = batch_max_requests if batch else None
        self._cache = cached.Opener(cache_path, self.cache_url, lease_s=2 * timeout,
                                    max_claims=self.batch_samples or max_concurrency)
        self.batcher = batched.of(self.transport, self._count_hit, poll=batch_poll,
                                  max_requests=batch_max_requests, max_bytes=batch_max_bytes,
                                  retry=batch_retry) if batch else None

    @property
    def model(self) -> str:
        """The model name (sent with every request, part of every cache key)."""
        return self.transport.model

    @model.setter
    def model(self, value: str) -> None:
        self.transport.model = value

    @property
    def base_url(self) -> str | None:
        """The endpoint (``None``: OpenAI)."""
        return self.transport.base_url

    @property
    def output_mode(self) -> OutputMode:
        """The output mode in use (it steps down when the endpoint rejects one)."""
        return self.transport.output_mode

    def describe(self) -> dict[str, Any]:
        """Everything that can change a verdict (no secrets): for outputs and cache keys."""
        t = self.transport
        return {
            "model": t.model,
            "base_url": None if t.base_url is None else redact_uri(t.base_url),
            "temperature": t.temperature,
            "top_p": t.top_p,
            "max_tokens": t.max_tokens,
            "seed": t.seed,
            "output_mode": t.output_mode,
            "extra_body": t.extra_body,
            "samples": self.samples,
            "vote": self.vote,
            "cache": cached.location(self.cache_path, self.cache_url, on=self.cache_enabled),
            **({} if self.batcher is None else {
                "batch_ids": list(self.stats.batch_ids),
                "resumed_batch_ids": list(self.stats.resumed_batch_ids)}),
            **t.identity.describe(t.model),
            **({"cost_unknown": why} if (why := t.unpriced()) else {}),
        }

    async def preflight(self) -> None:
        """Check, before the first judge call, that the verdict cache opens and the endpoint
        answers and accepts the key."""
        store = await self._open_cache()  # an unusable cache is refused before any request
        await self.transport.preflight()
        if self.batcher is not None:  # and an endpoint without the Batch API
            await self.batcher.prepare(store)

    async def ask(self, request: JudgeRequest, parse: Callable[[Completion], T]) -> T:
        """Call and parse, through the cache; re-ask up to ``parse_retries`` times after an
        unusable reply (``harness.judges.replies.reask``; not one the token limit cut: that
        raises ``JudgeReplyCut``). A usable reply is cached under the key of the original
        request.

        Args:
            request: The prompt and what shapes the reply (``JudgeRequest``).
            parse: Turns a completion into the caller's value; raises ``JudgeParseError``.
        """
        if self.transport.model == AUTO:
            await self._resolve()
        store = await self._open_cache()

        async def call() -> tuple[T, Completion]:
            return await reask.usable(lambda m: self._send(request, m), parse, request.messages,
                                      self.parse_retries, self.stats, self.transport.max_tokens)

        if store is None:
            return (await call())[0]
        meta = {"model": self.model, "prompt_sha": request.prompt_sha, "variant": request.variant}
        return await cached.through_cache(store, self._key(request, request.messages)[1], parse,
                                          call, stats=self.stats, on_hit=self._count_hit,
                                          meta=meta)

    def _key(self, r: JudgeRequest, messages: list[dict[str, str]]) -> tuple[bytes, str]:
        """The request body of ``r`` asked with ``messages``, and its verdict-cache key."""
        body = self.transport.body(messages, r.kind, r.logprobs, r.draw, r.items)
        served = self.transport.identity.key(self.model)  # which weights answer, if told
        return body, cached.request_key(self._endpoint_key, r.variant, r.prompt_sha, body, served)

    async def _send(self, r: JudgeRequest, messages: list[dict[str, str]]) -> Completion:
        """One completion of ``r`` asked with ``messages``: realtime, or a batch's line."""
        def realtime() -> Awaitable[Completion]:
            return self.transport.complete(messages, r.kind, r.logprobs, r.draw, r.items)

        if self.batcher is None:
            return await realtime()
        body, key = self._key(r, messages)
        return await self.batcher.complete(key, body, (self.model, r.prompt_sha, r.variant),
                                           r.logprobs, realtime)

    async def _open_cache(self) -> cached.ReplyStore | None:
        """The cache (``None`` when off), opened on first use."""
        return await self._cache.get() if self.cache_enabled else None

    def _count_hit(self, usage: Mapping[str, Any]) -> None:
        prompt = tokens(usage.get("prompt_tokens"))
        completion = tokens(usage.get("completion_tokens"))
        self.stats.cache_hits += 1
        self.stats.saved_prompt_tokens += prompt
        self.stats.saved_completion_tokens += completion
        self.transport.charge(prompt, 0, completion, saved=True, batch=bool(self.batcher))

    @property
    def paced(self) -> ChatTransport:
        """What sends its requests under a pacing budget (``Judge.paced``)."""
        return self.transport

    def share_pacing(self, other: Judge) -> bool:
        """Send ``other``'s requests (another judge of this run) under this one's pacing
        budget when both send to the same endpoint with the same settings; whether they do."""
        peer = other.paced
        return peer is not None and self.transport.share_pacing(peer)

    async def _resolve(self) -> None:
        """``judge.model=auto`` without a preflight: ask the server once."""
        if self._resolving is None:
            self._resolving = asyncio.ensure_future(self.transport.preflight())
        await asyncio.shield(self._resolving)

    async def aclose(self) -> None:
        """Say which batches still run (a rerun resumes them), close the HTTP client and
        the cache."""
        if self.batcher is not None:
            await self.batcher.aclose(self._cache.store)
        await self._cache.aclose()
        await self.transport.aclose()
