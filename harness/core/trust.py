"""Where the one registry lives: the config folder, and what its ``_target_`` may name."""

from __future__ import annotations

import functools
import inspect
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from harness.core import moved
from harness.core.errors import ConfigError, closest
from harness.core.resolve import check_path, resolve, untrustable

#: The package's configs, where Hydra finds them wherever the package is installed (a wheel in
#: site-packages or a checkout): the package ``harness.conf``.
CONFIG_MODULE = "harness.conf"
CONFIG_PATH = f"pkg://{CONFIG_MODULE}"
#: The same folder on disk, for reading its files directly (the trust list, hints).
CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "conf")

_TARGET_LINE = re.compile(r"^\s*_target_:\s*(harness\.[\w.]+)\s*(?:#.*)?$", re.M)


@functools.lru_cache(maxsize=1)
def component_targets() -> tuple[str, ...]:
    """What a config ``_target_`` may name of harness: the classes some option of ``conf/``
    names as its ``_target_`` (a dataset, retriever, metric, judge, prompt, task or tracker
    option, and the Hydra callbacks of ``conf/config.yaml``), by exact path.

    Derived from ``conf/`` itself, so a new component is trusted by its YAML file alone.
    Never a function (``harness.cli.cache.main`` wipes the cache) and never a helper class
    (``harness.judges.cache.sqlite.VerdictCache`` opens a file where it is told): a config
    cannot make the harness call arbitrary code. Enforced twice: every ``_target_`` string
    is checked before anything is imported (``check_targets``, ``check_target``), and Hydra
    applies the list again as its execution whitelist when it instantiates.
    """
    found = {
        m for path in sorted(Path(CONFIG_DIR).rglob("*.yaml"))
        for m in _TARGET_LINE.findall(path.read_text("utf-8"))
    }
    return tuple(sorted(found))


def __getattr__(name: str) -> Any:
    if name == "TRUSTED_TARGETS":  # the tuple of earlier releases, now derived from conf/
        return component_targets()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _component(target: str) -> str | None:
    """``target`` as a component path (an old path of a moved one translated, with a note on
    stderr), or ``None``."""
    if target in component_targets():
        return target
    new = moved.new_path(target)
    if new is not None and new in component_targets():
        if target not in _NOTED:
            _NOTED.add(target)
            print(f"note: {moved.note(target, new)}", file=sys.stderr)
        return new
    return None


_NOTED: set[str] = set()


def is_component(target: Any) -> bool:
    """Whether ``target`` names one of the harness's components (not the user's code)."""
    return isinstance(target, str) and _component(target) is not None


#: The environment variable that trusts users' own packages (comma-separated patterns).
TRUST_ENV = "HARNESS_TRUSTED_TARGETS"

#: The user's trusted patterns in force (``trusting``): ``pkg.*`` or an exact path.
_USER_TRUST: ContextVar[tuple[str, ...]] = ContextVar("harness_user_trust", default=())

_PATTERN = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*(\.\*)?")


def trust_patterns(setting: Any = None) -> tuple[str, ...]:
    """The user's trusted patterns: ``trusted_targets`` plus ``$HARNESS_TRUSTED_TARGETS``.

    A pattern is an import path (``mypkg.search.MyRetriever``) or a package prefix
    (``mypkg.*``, as Hydra's execution whitelist reads it). Trusting everything, the
    standard library or harness itself would let a config run any code: refused.
    """
    found: list[tuple[str, str]] = []
    if setting is not None:
        if isinstance(setting, str):
            setting = [setting]
        if not isinstance(setting, (list, tuple)):
            raise ConfigError(
                f"trusted_targets: expected a list of patterns such as [mypkg.*], got {setting!r}"
            )
        found += [("trusted_targets", p) for p in setting]
    found += [(TRUST_ENV, p.strip()) for p in os.environ.get(TRUST_ENV, "").split(",") if p.strip()]
    out: list[str] = []
    for where, pattern in found:
        if not isinstance(pattern, str) or not _PATTERN.fullmatch(pattern):
            raise ConfigError(
                f"{where}: {pattern!r} is not a pattern; write an import path "
                "(mypkg.search.MyRetriever) or a package and .* (mypkg.*)"
            )
        top = pattern.split(".")[0]
        if _untrustable(top):
            raise ConfigError(
                f"{where}: {pattern!r} would let a config call {top}'s functions; trust "
                "your own package only (e.g. mypkg.*)"
            )
        out.append(pattern)
    return tuple(dict.fromkeys(out))


def _untrustable(top: str) -> bool:
    """Whether trusting package ``top`` would let a config call any code."""
    return untrustable(top)


def _how_to_trust(path: Any) -> str:
    """What to do about an untrusted import path, for its error line."""
    package = path.split(".")[0] if isinstance(path, str) and path else "mypkg"
    if _untrustable(package):
        return f"{package} is not a package a config may call (name your own code)"
    return (f"to run your own code, trust its package with trusted_targets=[{package}.*] "
            f"(or {TRUST_ENV}={package}.*)")


@contextmanager
def trusting(patterns: tuple[str, ...]) -> Iterator[None]:
    """Admit the user's ``patterns`` (from ``trust_patterns``) while building components."""
    token = _USER_TRUST.set(patterns)
    try:
        yield
    finally:
        _USER_TRUST.reset(token)


