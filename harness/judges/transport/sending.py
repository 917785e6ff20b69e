"""The request loop of a chat transport: a permit from the pacer per HTTP request, our own
retries, and output-mode step-downs.

The SDK client makes no retries (``max_retries=0``): each retry here first waits its back-off
(the server's ``Retry-After``, else exponential with jitter), then keeps its permit only if
the limit, perhaps halved meanwhile, still has room, else queues for one again: a request
that timed out while the server may still be working on it is not re-sent straight into the
same queue. A rejection of the output format (``failures.rejects_format``, any status) steps
down to the next mode without spending a retry. ``stats.requests`` counts the HTTP requests
really sent; the HTTP time-out starts when the request has its permit, and bounds the
whole request (headers and body), not each read.

Two things end the run instead of waiting (``JudgeUnavailable``, exit 2, finished rows
kept): a refusal (429, 503, 504) whose headers ask for a wait past ``judge.max_wait``
(``pacing.waits``), and an endpoint that has stopped answering at all (``silence``).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Protocol

from harness.core.errors import JudgeError
from harness.core.protocols import Kind
from harness.core.redact import redact
from harness.core.types import JudgeStats
from harness.judges.replies import failures
from harness.judges.transport.pacing import (
    CONGESTED,
    Pacer,
    Ticket,
    backoff,
    retry_after,
    should_retry,
)
from harness.judges.transport.pacing.waits import told_by
from harness.judges.transport.silence import Silence

if TYPE_CHECKING:
    import httpx2
    import openai


class Outbound(Protocol):
    """What the loop needs of a transport (``ChatTransport``)."""

    stats: JudgeStats
    max_retries: int
    silence: Silence

    @property
    def output_mode(self) -> str:
        """The output mode requests are built with now."""

    @property
    def endpoint(self) -> failures.Endpoint:
        """Who the requests go to, for messages."""

    def body(
        self, messages: list[dict[str, str]], kind: Kind, logprobs: bool, draw: int,
        items: int | None = None,
    ) -> bytes:
        """The request JSON."""

    def step_down(self, mode: str) -> bool:
        """After ``mode`` was refused: use the next one (``False``: there is none)."""


async def post(
    out: Outbound,
    client: openai.AsyncOpenAI,
    pacer: Pacer,
    messages: list[dict[str, str]],
    kind: Kind,
    logprobs: bool,
    draw: int,
    items: int | None,
) -> bytes:
    """POST one chat completion; return the raw reply body.

    Raises ``JudgeError`` when this call failed for good, ``JudgeUnavailable`` or
    ``ConfigError`` (``harness.judges.replies.failures.call_failure``) when no call can succeed.
    """
    import httpx2
    import openai

    stats, silence, waits = out.stats, out.silence, pacer.waits
    stats.calls += 1
    retries, ok = 0, False
    headers = {"Content-Type": "application/json", "x-stainless-retry-count": "0"}
    ticket: Ticket | None = await pacer.acquire()
    try:
        while True:
            if ticket is None:
                ticket = await pacer.acquire()
            mode = out.output_mode  # as it is now: a step-down while this call queued applies
            try:
                body = out.body(messages, kind, logprobs, draw, items)
                silence.sending()  # raises when the endpoint was found silent meanwhile
                stats.requests += 1
                # judge.timeout bounds the whole request (the SDK's bounds each read: a
                # server dripping its reply a byte at a time would never time out)
                response, raw = await asyncio.wait_for(
                    _send(client, body, headers), out.endpoint.timeout
                )
            except openai.APIError as e:
                error: openai.APIError = e
            except asyncio.TimeoutError:  # TimeoutError itself from Python 3.11 on
                request = httpx2.Request("POST", f"{client.base_url}chat/completions",
                                         headers=headers)
                error = openai.APITimeoutError(request=request)
            except (httpx2.HTTPError, httpx2.InvalidURL) as e:  # not wrapped by the SDK
                stats.failures += 1
                raise JudgeError(f"judge call failed: {redact(str(e))}") from None
            else:
                ok = True
                silence.answered()
                pacer.observe(response.headers, ticket.sent_at)  # a rate-limit quota
                return raw
            hint, reply = None, None
            if isinstance(error, openai.APIStatusError):
                status, reply = error.status_code, error.response.headers
                silence.answered()
                if failures.rejects_format(status, error.message) and out.step_down(mode):
                    stats.calls += 1
                    ticket = pacer.renew(ticket)
                    continue
                spent = failures.quota_spent(out.endpoint, error)
                if spent is not None:  # every later call would be refused: none goes out
                    stats.failures += 1
                    raise silence.end(spent) from None
                hint = retry_after(reply)
                if status in CONGESTED:
                    past = waits.refused_past(reply, pacer.quotas)
                    if past is not None:  # a wait of hours: end the run, do not sleep
                        stats.failures += 1
                        raise silence.end(waits.refused_message(status, *past)) from None
                    pacer.back_off(ticket, hint, status, reply)
                again = should_retry(status, reply, waits.max_wait)
            elif isinstance(error, openai.APIConnectionError):  # a time-out, a dropped connection
                if isinstance(error, openai.APITimeoutError):
                    stats.timeouts += 1
                    silent = silence.timed_out(out.endpoint.where)
                    if silent is not None:
                        stats.failures += 1
                        raise silent from None
                pacer.back_off(ticket)
                again = True
            else:
                again = False
            if not again or retries >= out.max_retries:
                stats.failures += 1
                raise failures.call_failure(out.endpoint, error, "/chat/completions") from None
            retries += 1
            stats.retries += 1
            headers = {**headers, "x-stainless-retry-count": str(retries)}
            wait = backoff(retries, hint, waits.max_wait)
            if hint == wait:  # the server's: said on the console when long
                now = time.monotonic()
                waits.say(now, now + wait, told_by(reply))
            await asyncio.sleep(wait)  # the permit is held meanwhile
            ticket = pacer.renew(ticket)
    finally:
        if ticket is not None:
            pacer.release(ticket, ok)


async def _send(
    client: openai.AsyncOpenAI, body: bytes, headers: dict[str, str]
) -> tuple[httpx2.Response, bytes]:
    """POST ``body`` and read the whole reply."""
    import httpx2

    response = await client.post(
        "/chat/completions", cast_to=httpx2.Response, content=body, options={"headers": headers}
    )
    return response, await response.aread()
