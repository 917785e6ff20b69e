"""Which model a judge endpoint really serves, and whether its cost can be priced.

Before the first call the transport lists ``/models``; for a server other than OpenAI's it
also asks, each optionally and briefly, llama.cpp's ``GET /props`` (``model_path``,
``model_alias``, ``total_slots``), vLLM's ``root`` in ``/models`` and Ollama's
``GET /api/tags`` (``digest``). The answers settle the served model: it is recorded in the
outputs, put in the verdict cache key when it says more than ``judge.model`` (so weights
re-served under the same name are asked again), and named in one warning line when it
differs from ``judge.model``. A probe that fails changes nothing.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from harness.core.errors import ConfigError, JudgeError, headline
from harness.core.redact import redact
from harness.core.text import one_line
from harness.judges.replies import failures

if TYPE_CHECKING:
    import openai

#: ``judge.model`` that means "the one model the server lists".
AUTO = "auto"
#: Seconds each optional probe (``/props``, ``/api/tags``) may take at most.
PROBE_TIMEOUT_S = 2.0
_LISTED_SHOWN = 10


@dataclass
class Identity:
    """What the endpoint said about the model behind it.

    Attributes:
        listed: The model ids ``/models`` listed.
        served: The name of the model that answers (``None``: not known).
        model_path: The weights it serves from (llama.cpp ``model_path``, vLLM ``root``).
        digest: Ollama's digest of the served model.
        slots: llama.cpp's ``total_slots``.
        source: Where ``served`` came from (``/models``, ``/props``, ``reply``).
        replied: The ``model`` fields of replies, as seen.
    """

    listed: tuple[str, ...] = ()
    served: str | None = None
    model_path: str | None = None
    digest: str | None = None
    slots: int | None = None
    source: str | None = None
    replied: set[str] = field(default_factory=set)
    warned: bool = False

    def key(self, model: str) -> dict[str, str] | None:
        """The cache-key part for requests naming ``model``; ``None`` when the endpoint said
        nothing beyond that name (keys stay as they were)."""
        part = {k: v for k, v in (("served", self.served), ("model_path", self.model_path),
                                  ("digest", self.digest)) if v is not None}
        if not part or part == {"served": model}:
            return None
        return part

    def describe(self, model: str) -> dict[str, Any]:
        """``served_model`` (and ``model_path``, ``digest``, ``reply_models`` when known)."""
        first = min(self.replied) if self.replied else None
        out: dict[str, Any] = {"served_model": self.served or first}
        if self.model_path is not None:
            out["model_path"] = self.model_path
        if self.digest is not None:
            out["digest"] = self.digest
        others = sorted(m for m in self.replied if not same(m, model))
        if others:
            out["reply_models"] = others
        return out

    def differs(self, model: str) -> str | None:
        """The served name when it is not ``model``, else ``None``."""
        if self.served is not None and not same(self.served, model):
            return self.served
        others = sorted(m for m in self.replied if not same(m, model))
        return others[0] if others else None


def same(served: str, model: str) -> bool:
    """``served`` names ``model``: equal, a dated snapshot of it (``gpt-4o-mini-2024-07-18``),
    its file (``/models/x.gguf`` for ``x.gguf``) or its Ollama ``:latest`` tag."""
    if served == model or served == f"{model}:latest" or model == f"{served}:latest":
        return True
    if served.startswith(model + "-") and served[len(model) + 1 : len(model) + 2].isdigit():
        return True
    return served.replace("\\", "/").rsplit("/", 1)[-1] == model


@functools.lru_cache(maxsize=64)
def is_local(url: str | None) -> bool:
    """``url``'s host is this machine or a private network (loopback, RFC 1918, link-local,
    ``localhost``); such a server is self-hosted and has no per-token price."""
    if url is None:
        return False
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost" or host.endswith((".localhost", ".local", ".internal")):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private or ip.is_link_local


def unpriced(model: str, prices: Mapping[str, Any], url: str | None, ident: Identity) -> str | None:
    """Why the run's cost cannot be estimated, or ``None`` when it can."""
    if is_local(url):
        return "local endpoint"
    if not prices.get(model):
        return f"no price for {model} in judge.prices"
    other = ident.differs(model)
    if other is not None:
        return f"the server serves {other}, not the priced {model}"
    if ident.model_path is not None and not same(ident.model_path, model):
        return f"the server serves {ident.model_path}, not the priced {model}"
    return None


