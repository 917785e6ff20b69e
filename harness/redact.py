"""Credentials out of every text the harness writes."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def redact_uri(uri: str) -> str:
    """Drop credentials from a URI (``scheme://user:pass@host`` -> ``scheme://***@host``)."""
    parts = urlsplit(uri)
    if parts.username or parts.password:
        host = parts.hostname or ""
        netloc = f"***@{host}" + (f":{parts.port}" if parts.port else "")
        return urlunsplit(parts._replace(netloc=netloc))
    return uri
