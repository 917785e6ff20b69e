"""Short run names made of what changes the scores, and a sweep's swept parameters.

A run is named after its metric and the overrides it was given that change its scores
(``id_ranked·scifact·Tfidf·ngram_max=2``); a sweep's job after the swept keys only
(``id_ranked·top_k=10``). Only the options and settings of the groups that decide the scores
name a run (``SCORED_GROUPS``, and ``SCORED_RUN`` of ``run.*``): never the trust list, the
gate, bookkeeping (progress, report, shards), Hydra's settings, URLs, credentials or
secret-named settings. A ``_target_`` shows as its class's name, a path as its file's name.
The whole override list stays in the run's ``hydra.overrides`` tag.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterable
from typing import Any

from harness.core.redact import redact, secret_key

SEP = "·"
#: The swept keys of the running sweep, for its jobs (set by the sweep callback).
SWEEP_KEYS_ENV = "HARNESS_SWEEP_KEYS"
#: Config groups whose options and settings change the scores.
SCORED_GROUPS = frozenset({"task", "dataset", "retriever", "rerank", "prompt", "metric", "judge"})
#: The ``run.*`` settings that change the scores (the others are bookkeeping).
SCORED_RUN = frozenset({"run.limit", "run.seed", "run.retrieval_min_grade"})
#: Words of a setting's name whose values are not shown (endpoints and credentials).
_HIDDEN_WORDS = ("url", "uri", "key", "token", "secret", "password", "host", "endpoint")
VALUE_CHARS = 24
#: Longest name (MLflow keeps 250 characters; its runs table shows far fewer).
NAME_CHARS = 100


def _split(override: str) -> tuple[str, str]:
    key, _, value = override.partition("=")
    return key.lstrip("+~").strip(), value.strip().strip("'\"")


def scored(key: str) -> bool:
    """Whether an override of ``key`` may change the scores (and so may name a run)."""
    group = key.split(".", 1)[0].split("/", 1)[0]
    return group in SCORED_GROUPS if group != "run" else key in SCORED_RUN


def _part(key: str, value: str) -> str | None:
    """How one override shows in a name (``None``: not at all)."""
    leaf = key.rsplit(".", 1)[-1].lower()
    if (not scored(key) or not value or "${" in value or "://" in value
            or redact(value) != value or secret_key(key)
            or any(w in leaf for w in _HIDDEN_WORDS)):
        return None
    if leaf == "_target_":  # the class, not its module path
        return value.rsplit(".", 1)[-1] or None
    if "/" in value or "\\" in value:
        value = value.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    try:
        number = float(value)
        if "." in value and len(value) > 6:
            value = f"{number:.4g}"
    except ValueError:
        pass
    if len(value) > VALUE_CHARS:
        value = value[: VALUE_CHARS - 1] + "…"
    return value if "." not in key else f"{leaf}={value}"


def _within(parts: list[str], limit: int) -> str:
    """``parts`` joined, whole parts only, at most ``limit`` characters; the parts left out
    are counted at the end (``(+3 more)``)."""
    name = SEP.join(parts)
    if len(name) <= limit:
        return name
    for keep in range(len(parts) - 1, 0, -1):
        name = SEP.join([*parts[:keep], f"(+{len(parts) - keep} more)"])
        if len(name) <= limit:
            return name
    return parts[0][: limit - 1] + "…"


def short_name(
    overrides: Iterable[str], metric: str | None = None, swept: Collection[str] | None = None
) -> str:
    """The run name: ``metric`` first, then each override that changes the scores (only the
    ``swept`` keys, when given) as ``option``, ``leaf=value`` or a ``_target_``'s class name
    (which stands for its group's option: ``custom`` then says nothing more)."""
    found: dict[str, str] = {}  # key -> part, in the overrides' order
    for override in overrides:
        key, value = _split(override)
        if (swept and key not in swept) or (key == "metric" and not swept):
            continue
        part = _part(key, value)
        if part is not None and part not in found.values():
            found[key] = part
    for key in [k for k in found if k.endswith("._target_")]:
        found.pop(key.removesuffix("._target_"), None)
    parts = ([metric] if metric and not swept else []) + list(found.values())
    return _within(parts, NAME_CHARS) if parts else metric or "default"


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