def root_of(base_url: str) -> str:
    """The server root of an OpenAI-style base URL (``http://h:8080/v1`` → ``http://h:8080``)."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def settle(ident: Identity, model: str, props: Mapping[str, Any] | None,
           tags: Sequence[Any] | None, roots: Mapping[str, str]) -> None:
    """Fill in ``ident`` from the probes' answers, for requests naming ``model``."""
    if props is not None:
        path, alias = props.get("model_path"), props.get("model_alias")
        slots = props.get("total_slots")
        if isinstance(path, str) and path:
            ident.model_path = path
        if isinstance(slots, int) and not isinstance(slots, bool) and slots > 0:
            ident.slots = slots
        name = alias if isinstance(alias, str) and alias else None
        if len(ident.listed) == 1:
            name = ident.listed[0]  # llama.cpp lists its one model, whatever is asked
        if name is not None or ident.model_path is not None:
            ident.served, ident.source = name or ident.model_path, "/props"
            return
    match = next((m for m in ident.listed if same(m, model)), None)
    if match is not None:
        ident.served, ident.source = match, "/models"
        root = roots.get(match)
        if root and root != match:
            ident.model_path = root
    elif len(ident.listed) == 1:
        ident.served, ident.source = ident.listed[0], "/models"
    for entry in tags or ():
        if isinstance(entry, Mapping) and isinstance(entry.get("digest"), str) and any(
            isinstance(entry.get(k), str) and same(entry[k], ident.served or model)
            for k in ("name", "model")
        ):
            ident.digest = entry["digest"]
            break


def resolve_auto(ident: Identity, where: str) -> str:
    """The model ``judge.model=auto`` means: the one the server lists; else one line."""
    if len(ident.listed) == 1:
        return ident.listed[0]
    if not ident.listed and ident.served is not None:
        return ident.served
    if not ident.listed:
        raise ConfigError(
            f"judge.model=auto: {where} lists no model (GET /models); set judge.model=NAME"
        )
    n = len(ident.listed)
    shown = one_line(", ".join(ident.listed[:_LISTED_SHOWN]), None)  # a server's strings
    more = f" and {n - _LISTED_SHOWN} more" if n > _LISTED_SHOWN else ""
    raise ConfigError(
        f"judge.model=auto: {where} serves {n} models ({shown}{more}); "
        "set judge.model to one of them"
    )


def warn_once(ident: Identity, model: str, where: str, how: str) -> None:
    """One stderr line when the served model is not ``judge.model`` (once per run)."""
    other = ident.differs(model)
    if other is None or ident.warned:
        return
    ident.warned = True
    keyed = f"verdicts are cached under the served model {other}" if how != "reply" else (
        f"verdicts are cached under judge.model={model} (the server named {other} only in "
        "its replies)")
    print(one_line(redact(f"warning: judge.model={model} but {where} serves {other} (from "
                          f"{how}); {keyed}, and the cost is unknown"), None), file=sys.stderr)


def seen_reply(ident: Identity, name: str | None, model: str, where: str) -> bool:
    """Record a reply's ``model`` field; ``True`` when it newly differs from ``model``."""
    if not name or name in ident.replied:
        return False
    ident.replied.add(name)
    if same(name, model) or (ident.served is not None and same(name, ident.served)):
        return False
    warn_once(ident, model, where, "reply")
    return True


