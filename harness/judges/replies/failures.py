"""What a failed judge request means, in one line the user can act on.

The openai SDK raises its own exceptions; these turn them into the harness's: how many
requests were really sent (the SDK's ``x-stainless-retry-count`` header on the last one), a
server's message quoted through ``redact`` (some proxies echo the API key), and for the
statuses that no retry can fix (401, 403, 404) a run-stopping ``ConfigError`` that says what
to change. Nothing here prints the endpoint with its credentials.
"""

from __future__ import annotations

import http
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from harness.core.errors import ConfigError, HarnessError, JudgeError, JudgeUnavailable, headline
from harness.core.redact import redact, redact_uri
from harness.core.text import clip, one_line

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
    """The server's whole message (``error.message`` of its JSON body), redacted, with its
    lines (a pydantic error's cause is on the second) and capped at ``MESSAGE_CHARS``;
    ``harness.core.errors.headline`` gives its first meaningful line for the console."""
    body = error.body
    text: object = None
    if isinstance(body, Mapping):
        text = body.get("message") or body.get("detail") or body.get("error")
    elif isinstance(body, str):
        text = body
    if not isinstance(text, str) or not text.strip():
        text = error.message.split(" - ", 1)[1] if " - " in error.message else ""
    return full_text(str(text))


#: The most of a server's message kept in a row.
MESSAGE_CHARS = 4000


def full_text(text: str) -> str:
    """``text`` redacted, without blank lines or trailing spaces, capped at ``MESSAGE_CHARS``."""
    lines = [line.rstrip() for line in redact(text).splitlines() if line.strip()]
    text = "\n".join(lines)
    return clip(text, MESSAGE_CHARS)


#: Where a server's error names the output format: its field, the schema, structured output
#: or the grammar a schema becomes (llama.cpp, vLLM's xgrammar/outlines, Ollama's ``format``).
_FORMAT_WORDS = re.compile(
    r"response[_ ]format|json[_ ]schema|\bschema\b|structured[_ ]outputs?|guided[_ ]"
    r"(?:json|decoding)|\bgrammar\b|xgrammar",
    re.IGNORECASE,
)
#: ... and says it was refused (not merely echoing the request).
_REJECTION = re.compile(
    r"not (?:be )?supported|unsupported|(?:does not|doesn't|do not|cannot|can't) support|"
    r"invalid|not valid|should be|must be|expected|not allowed|not permitted|unknown|"
    r"unrecognized|validation error|failed|cannot|can't|unable|not implemented|"
    r"is required|must contain|not available",
    re.IGNORECASE,
)
#: Statuses whose cause is not the request's content (try later, or fix the credentials).
_NOT_THE_FORMAT = frozenset({401, 403, 404, 408, 409, 429, 502, 503, 504})


def rejects_format(status: int, text: str) -> bool:
    """Whether an error answer (any 4xx or 5xx but those that name another cause) says the
    request's ``response_format`` was refused, so a lower output mode may succeed.

    ``text``: the server's message or the SDK's error text. Servers say no differently:
    OpenAI 400 ``Invalid parameter: 'response_format' of type 'json_schema' is not
    supported with this model``, llama-cpp-python 500 ``1 validation error: ... 'loc':
    ('body', 'response_format', 'type'), 'msg': "Input should be 'text' or 'json_object'"``,
    vLLM 400 ``The provided JSON schema contains features not supported by xgrammar``,
    Ollama ``invalid JSON schema in format``, LiteLLM ``UnsupportedParamsError: ... does
    not support parameters: ['response_format']``.
    """
    if not 400 <= status <= 599 or status in _NOT_THE_FORMAT:
        return False
    for match in _FORMAT_WORDS.finditer(text):
        # the refusal is said near the word: in its sentence, not anywhere in an echo
        window = text[max(match.start() - 200, 0) : match.end() + 200]
        if _REJECTION.search(window):
            return True
    return False


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
    """A 401 or 403: say where the key came from, or how to give one (in one line)."""
    what = status_text(status, headline(message))
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
    """A 404: the model is not served, or the base URL misses the API's path (one line)."""
    message = headline(message)
    if "model" in message.lower():
        served = one_line(", ".join(list(end.served)[:8]), None)  # the server's own strings
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


def quota_spent(end: Endpoint, error: openai.APIStatusError) -> str | None:
    """The line for a 429 that no wait cures: the account's credit or quota is spent
    (OpenAI's ``insufficient_quota``); every other call would be refused too, so the run
    stops (``None``: another 429, or another status)."""
    body = getattr(error, "body", None)
    kinds = {getattr(error, "code", None), getattr(error, "type", None)}
    if isinstance(body, dict):
        kinds |= {body.get("code"), body.get("type")}
    if error.status_code != 429 or "insufficient_quota" not in kinds:
        return None
    message = _clip(headline(server_message(error)), 120)
    return (f"judge: {end.where} refused the call: the account's quota is spent "
            f"({status_text(429, message)}); waiting will not help: add credit or raise the "
            "quota, or use another key (judge.api_key_env) or judge; finished rows are kept, "
            "rerun to resume from the cache")


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
    return clip(text.splitlines()[0] if text else "", limit)
