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
#: A value that is one interpolation (``${oc.env:MY_KEY}``): where the secret is, not it.
_INTERPOLATION = re.compile(r"\$\{[^${}]*(?:\$\{[^${}]*\}[^${}]*)*\}")
# scheme://userinfo@ : the userinfo is everything up to the last "@" before the host part.
_URI_CREDENTIALS = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/\s@]*@)")
# ...?password=...& , ...#access_token=... (libpq and SQLAlchemy URLs take credentials as
# query parameters too; presigned URLs sign with ?X-Amz-Signature=, ?sig=; Google ?key=)
_QUERY_PARAM = re.compile(r"(?P<key>[?&#;](?P<name>[A-Za-z][\w.-]*)=)(?P<value>[^&#;\s'\"]+)")
#: Query parameters that carry a secret though ``secret_key`` does not say so of the name.
_QUERY_SECRETS = {"pwd", "sig", "signature", "key", "x-amz-signature",
                  "x-amz-credential", "x-amz-security-token", "x-goog-signature",
                  "x-goog-credential"}
#: ``Authorization: Bearer <token>`` (and Basic, Token, ...) in any text: the credential.
_AUTH_SCHEME = re.compile(
    r"(?P<scheme>\b(?:Bearer|Basic|Token|Digest|ApiKey|Api-Key|Negotiate)\s+)"
    r"(?P<value>[A-Za-z0-9._~+/=:-]{8,})"
)
#: A PEM private key, whole (``-----BEGIN RSA PRIVATE KEY-----`` ... ``-----END ...-----``).
_PEM = re.compile(r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----.*?(?:-----END \1PRIVATE KEY-----|\Z)",
                  re.DOTALL)

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
    """``text`` with URI credentials, secret query parameters, ``Bearer``/``Basic``
    credentials, PEM private keys and registered secret values masked."""
    if "@" in text and "://" in text:
        text = _URI_CREDENTIALS.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    if "=" in text and ("?" in text or "#" in text or ";" in text):
        text = _QUERY_PARAM.sub(_query_param, text)
    if " " in text or "\t" in text:
        text = _AUTH_SCHEME.sub(_auth_value, text)
    if "PRIVATE KEY-----" in text:
        text = _PEM.sub(MASK, text)
    for secret in _SECRETS:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def _query_param(m: re.Match[str]) -> str:
    name = m["name"].lower()
    if m["value"] == MASK or not (name in _QUERY_SECRETS or secret_key(name)):
        return m[0]
    return f"{m['key']}{MASK}"


def _auth_value(m: re.Match[str]) -> str:
    # a word after "Bearer"/"Basic" in prose is not a credential: one has a digit, a sign
    # or a capital inside (``dXNlcjpwYXNz``, ``eyJhbGci...``, ``sk-...``)
    if not re.search(r"[0-9+/=_.~:-]|[a-z][A-Z]", m["value"]):
        return m[0]
    return f"{m['scheme']}{MASK}"

#: Parts of a setting's name (split at ``_``, ``-``, ``.``, and between camelCase words)
#: that say its value is a secret; a pair of parts joined counts too (``api_key``).
_SECRET_PARTS = {"password", "passwd", "pwd", "passphrase", "secret", "token", "apikey",
                 "credential", "credentials", "authorization", "privatekey", "accesskey",
                 "secretkey", "signingkey", "cookie", "xapikey"}
#: Parts that name a secret only as the last word (``auth``, ``basic_auth``; not ``auth_type``).
_SECRET_LAST = {"auth", "key"}
#: Last words that make a secret-sounding name a name of one, or a count.
_NOT_SECRET_LAST = {"env", "file", "path", "id", "name", "type", "url", "uri", "header",
                    "count", "limit", "len", "length"}


def secret_key(name: str) -> bool:
    """Whether a setting named ``name`` holds a secret (``api_key``, ``password``,
    ``auth_token``, ``retriever.client_secret``, ``Authorization``, ``private_key``,
    ``auth``), not a name of one (``api_key_env``) nor a count (``max_tokens``)."""
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name.lstrip("+~"))
    parts = [p for p in re.split(r"[_\-.\s]+", name.lower()) if p]
    if not parts or parts[-1] in _NOT_SECRET_LAST:
        return False
    leaf = parts[-1:] if len(parts) < 2 else parts[-2:]  # the setting's own name
    if leaf[-1] in _SECRET_LAST and (len(leaf) == 1 or leaf[0] not in {"id", "sort", "cache"}):
        return leaf[-1] == "auth" or len(leaf) == 2 and leaf[0] in {
            "api", "private", "secret", "access", "signing", "x", "subscription", "master",
            "account", "client", "encryption", "ssh", "auth"}
    pairs = {a + b for a, b in zip(parts, parts[1:], strict=False)}
    return bool(_SECRET_PARTS & {*parts, *pairs})

def register_tree(value: Any, secret: bool = False) -> None:
    """``register`` every value under a secret-named key in nested dicts and lists (a
    user's ``retriever.api_key``, each element of an ``auth`` pair), so that ``redact``
    masks it in any text from now on."""
    if isinstance(value, dict):
        for k, v in value.items():
            register_tree(v, secret or isinstance(k, str) and secret_key(k))
    elif isinstance(value, (list, tuple)):
        for v in value:
            register_tree(v, secret)
    elif secret and isinstance(value, (str, int, float)) and not isinstance(value, bool) and (
            not _INTERPOLATION.fullmatch(str(value))):
        register(str(value))


def redact_tree(value: Any) -> Any:
    """``redact`` applied to every string in nested dicts, lists and tuples (keys too); the
    value of a secret-named key (``secret_key``) is masked whole, each element of a list or
    mapping under one too."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact_tree(k): _masked(v) if isinstance(k, str) and secret_key(k)
                else redact_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_tree(v) for v in value)
    return value


def _masked(value: Any) -> Any:
    """Every value under a secret-named key masked (``None``, ``""`` and booleans kept: they
    say a setting is unset or off, not what it is)."""
    if isinstance(value, dict):
        return {redact_tree(k): _masked(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_masked(v) for v in value)
    if value is None or value == "" or isinstance(value, bool):
        return value
    if isinstance(value, str) and _INTERPOLATION.fullmatch(value):  # ${oc.env:KEY}: a name
        return redact(value)
    return MASK
