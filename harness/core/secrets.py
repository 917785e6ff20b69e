"""Credentials given on the command line never reach a file.

Hydra writes the command line's overrides into ``.hydra/`` and into run names before any
of our code runs. An override whose value holds URI credentials
(``tracking.tracking_uri=http://user:pass@host``) is therefore handed to Hydra as
``${oc.env:HARNESS_SECRET_<n>}``, with the value itself in that environment variable of
this process (inherited by launcher workers); the config resolves to the real value, and
every text Hydra writes holds only the reference. A mapping or list value
(``'retriever.kwargs={api_key: K9..., headers: {Authorization: "Bearer ..."}}'``) keeps its
shape: each secret in it (the value of a secret-named key, a credential ``redact`` finds)
becomes a reference of its own, or, where that cannot be done exactly, the whole value is
``${oc.decode:${oc.env:HARNESS_SECRET_<n>}}``.
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import urlsplit

from harness.core.redact import redact, redact_tree, register, secret_key

PREFIX = "HARNESS_SECRET_"
# Hydra's override_dirname escapes the reference: $\{oc.env\:HARNESS_SECRET_0\}
_REFERENCE = re.compile(r"\$\\?\{oc\.decode\\?:\$\\?\{oc\.env\\?:(?P<decoded>" + PREFIX
                        + r"\d+)\\?\}\\?\}|\$\\?\{oc\.env\\?:(?P<text>" + PREFIX + r"\d+)\\?\}")
#: A sweep's list of URIs (``a://...,b://...``): each is hidden on its own, so it stays a sweep.
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_PLACEHOLDER = "HARNESSREF"
_WHOLE_REFERENCE = re.compile(r"\$\{oc\.env:(" + PREFIX + r"\d+)\}")


def hide(args: list[str]) -> list[str]:
    """``args`` with each credential-bearing override value moved to the environment (each
    element of a sweep's comma-separated list of URIs on its own), and the value of each
    secret-named setting (``retriever.api_key=...``, ``harness.core.redact.secret_key``)."""
    out = []
    for arg in args:
        key, sep, value = arg.partition("=")
        if sep and not key.startswith("-") and value and "${" not in value and secret_key(key):
            register(value)  # masked in any text from now on
            for leaf in _secret_leaves(value, True):
                register(leaf)
            # retriever.api_key=...: the whole value (a list or mapping stays one: decoded)
            arg = f"{key}={_hidden(value, decode=value.lstrip()[:1] in ('[', '{'))}"
        elif sep and not key.startswith("-") and value.lstrip()[:1] in ("[", "{"):
            arg = f"{key}={_hide_nested(value)}"
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


def _hidden(value: str, decode: bool = False) -> str:
    """A reference to a new environment variable holding ``value`` (``decode``: read back
    as the list or mapping it spells)."""
    name = f"{PREFIX}{sum(k.startswith(PREFIX) for k in os.environ)}"
    os.environ[name] = value
    return f"${{oc.decode:${{oc.env:{name}}}}}" if decode else f"${{oc.env:{name}}}"


def _parsed(value: str) -> Any:
    """Hydra's reading of an override's ``value`` (``None`` if it reads none, or a sweep)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        override = OverridesParser.create().parse_override(f"x={value}")
    except Exception:  # Hydra reports its own grammar errors, with its own message
        return None
    return None if override.is_sweep_override() else override.value()


def _secret_leaves(value: Any, secret: bool = False) -> list[Any]:
    """The scalars of a parsed value that are secrets: under a secret-named key, or a text
    with a credential in it. ``value`` as text is parsed first."""
    if isinstance(value, str) and value.lstrip()[:1] in ("[", "{"):
        value = _parsed(value)
    if isinstance(value, dict):
        return [x for k, v in value.items()
                for x in _secret_leaves(v, secret or secret_key(str(k)))]
    if isinstance(value, list):
        return [x for v in value for x in _secret_leaves(v, secret)]
    if isinstance(value, str) and "${" in value:  # a reference: Hydra writes no secret
        return []
    if secret and value is not None and value != "" and not isinstance(value, bool):
        return [value]
    return [value] if isinstance(value, str) and redact(value) != value else []


def _hide_nested(value: str) -> str:
    """A list or mapping value with each secret scalar in it a reference of its own;
    the whole value hidden (decoded) if that cannot be done exactly; ``value`` unchanged
    if it holds no secret."""
    parsed = _parsed(value)
    leaves = _secret_leaves(parsed)
    if not leaves:
        return value
    for leaf in leaves:
        register(str(leaf))
    text = value
    if all(isinstance(x, str) and len(x) >= 4 for x in leaves):
        for leaf in sorted(set(leaves), key=len, reverse=True):
            ref = _hidden(leaf)
            for quoted in (f'"{leaf}"', f"'{leaf}'", leaf):
                text = text.replace(quoted, f"'{ref}'" if quoted != leaf else ref)
        after = _parsed(text)
        if _revealed(after) == parsed and not set(_scalars(after)) & set(leaves):
            return text
    return _hidden(value, decode=True)


def _scalars(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _scalars(v)]
    if isinstance(value, list):
        return [x for v in value for x in _scalars(v)]
    return [value]


def _revealed(value: Any) -> Any:
    """A parsed value with each whole-string reference to a hidden value replaced by it:
    equal to the value before ``_hide_nested`` if that hid it exactly."""
    if isinstance(value, dict):
        return {k: _revealed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_revealed(v) for v in value]
    m = _WHOLE_REFERENCE.fullmatch(value) if isinstance(value, str) else None
    return os.environ.get(m[1], value) if m else value


def reveal(text: str) -> str:
    """``text`` with each hidden value's reference replaced by the value, redacted."""
    return _REFERENCE.sub(_revealed_reference, text)


def _revealed_reference(m: re.Match[str]) -> str:
    if m["text"]:
        return redact(os.environ.get(m["text"], m[0]))
    value = os.environ.get(m["decoded"])
    parsed = _parsed(value) if value else None
    if parsed is None:
        return redact(value or m[0])
    from hydra.core.override_parser.types import Override

    return redact(Override._get_value_element_as_str(redact_tree(parsed), space_after_sep=True))
