"""Credentials given on the command line never reach a file.

Hydra writes the command line's overrides into ``.hydra/`` and into run names before any
of our code runs. An override whose value holds URI credentials
(``tracking.tracking_uri=http://user:pass@host``) is therefore handed to Hydra as
``${oc.env:HARNESS_SECRET_<n>}``, with the value itself in that environment variable of
this process (inherited by launcher workers); the config resolves to the real value, and
every text Hydra writes holds only the reference.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

from harness.core.redact import redact, register, secret_key

PREFIX = "HARNESS_SECRET_"
# Hydra's override_dirname escapes the reference: $\{oc.env\:HARNESS_SECRET_0\}
_REFERENCE = re.compile(r"\$\\?\{oc\.env\\?:(" + PREFIX + r"\d+)\\?\}")
#: A sweep's list of URIs (``a://...,b://...``): each is hidden on its own, so it stays a sweep.
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_PLACEHOLDER = "HARNESSREF"


def hide(args: list[str]) -> list[str]:
    """``args`` with each credential-bearing override value moved to the environment (each
    element of a sweep's comma-separated list of URIs on its own), and the value of each
    secret-named setting (``retriever.api_key=...``, ``harness.core.redact.secret_key``)."""
    out = []
    for arg in args:
        key, sep, value = arg.partition("=")
        if sep and not key.startswith("-") and value and "${" not in value and secret_key(key):
            register(value)  # masked in any text from now on
            arg = f"{key}={_hidden(value)}"  # retriever.api_key=...: the whole value
        elif sep and not key.startswith("-") and redact(value) != value and not (
            _password_is_reference(value)
        ):
            parts = value.split(",")
            if len(parts) < 2 or not all(_URI.match(p.strip()) for p in parts):
                parts = [value]
            arg = f"{key}=" + ",".join(_hidden(p) if redact(p) != p else p for p in parts)
        out.append(arg)
    return out


def _password_is_reference(value: str) -> bool:
    """Whether the only secret in ``value`` is an interpolation (``scheme://user:${oc.env:PW}
    @host``): then Hydra may write it as it is, and must resolve it, which it would not do
    inside a hidden value."""
    if "${" not in value:
        return False
    spans, depth, start = [], 0, 0
    for i, c in enumerate(value):
        if value.startswith("${", i):
            if depth == 0:
                start = i
            depth += 1
        elif c == "}" and depth:
            depth -= 1
            if depth == 0:
                spans.append((start, i + 1))
    probe, end = "", 0
    for a, b in spans:
        probe, end = probe + value[end:a] + _PLACEHOLDER, b
    probe += value[end:]
    try:
        password = urlsplit(probe).password
    except ValueError:
        return False
    query_free = redact(probe.split("?", 1)[0]) == redact(probe) if "?" in probe else True
    return password == _PLACEHOLDER and query_free


def _hidden(value: str) -> str:
    """A reference to a new environment variable holding ``value``."""
    name = f"{PREFIX}{sum(k.startswith(PREFIX) for k in os.environ)}"
    os.environ[name] = value
    return f"${{oc.env:{name}}}"


def reveal(text: str) -> str:
    """``text`` with each hidden value's reference replaced by the value, redacted."""
    return _REFERENCE.sub(lambda m: redact(os.environ.get(m[1], m[0])), text)
