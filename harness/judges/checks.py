"""The judge's settings that no range states, checked before any work: its names, its
prices' keys, its URL and its key. Its numbers and choices are ranges annotated on
``OpenAIJudge.__init__``, checked by ``harness.core.validation`` as every part's are."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any
from urllib.parse import unquote, urlsplit, urlunsplit

from harness.core.errors import ConfigError, closest
from harness.core.redact import redact_uri
from harness.core.validation import Range, check_value

#: Keys of one model's ``prices`` entry: USD per million tokens, and ``batch``, the factor
#: the Batch API bills them at (``BATCH_DISCOUNT`` when not given).
PRICE_KEYS = ("input", "cached_input", "output", "batch")
#: The Batch API's price as a share of the realtime one (OpenAI, Anthropic: half).
BATCH_DISCOUNT = 0.5
#: The most candidates per token the OpenAI API returns.
MAX_TOP_LOGPROBS = 20
#: A price: USD per million tokens.
Price = Annotated[float, Range(ge=0)]
#: A share of the realtime price.
Factor = Annotated[float, Range(ge=0, le=1)]


def _fail(key: str, expected: str, value: Any) -> ConfigError:
    return ConfigError(f"{key}: expected {expected}, got {value!r}")


def check_names(model: Any, api_key_env: Any) -> None:
    """``model`` names a model; ``api_key_env`` names an environment variable (or is null)."""
    if not isinstance(model, str) or not model.strip():
        raise _fail("judge.model", "the name of a model the endpoint serves", model)
    env = api_key_env
    if env is not None and (not isinstance(env, str) or not env.strip() or "=" in env):
        raise _fail("judge.api_key_env", "the NAME of an environment variable, or null", env)


def check_prices(prices: Any) -> dict[str, dict[str, float]]:
    """``{model: {input, cached_input, output, batch}}`` with non-negative finite prices and
    a batch factor in [0, 1]."""
    if prices is None:
        return {}
    if not isinstance(prices, Mapping):
        raise _fail("judge.prices", "a mapping {model: {input, cached_input, output}}", prices)
    out: dict[str, dict[str, float]] = {}
    for model, entry in prices.items():
        key = f"judge.prices.{model}"
        if not isinstance(entry, Mapping):
            raise _fail(key, "a mapping with input, cached_input and output", entry)
        for name, price in entry.items():
            if name not in PRICE_KEYS:
                raise ConfigError(
                    f"{key}.{name}: unknown price{closest(str(name), PRICE_KEYS)}; "
                    f"a price entry has {', '.join(PRICE_KEYS)}"
                )
            check_value(f"{key}.{name}", Factor if name == "batch" else Price, price)
        out[str(model)] = {str(k): float(v) for k, v in entry.items()}
    return out


def split_base_url(
    base_url: Any, setting: str = "judge.base_url"
) -> tuple[str | None, tuple[str, str] | None]:
    """``(base URL without credentials, (user, password) or None)``; raise ``ConfigError``
    naming ``setting`` for anything but an ``http(s)://host[:port]/path`` URL (printed
    without credentials)."""
    if base_url is None:
        return None, None
    shown = redact_uri(base_url) if isinstance(base_url, str) else base_url
    example = "an http:// or https:// URL such as http://localhost:8000/v1"
    if not isinstance(base_url, str):
        raise _fail(setting, example, shown)
    try:
        parts = urlsplit(base_url.strip())
        parts.port  # noqa: B018 (raises ValueError for a malformed port)
    except ValueError:
        raise _fail(setting, example, shown) from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _fail(setting, example, shown)
    user, password = parts.username, parts.password
    if user is None and password is None:
        return base_url.strip(), None
    clean = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    return clean, (unquote(user or ""), unquote(password or ""))


def header_safe(key: str, env: str) -> str:
    """``key`` if it can go in an HTTP header; else one line naming ``env`` (never the key)."""
    if any(c in key for c in "\r\n"):
        raise ConfigError(
            f"judge.api_key_env: the environment variable {env} holds a line break (a key "
            "copied with its line end, or from a Windows file?); set it to the key alone"
        )
    if not key.isascii() or not key.isprintable():
        raise ConfigError(
            f"judge.api_key_env: the environment variable {env} holds a character that is not "
            "printable ASCII (a control character, or bytes that are not UTF-8), which no "
            "HTTP header can carry; set it to the key alone"
        )
    return key
