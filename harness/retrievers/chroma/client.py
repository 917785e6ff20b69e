"""Talking to a Chroma server (``retriever=chroma``): where it is, and one-line errors.

Needs the ``chroma`` extra (``pip install -e '.[chroma]'``). ``chromadb`` is imported
when a client is made, never at import. The client never embeds (every call passes
vectors, and collections are opened with ``embedding_function=None``, so chromadb never
fetches its ONNX model) and its telemetry is off.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from harness.core.errors import ConfigError
from harness.core.redact import redact, register

#: Seconds to wait for the heartbeat before giving up (the client itself never times out).
CONNECT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Endpoint:
    """A Chroma server's address.

    Attributes:
        host: The host name or address.
        port: The TCP port.
        ssl: Talk HTTPS.
        headers: Sent with every request (Basic auth from a URL's credentials).
    """

    host: str
    port: int
    ssl: bool = False
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        """``http(s)://host:port``, without credentials (safe to show)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.ssl else 'http'}://{host}:{self.port}"


def endpoint(host: Any, port: Any) -> Endpoint:
    """Parse ``retriever.host`` (a host name, or a URL such as ``https://user:pw@db:8000``)
    and ``retriever.port`` (used when the URL names no port)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ConfigError(f"retriever.port: expected a TCP port 1..65535, got {port!r}")
    if not isinstance(host, str) or not host.strip():
        raise ConfigError(f"retriever.host: expected a host name or URL, got {host!r}")
    if "://" not in host:
        if any(c in host for c in "/@ ") or host.count(":") == 1:
            raise ConfigError(
                f"retriever.host: expected a host name such as 127.0.0.1 (the port goes in "
                f"retriever.port) or a URL such as http://db:8000, got {redact(host)!r}"
            )
        return Endpoint(host.strip("[]"), port)
    try:
        parts = urlsplit(host)
        url_port = parts.port
    except ValueError as e:
        raise ConfigError(f"retriever.host: not a URL ({e}): {redact(host)!r}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"retriever.host: expected an http:// or https:// URL, got {redact(host)!r}"
        )
    if parts.path.strip("/") or parts.query:
        raise ConfigError(
            f"retriever.host: a Chroma URL has no path or query, got {redact(host)!r}"
        )
    headers = {}
    if parts.username or parts.password:
        user, password = unquote(parts.username or ""), unquote(parts.password or "")
        register(password)
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        register(token)
        headers["Authorization"] = f"Basic {token}"
    return Endpoint(parts.hostname, url_port or port, parts.scheme == "https", headers)


def how_to_start(port: int) -> str:
    """The command that starts a local server on ``port``."""
    return f"chroma run --path DIR --host 127.0.0.1 --port {port}"


def connect(where: Endpoint) -> Any:
    """A ``chromadb.HttpClient`` of a server that answered its heartbeat.

    Raises:
        ConfigError: chromadb is not installed, or no Chroma server answers.
    """
    from harness.retrievers.extras import require_extra

    require_extra(["chromadb"], "retriever=chroma", "chroma")
    _heartbeat(where)
    import chromadb
    from chromadb.config import Settings

    with talking(where, "connecting"):
        return chromadb.HttpClient(
            host=where.host,
            port=where.port,
            ssl=where.ssl,
            headers=where.headers or None,
            settings=Settings(anonymized_telemetry=False),
        )


def _heartbeat(where: Endpoint) -> None:
    """Check that a Chroma server answers (bounded in time, unlike the client)."""
    request = urllib.request.Request(f"{where.url}/api/v2/heartbeat", headers=where.headers)
    try:
        with urllib.request.urlopen(request, timeout=CONNECT_TIMEOUT_S) as reply:  # noqa: S310
            body = json.loads(reply.read().decode("utf-8") or "{}")
    except urllib.error.HTTPError as e:
        if e.code in (401, 403):
            raise ConfigError(
                f"retriever.host: the Chroma server at {where.url} refused the credentials "
                f"(HTTP {e.code}); put them in the URL: retriever.host=http://USER:PASSWORD@HOST"
            ) from None
        raise _not_chroma(where, f"HTTP {e.code} from /api/v2/heartbeat") from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        raise ConfigError(
            f"retriever.host/retriever.port: no Chroma server answers at {where.url} "
            f"({redact(str(reason))}); start one with `{how_to_start(where.port)}`, or set "
            "retriever.host and retriever.port to where yours listens"
        ) from None
    if not isinstance(body, dict) or not any("heartbeat" in str(k) for k in body):
        raise _not_chroma(where, "no heartbeat in the reply")


def _not_chroma(where: Endpoint, why: str) -> ConfigError:
    return ConfigError(
        f"retriever.host/retriever.port: {where.url} does not look like a Chroma server "
        f"({why}); start one with `{how_to_start(where.port)}`"
    )


@contextmanager
def talking(where: Endpoint, doing: str) -> Iterator[None]:
    """Turn a failed call to the server into a one-line ``ConfigError``."""
    try:
        yield
    except ConfigError:
        raise
    except Exception as e:  # noqa: BLE001 - chromadb and httpx errors alike
        lines = [x for x in str(e).strip().splitlines() if x.strip()]
        why = f"{type(e).__name__}: {lines[0] if lines else ''}"
        raise ConfigError(
            f"retriever.host: the Chroma server at {where.url} failed while {doing} "
            f"({redact(why)[:300]})"
        ) from None
