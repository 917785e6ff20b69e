"""The judge's settings checked before any work: each bad value is one ``ConfigError``
naming the setting, what it expects and what it got (``judge.top_p: expected a number in
(0, 1] or null, got 1.5``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from harness.core.errors import ConfigError, closest
from harness.core.redact import redact_uri

#: Keys of one model's ``prices`` entry (USD per million tokens).
PRICE_KEYS = ("input", "cached_input", "output")
OUTPUT_MODES = ("json_schema", "json_object_schema", "json_object", "text")
VOTES = ("majority", "mean")
PACINGS = ("adaptive", "fixed")
#: The most candidates per token the OpenAI API returns.
MAX_TOP_LOGPROBS = 20


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _fail(key: str, expected: str, value: Any) -> ConfigError:
    return ConfigError(f"{key}: expected {expected}, got {value!r}")


def finite(key: str, value: Any, *, low: float = 0.0, strict: bool = False) -> None:
    """``value`` is a finite number ``>= low`` (``> low`` when ``strict``)."""
    sign = ">" if strict else ">="
    if not _number(value) or not math.isfinite(value) or (
        value <= low if strict else value < low
    ):
        raise _fail(key, f"a finite number {sign} {low:g}", value)


def at_least(key: str, value: Any, low: int, *, nullable: bool = False) -> None:
    """``value`` is an int ``>= low`` (or null when ``nullable``)."""
    if nullable and value is None:
        return
    if not _int(value) or value < low:
        raise _fail(key, f"an integer >= {low}" + (" or null" if nullable else ""), value)


def one_of(key: str, value: Any, options: tuple[str, ...]) -> None:
    """``value`` is one of ``options``."""
    if value not in options:
        raise _fail(key, " or ".join(repr(o) for o in options), value)


def check_prices(prices: Any) -> dict[str, dict[str, float]]:
    """``{model: {input, cached_input, output}}`` with non-negative finite prices."""
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
            finite(f"{key}.{name}", price)
        out[str(model)] = {str(k): float(v) for k, v in entry.items()}
    return out


def check_settings(values: Mapping[str, Any]) -> None:
    """Check ``OpenAIJudge``'s numeric and enumerated settings (named as in ``values``)."""
    v = values
    if not isinstance(v["model"], str) or not v["model"].strip():
        raise _fail("judge.model", "the name of a model the endpoint serves", v["model"])
    env = v["api_key_env"]
    if env is not None and (not isinstance(env, str) or not env.strip() or "=" in env):
        raise _fail("judge.api_key_env", "the NAME of an environment variable, or null", env)
    finite("judge.temperature", v["temperature"])
    top_p = v["top_p"]
    if top_p is not None and not (_number(top_p) and 0.0 < top_p <= 1.0):
        raise _fail("judge.top_p", "a number in (0, 1] or null", top_p)
    at_least("judge.max_tokens", v["max_tokens"], 1, nullable=True)
    if v["seed"] is not None and not _int(v["seed"]):
        raise _fail("judge.seed", "an integer or null", v["seed"])
    finite("judge.timeout", v["timeout"], strict=True)
    finite("judge.preflight_timeout", v["preflight_timeout"], strict=True)
    at_least("judge.max_retries", v["max_retries"], 0)
    finite("judge.max_wait", v["max_wait"])
    at_least("judge.max_timeouts_in_a_row", v["max_timeouts_in_a_row"], 1, nullable=True)
    at_least("judge.parse_retries", v["parse_retries"], 0)
    at_least("judge.max_concurrency", v["max_concurrency"], 1)
    one_of("judge.pacing", v["pacing"], PACINGS)
    top = v["top_logprobs"]
    if not _int(top) or not 0 <= top <= MAX_TOP_LOGPROBS:
        raise _fail("judge.top_logprobs", f"an integer from 0 to {MAX_TOP_LOGPROBS}", top)
    at_least("judge.samples", v["samples"], 1)
    one_of("judge.vote", v["vote"], VOTES)
    one_of("judge.output_mode", v["output_mode"], OUTPUT_MODES)
    extra = v["extra_body"]
    if extra is not None and not isinstance(extra, Mapping):
        raise _fail("judge.extra_body", "a mapping of extra JSON fields", extra)


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
