"""Credentials out of every text the harness writes.

Two kinds of secret are removed: credentials inside URIs (``scheme://user:pass@host``,
whatever the scheme), and the values of secrets the process handles (an API key read from
the environment), which ``register`` adds as soon as they are read. ``redact`` is applied
by every writer: rows, summaries, config files, MLflow params and tags, console lines and
error messages quoted from servers.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

MASK = "***"
#: Secrets shorter than this are not masked in free text (too likely to hit ordinary words).
MIN_SECRET = 6
_SECRETS: set[str] = set()
# scheme://userinfo@ : the userinfo is everything up to the last "@" before the host part.
_URI_CREDENTIALS = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s@]*@)")
# ...?password=...&  (libpq and SQLAlchemy URLs take credentials as query parameters too)
_QUERY_CREDENTIALS = re.compile(
    r"(?P<key>[?&](?:password|passwd|pwd|api_key|apikey|access_token|token|secret)=)"
    r"(?P<value>[^&#\s'\"]+)",
    re.IGNORECASE,
)


def register(secret: str | None) -> None:
    """Remember a secret value (an API key) so that ``redact`` masks it everywhere."""
    if secret and len(secret) >= MIN_SECRET:
        _SECRETS.add(secret)


def redact_uri(uri: str) -> str:
    """Drop credentials from a URI (``scheme://user:pass@host`` -> ``scheme://***@host``)."""
    try:
        parts = urlsplit(uri)
        has_credentials = bool(parts.username or parts.password)
    except ValueError:  # e.g. a malformed port: fall back to the textual rule
        return redact(uri)
    if has_credentials:
        host = parts.hostname or ""
        try:
            port = parts.port
        except ValueError:
            port = None
        netloc = f"{MASK}@{host}" + (f":{port}" if port else "")
        return urlunsplit(parts._replace(netloc=netloc))
    return redact(uri)


def redact(text: str) -> str:
    """``text`` with URI credentials and registered secret values masked."""
    if "@" in text and "://" in text:
        text = _URI_CREDENTIALS.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    if "=" in text and "?" in text:
        text = _QUERY_CREDENTIALS.sub(lambda m: f"{m['key']}{MASK}", text)
    for secret in _SECRETS:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


#: Parts of a setting's name (split at ``_``, ``-``, ``.``) that say its value is a secret.
_SECRET_PARTS = {"password", "passwd", "pwd", "secret", "token", "apikey", "credential",
                 "credentials"}


def secret_key(name: str) -> bool:
    """Whether a setting named ``name`` holds a secret (``api_key``, ``password``,
    ``auth_token``, ``retriever.client_secret``), not a name of one (``api_key_env``) nor a
    count (``max_tokens``)."""
    parts = [p for p in re.split(r"[_\-.]+", name.lower().lstrip("+~")) if p]
    if not parts or parts[-1] == "env":
        return False
    pairs = {a + b for a, b in zip(parts, parts[1:], strict=False)}
    return bool(_SECRET_PARTS & {*parts, *pairs})


def register_tree(value: Any) -> None:
    """``register`` every string under a secret-named key in nested dicts and lists (a
    user's ``retriever.api_key``), so that ``redact`` masks it in any text from now on."""
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str) and secret_key(k) and isinstance(v, str):
                register(v)
            else:
                register_tree(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            register_tree(v)


def redact_tree(value: Any) -> Any:
    """``redact`` applied to every string in nested dicts, lists and tuples (keys too); the
    value of a secret-named key (``secret_key``) is masked whole."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact_tree(k): MASK if isinstance(k, str) and secret_key(k) and
                isinstance(v, str) and v else redact_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_tree(v) for v in value)
    return value
