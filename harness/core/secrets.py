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

from harness.core.redact import redact

PREFIX = "HARNESS_SECRET_"
# Hydra's override_dirname escapes the reference: $\{oc.env\:HARNESS_SECRET_0\}
_REFERENCE = re.compile(r"\$\\?\{oc\.env\\?:(" + PREFIX + r"\d+)\\?\}")
#: A sweep's list of URIs (``a://...,b://...``): each is hidden on its own, so it stays a sweep.
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def hide(args: list[str]) -> list[str]:
    """``args`` with each credential-bearing override value moved to the environment (each
    element of a sweep's comma-separated list of URIs on its own)."""
    out = []
    for arg in args:
        key, sep, value = arg.partition("=")
        if sep and not key.startswith("-") and redact(value) != value:
            parts = value.split(",")
            if len(parts) < 2 or not all(_URI.match(p.strip()) for p in parts):
                parts = [value]
            arg = f"{key}=" + ",".join(_hidden(p) if redact(p) != p else p for p in parts)
        out.append(arg)
    return out


def _hidden(value: str) -> str:
    """A reference to a new environment variable holding ``value``."""
    name = f"{PREFIX}{sum(k.startswith(PREFIX) for k in os.environ)}"
    os.environ[name] = value
    return f"${{oc.env:{name}}}"


def reveal(text: str) -> str:
    """``text`` with each hidden value's reference replaced by the value, redacted."""
    return _REFERENCE.sub(lambda m: redact(os.environ.get(m[1], m[0])), text)
