"""The path settings of a ``harness_config`` file, read against the file's folder.

Which settings are paths is decided by what they configure, not by their names: a
parameter of the chosen option's constructor declared ``str | os.PathLike[str]``
(``dataset.run``, ``dataset.qrels``, ``judge.labels``, ...), or one of the few settings
declared as plain text that name a file (``PATH_SETTINGS``). A relative value becomes absolute
from the config file's folder; an absolute one, ``~/...`` (the home folder), an
interpolation (``${...}``) and ``null`` are left as they are.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
from collections.abc import Sequence
from pathlib import Path

#: Groups whose option is a constructor (``_target_``) with settings.
GROUPS = ("dataset", "retriever", "rerank", "judge", "prompt", "metric", "task", "tracking")
#: Settings that name a file or folder though their constructor declares ``str``.
PATH_SETTINGS = frozenset({"prompt.path", "judge.cache_path"})
#: Settings that are a path only when one is there (else a name: a model to download).
MAYBE_PATHS = frozenset({"retriever.model", "rerank.model"})
#: Setting names that are paths in an option of the user's own (its constructor unread).
USER_PATH_NAMES = ("path", "corpus", "cache_path", "dir", "file", "documents")
#: A declared type that says "a path".
_PATH_TYPE = re.compile(r"\bPathLike\b|\bPath\b")


def declared_paths(target: str) -> set[str]:
    """The parameters of ``target`` (harness's own constructors only) declared as paths."""
    if not target.startswith("harness."):
        return set()
    module, _, name = target.rpartition(".")
    try:
        made = getattr(importlib.import_module(module), name)
        params = inspect.signature(made).parameters.values()
    except (ImportError, AttributeError, TypeError, ValueError):
        return set()
    return {p.name for p in params if _PATH_TYPE.search(str(p.annotation))}


def path_settings(overrides: Sequence[str]) -> set[str]:
    """The dotted names of the path settings of the config ``overrides`` choose (for an
    option of the user's own, ``GROUP.*`` with a name of ``USER_PATH_NAMES``)."""
    from omegaconf import DictConfig

    from harness.config.compose import composed

    picks = [o for o in overrides if "=" in o and "." not in o.partition("=")[0]
             and o.partition("=")[0].lstrip("+") in GROUPS]
    out = set(PATH_SETTINGS | MAYBE_PATHS)
    try:
        cfg = composed(tuple(picks))
    except Exception:  # noqa: BLE001 - the run composes again and reports it in one line
        return out
    for group in GROUPS:
        node = cfg.get(group)
        try:
            target = node.get("_target_") if isinstance(node, DictConfig) else None
        except Exception:  # noqa: BLE001 - ``_target_: ???`` (retriever=custom): the user's
            target = None
        if isinstance(node, DictConfig) and not (isinstance(target, str)
                                                 and target.startswith("harness.")):
            out |= {f"{group}.{name}" for name in USER_PATH_NAMES}
        elif isinstance(target, str):
            out |= {f"{group}.{p}" for p in declared_paths(target)}
    return out


def _unquoted(value: str) -> tuple[str, str]:
    """``value`` without Hydra's quotes, and the quote it had."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1], value[0]
    return value, ""


def anchored(overrides: Sequence[str], folder: Path) -> list[str]:
    """``overrides`` with each relative value of a path setting read against ``folder``."""
    names = path_settings(overrides) if any("." in o.partition("=")[0] for o in overrides) \
        else set()
    return [_anchor(o, folder, names) for o in overrides]


def _anchor(override: str, folder: Path, names: set[str]) -> str:
    key, sep, raw = override.partition("=")
    value, quote = _unquoted(raw.strip())
    if not sep or key.lstrip("+~") not in names or value in ("", "null", "None"):
        return override
    if value.startswith("~"):
        return f"{key}={quote or chr(39)}{os.path.expanduser(value)}{quote or chr(39)}"
    if Path(value).is_absolute() or "${" in value or value.startswith(("pkg://", "file://")) \
            or value[:1] in "[{":
        return override
    if key.lstrip("+~") in MAYBE_PATHS and not (folder / value).exists():
        return override
    path = str(folder.absolute() / value)
    mark = quote or ("'" if "'" not in path else '"')
    return f"{key}={mark}{path}{mark}"