def user_trusted(target: str) -> bool:
    """Whether ``target`` is admitted by the user's trusted patterns in force."""
    for pattern in _USER_TRUST.get():
        prefix = pattern.removesuffix("*")
        if target == pattern or (pattern.endswith(".*") and target.startswith(prefix)):
            return True
    return False


def whitelist() -> list[str]:
    """Hydra's execution whitelist: the harness's components (their old paths too) and the
    user's patterns."""
    old = [o + ".*" for o, n in moved.MOVED.items() if any(t.startswith(n + ".")
                                                          for t in component_targets())]
    return [*component_targets(), *old, *_USER_TRUST.get()]


def trusted(where: str, target: Any) -> str:
    """``target`` if it is a harness component (``component_targets``) or the user trusts
    it, else a one-line ``ConfigError``.

    A check of the string alone: nothing is imported (a malformed path, ``mypkg.search..R``,
    is refused by its text first).
    """
    if isinstance(target, str):
        check_path(f"{where}._target_", target)
    if isinstance(target, str) and (_component(target) or user_trusted(target)):
        return target
    hint = closest(target, component_targets()) if isinstance(target, str) else ""
    if isinstance(target, str) and not target.startswith("harness."):
        raise ConfigError(
            f"{where}._target_: {target!r} is not a harness component{hint} and is not "
            f"trusted; {_how_to_trust(target)}; nothing was imported"
        )
    raise ConfigError(
        f"{where}._target_: {target!r} is not a harness component{hint}; a config may only "
        "name the component classes the harness's own conf/ names, or code you trust "
        "with trusted_targets=[mypkg.*]"
    )


def check_trusted(where: str, path: Any) -> str:
    """``path`` if the user's trust setting admits it, else a one-line ``ConfigError``
    (nothing is imported)."""
    if isinstance(path, str):
        check_path(where, path)
    if not isinstance(path, str) or not user_trusted(path):
        raise ConfigError(f"{where}: {path!r} is not trusted; {_how_to_trust(path)}; "
                          "nothing was imported")
    return path


def trusted_callable(where: str, path: Any) -> Callable[..., Any]:
    """The function or class at import path ``path`` (a setting such as ``retriever.factory``),
    admitted by the user's trust setting; one-line ``ConfigError`` otherwise, before import."""
    found: Callable[..., Any] = locate(where, check_trusted(where, path))
    if not callable(found):
        raise ConfigError(f"{where}: {path!r} is not a class or function")
    return found


def trusted_packages(path: str) -> tuple[str, ...]:
    """The package prefixes of the user's patterns in force that admit ``path``: what the
    object it names must be defined in (``mypkg.*``: mypkg; ``mypkg.search.make``: mypkg)."""
    out = []
    for pattern in _USER_TRUST.get():
        if pattern.endswith(".*") and path.startswith(pattern.removesuffix("*")):
            out.append(pattern.removesuffix(".*"))
        elif path == pattern:
            out.append(pattern.split(".")[0])
    return tuple(dict.fromkeys(out))


def locate(where: str, path: str) -> Any:
    """Import what ``path`` names (checked as trusted before); one-line ``ConfigError``.

    A harness component is imported by its path; the user's trusted code through
    ``harness.core.resolve``: what the path resolves to must be defined in the trusted
    package (``mypkg.os.system`` is refused), checked before anything is called."""
    if _component(path) is None:
        return resolve(where, path, trusted_packages(path))
    import logging

    from hydra.utils import get_object

    hydra_log = logging.getLogger("hydra.utils")  # it logs the failure we report as one line
    was, hydra_log.disabled = hydra_log.disabled, True
    try:
        return get_object(path)
    except Exception as e:
        module, _, name = path.rpartition(".")
        loaded = sys.modules.get(module)
        if loaded is not None and not hasattr(loaded, name):
            why = f"{module} has no {name!r}"
            raise ConfigError(f"{where}: cannot import {path!r}: {why}") from None
        cause = e.__cause__ or e
        lines = [x for x in str(cause).strip().splitlines() if x.strip()]
        why = f"{type(cause).__name__}: {lines[0] if lines else ''}"
        if isinstance(cause, ModuleNotFoundError):
            why += " (run from the folder that holds your package, or pip install it)"
        raise ConfigError(f"{where}: cannot import {path!r}: {why}") from None
    finally:
        hydra_log.disabled = was


def check_targets(where: str, node: Any) -> None:
    """Refuse any ``_target_`` in ``node``, at any depth, that is not on the allow-list;
    nothing is imported."""
    if isinstance(node, Mapping):
        if "_target_" in node:
            trusted(where, node["_target_"])
        for key, value in node.items():
            if key != "_target_":
                check_targets(f"{where}.{key}", value)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            check_targets(f"{where}.{i}", value)


def check_target(where: str, target: Any) -> Callable[..., Any]:
    """The component class a ``_target_`` names: checked on the allow-list, then imported."""
    name = trusted(where, target)
    found: Callable[..., Any] = locate(f"{where}._target_", name)
    if _component(name) is None:  # the user's own: a class or a factory function
        if not callable(found):
            raise ConfigError(f"{where}._target_: {name!r} is not a class or function")
        return found
    if not inspect.isclass(found):
        raise ConfigError(f"{where}._target_: {name!r} is not a component class")
    return found
