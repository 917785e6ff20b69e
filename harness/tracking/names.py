"""Short run names made of what varied, and a sweep's swept parameters.

A run is named after its metric and the overrides it was given (``id_ranked·bm25·top_k=10``);
a sweep's job after the swept keys only (``id_ranked·top_k=10``). Values that are URLs,
credentials or hidden secrets never appear; a path shows as its file name.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterable
from typing import Any

from harness.core.redact import redact

SEP = "·"
#: The swept keys of the running sweep, for its jobs (set by the sweep callback).
SWEEP_KEYS_ENV = "HARNESS_SWEEP_KEYS"
#: Overrides that say where or how a run is logged or shown, not what it measured.
_NOT_NAMED = {"experiment", "tracking", "experiment_name", "run.progress", "run.quiet"}
#: Keys whose values are not shown (endpoints and credentials).
_HIDDEN_WORDS = ("url", "uri", "key", "token", "secret", "password", "host", "endpoint")
VALUE_CHARS = 24
NAME_CHARS = 100


def _split(override: str) -> tuple[str, str]:
    key, _, value = override.partition("=")
    return key.lstrip("+~"), value.strip().strip("'\"")


def _part(key: str, value: str) -> str | None:
    """How one override shows in a name (``None``: not at all)."""
    leaf = key.rsplit(".", 1)[-1].lower()
    if (key in _NOT_NAMED or key.startswith(("hydra.", "hydra/")) or not value
            or "${" in value or "://" in value or redact(value) != value
            or any(w in leaf for w in _HIDDEN_WORDS)):
        return None
    if "/" in value:
        value = value.rstrip("/").rsplit("/", 1)[-1]
    try:
        number = float(value)
        if "." in value and len(value) > 6:
            value = f"{number:.4g}"
    except ValueError:
        pass
    if len(value) > VALUE_CHARS:
        value = value[: VALUE_CHARS - 1] + "…"
    return value if "." not in key else f"{key.rsplit('.', 1)[-1]}={value}"


def short_name(
    overrides: Iterable[str], metric: str | None = None, swept: Collection[str] | None = None
) -> str:
    """The run name: ``metric`` first, then each override (only the ``swept`` keys, when
    given) as ``option`` or ``leaf=value``."""
    parts = [metric] if metric and not swept else []
    for override in overrides:
        key, value = _split(override)
        if swept and key not in swept:
            continue
        part = _part(key, value)
        if part is not None and part not in parts and not (key == "metric" and not swept):
            parts.append(part)
    name = SEP.join(parts) or metric or "default"
    return name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…"


def swept_params(overrides: Iterable[str], sweeper_params: dict[str, Any] | None) -> dict[str, str]:
    """The swept keys and their values as given (``metric: id_based,id_ranked``,
    ``retriever.k1: interval(0.2, 3.0)``), from the command line and the sweeper's params."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    params = {str(k): str(v) for k, v in (sweeper_params or {}).items()}
    for parsed in OverridesParser.create().parse_overrides(list(overrides)):
        if parsed.is_sweep_override():
            params[parsed.key_or_group] = (parsed.input_line or "").partition("=")[2]
    return {k: redact(v) for k, v in params.items()}


def publish_swept(keys: Collection[str]) -> None:
    """Tell the sweep's jobs (this process's and workers started later) what is swept."""
    os.environ[SWEEP_KEYS_ENV] = json.dumps(sorted(keys))


def swept_keys() -> list[str] | None:
    """The running sweep's swept keys (``None`` outside a sweep, or when unknown)."""
    text = os.environ.get(SWEEP_KEYS_ENV)
    if not text:
        return None
    try:
        keys = json.loads(text)
    except ValueError:
        return None
    return [str(k) for k in keys] if isinstance(keys, list) else None