async def list_models(client: openai.AsyncOpenAI, end: failures.Endpoint, timeout: float) -> Any:
    """The ``/models`` page (``None`` when the server has none or answers oddly); raise when
    the endpoint cannot be reached, rejects the key or fails."""
    import httpx2
    import openai

    try:  # a deadline for the whole answer: the client's time-out bounds each read
        return await asyncio.wait_for(client.models.list(), timeout)
    except asyncio.TimeoutError:
        raise JudgeError(f"judge: {end.where} did not answer within {timeout:g} s") from None
    except (openai.AuthenticationError, openai.PermissionDeniedError) as e:
        raise failures.auth_failure(end, e.status_code, failures.server_message(e)) from None
    except openai.NotFoundError:
        return None  # some servers have no /models; the first call will tell
    except openai.APIConnectionError as e:  # includes timeouts
        cause = e.__cause__
        if isinstance(e, openai.APITimeoutError) and "connect" not in str(cause).lower():
            raise JudgeError(f"judge: {end.where} did not answer within {timeout:g} s") from None
        raise JudgeError(
            f"judge: cannot reach {end.where} ({one_line(redact(str(cause or e)))}); is the server "
            "running?"
        ) from None
    except openai.APIStatusError as e:
        if e.status_code >= 500:
            what = failures.status_text(e.status_code, headline(failures.server_message(e)))
            raise JudgeError(f"judge: {end.where} answered {what}") from None
        return None  # another 4xx: the first call will tell
    except (openai.APIError, httpx2.HTTPError, httpx2.InvalidURL):
        return None  # an odd /models answer: the first call will tell


async def identify(client: openai.AsyncOpenAI, base_url: str | None, end: failures.Endpoint,
                   timeout: float) -> tuple[Identity, str]:
    """Ask the endpoint what it serves: its identity, and the model to request
    (``judge.model``, or for ``auto`` the one it lists)."""
    listed, roots = models_page(await list_models(client, end, timeout))
    props, tags = await probe(client, base_url, timeout)
    model = end.model
    if model == AUTO:
        first = Identity(listed)
        settle(first, model, props, None, roots)
        model = resolve_auto(first, end.where)
    ident = Identity(listed)
    settle(ident, model, props, tags, roots)
    return ident, model


async def probe(client: openai.AsyncOpenAI, base_url: str | None, timeout: float
                ) -> tuple[dict[str, Any] | None, list[Any] | None]:
    """llama.cpp's ``/props`` and Ollama's ``/api/tags`` (each ``None`` when not there); not
    asked of OpenAI's API."""
    if base_url is None or (urlsplit(base_url).hostname or "").endswith("openai.com"):
        return None, None
    quick = client.with_options(timeout=min(timeout, PROBE_TIMEOUT_S), max_retries=0)
    root = root_of(base_url)
    props, tags = await asyncio.gather(_get(quick, f"{root}/props"),
                                       _get(quick, f"{root}/api/tags"))
    models = tags.get("models") if isinstance(tags, Mapping) else None
    return (props if isinstance(props, dict) else None,
            models if isinstance(models, list) else None)


async def _get(client: openai.AsyncOpenAI, url: str) -> Any:
    """The JSON at ``url``, or ``None`` on any failure."""
    import httpx2

    async def fetch() -> Any:
        response = await client.get(url, cast_to=httpx2.Response)
        return json.loads(await response.aread())
    try:
        return await asyncio.wait_for(fetch(), PROBE_TIMEOUT_S)
    except Exception:  # noqa: BLE001 (optional: any failure means "not there")
        return None


def models_page(page: Any) -> tuple[tuple[str, ...], dict[str, str]]:
    """The ids of a ``/models`` page, and vLLM's ``root`` of each that has one."""
    data = getattr(page, "data", None)
    ids: list[str] = []
    roots: dict[str, str] = {}
    for m in data if isinstance(data, list) else []:
        name, root = getattr(m, "id", None), getattr(m, "root", None)
        if isinstance(name, str):
            ids.append(name)
            if isinstance(root, str) and root:
                roots[name] = root
    return tuple(ids), roots
