"""What a failed judge request means, in one line the user can act on.

The openai SDK raises its own exceptions; these turn them into the harness's: how many
requests were really sent (the SDK's ``x-stainless-retry-count`` header on the last one), a
server's message quoted through ``redact`` (some proxies echo the API key), and for the
statuses that no retry can fix (401, 403, 404) a run-stopping ``ConfigError`` that says what
to change. Nothing here prints the endpoint with its credentials.
"""

from __future__ import annotations

import http
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from harness.errors import ConfigError, HarnessError, JudgeError, JudgeUnavailable
from harness.redact import redact, redact_uri

if TYPE_CHECKING:
    import openai


@dataclass(frozen=True)
class Endpoint:
    """Who a judge talks to, for messages: the endpoint without credentials, the variable
    its key comes from, the model asked for and the models it listed (if it did)."""

    base_url: str | None
    api_key_env: str | None
    model: str
    timeout: float = 60.0
    url_has_credentials: bool = False
    served: Sequence[str] = ()

    @property
    def where(self) -> str:
        """The endpoint as printed: never with its credentials."""
        return "the OpenAI API" if self.base_url is None else redact_uri(self.base_url)


def retries_taken(error: openai.APIError) -> int:
    """Retries the SDK made before ``error`` (the retry-count header of the last request)."""
    try:
        return max(int(error.request.headers.get("x-stainless-retry-count", "0")), 0)
    except (AttributeError, RuntimeError, ValueError):  # no request attached
        return 0


def server_message(error: openai.APIError) -> str:
    """The server's own message (``error.message`` of its JSON body), redacted, one line."""
    body = error.body
    text: object = None
    if isinstance(body, Mapping):
        text = body.get("message") or body.get("detail") or body.get("error")
    elif isinstance(body, str):
        text = body
    if not isinstance(text, str) or not text.strip():
        text = error.message.split(" - ", 1)[1] if " - " in error.message else ""
    return _clip(redact(" ".join(str(text).split())))


def status_text(status: int, message: str) -> str:
    """``HTTP 404 Not Found: <message>``."""
    try:
        phrase = http.HTTPStatus(status).phrase
    except ValueError:
        phrase = ""
    head = f"HTTP {status} {phrase}".rstrip()
    return f"{head}: {message}" if message else head


def after(retries: int) -> str:
    """`` after N retries`` when the SDK retried, else nothing."""
    if retries <= 0:
        return ""
    return f" after {retries} retr{'y' if retries == 1 else 'ies'}"


def auth_failure(end: Endpoint, status: int, message: str) -> ConfigError:
    """A 401 or 403: say where the key came from, or how to give one."""
    what = status_text(status, message)
    if end.api_key_env is not None:
        return ConfigError(
            f"judge: {end.where} rejected the API key from ${end.api_key_env} ({what}); "
            f"check the key in ${end.api_key_env}"
        )
    if end.url_has_credentials:
        return ConfigError(
            f"judge: {end.where} rejected the credentials in judge.base_url ({what})"
        )
    return ConfigError(
        f"judge: {end.where} wants an API key ({what}); put it in an environment variable "
        "and set judge.api_key_env=NAME"
    )


def not_found(end: Endpoint, path: str, message: str) -> ConfigError:
    """A 404: the model is not served, or the base URL misses the API's path."""
    if "model" in message.lower():
        served = ", ".join(list(end.served)[:8])
        return ConfigError(
            f"judge: {end.where} does not serve the model {end.model!r} "
            f"({status_text(404, message)}); set judge.model to "
            + (f"one it serves: {served}" if served else "a model it serves")
        )
    head = f"judge: {end.where} answered 404 Not Found for {path}"
    if end.base_url is None:
        return ConfigError(f"{head} ({message})" if message else head)
    base = end.where.rstrip("/")
    if not urlsplit(base).path.rstrip("/").endswith("/v1"):
        return ConfigError(
            f"{head}; the base URL probably lacks /v1 (judge.base_url={base}/v1)"
        )
    return ConfigError(f"{head}; check judge.base_url (the API's root, such as http://HOST:PORT/v1)")


def connection_failure(end: Endpoint, error: openai.APIConnectionError) -> HarnessError:
    """A request that got no answer after every retry."""
    import openai

    cause = error.__cause__
    if not isinstance(error, openai.APITimeoutError) or "connect" in str(cause).lower():
        # Refused or dropped connections after every retry: the endpoint is down, and
        # every other call would wait out the same retries.
        detail = _clip(redact(str(cause or error.message)))
        return JudgeUnavailable(
            f"judge endpoint {end.where} stopped answering ({detail}); finished rows are "
            "kept, rerun to resume from the cache"
        )
    return JudgeError(
        f"judge call failed{after(retries_taken(error))}: no answer within "
        f"judge.timeout={end.timeout:g} s"
    )


def call_failure(end: Endpoint, error: openai.APIError, path: str) -> HarnessError:
    """The error a failed chat call raises: ``ConfigError`` stops the run (nothing will
    work until the config changes), ``JudgeError`` leaves this judgement unscored."""
    import openai

    if isinstance(error, openai.APIConnectionError):
        return connection_failure(end, error)
    retries = retries_taken(error)
    if isinstance(error, openai.APIStatusError):
        status, message = error.status_code, server_message(error)
        if status in (401, 403):
            return auth_failure(end, status, message)
        if status == 404:
            return not_found(end, path, message)
        if status == 400:
            return JudgeError(f"judge rejected the request: {status_text(400, message)}")
        return JudgeError(f"judge call failed{after(retries)}: {status_text(status, message)}")
    return JudgeError(f"judge call failed{after(retries)}: {_clip(redact(error.message))}")


def _clip(text: str, limit: int = 200) -> str:
    text = text.splitlines()[0] if text else ""
    return text if len(text) <= limit else text[:limit] + "…"
