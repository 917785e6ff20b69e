"""What a trusted import path *is*: trusting ``mypkg.*`` trusts the code mypkg defines, never
what mypkg imported from elsewhere (``mypkg.os.system`` is ``os.system``). And where a
trusted package is imported from: the folder the command started in (``START_DIR``), for
the packages the user trusts only, after everything installed, so that both commands
(``python -m harness`` and the installed ``harness``) find it, and a stray ``tqdm.py``
there never shadows a module the harness imports (``harness.core.guard_import_path``).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import keyword
import signal
import sys
import types
from collections.abc import Iterator, Sequence
from typing import Any

from harness.core import START_DIR
from harness.core.errors import ConfigError, HarnessError, Interrupted


class _TrustedStartDir(importlib.abc.MetaPathFinder):
    """Finds the top-level packages the user trusts in ``START_DIR``, after every other
    finder has had its turn: an installed package of the same name wins."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if path is not None or fullname not in self.names:
            return None
        return importlib.machinery.PathFinder.find_spec(fullname, [START_DIR])


_FINDER = _TrustedStartDir()


def allow_from_start_dir(top: str) -> None:
    """Let top-level package ``top`` (one the user trusts) be imported from ``START_DIR``."""
    if untrustable(top):
        return
    _FINDER.names.add(top)
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)


def untrustable(top: str) -> bool:
    """Whether trusting package ``top`` would let a config call any code."""
    return top in ("harness", "hydra", "omegaconf", "builtins") or top in sys.stdlib_module_names


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def real_module(obj: Any) -> str | None:
    """The module that defines ``obj`` (a module: its own ``__name__``)."""
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    name = getattr(obj, "__module__", None)
    return name if isinstance(name, str) and name else None


@contextlib.contextmanager
def user_code(where: str, what: str) -> Iterator[None]:
    """Around a call into the user's code (``what``: "importing mypkg", "calling
    mypkg.make"): its ``sys.exit`` or its own ``KeyboardInterrupt`` is one ``ConfigError``
    naming it, never a silent exit; a real Ctrl-C (``Interrupted``, raised by the command's
    signal handlers) goes on."""
    try:
        yield
    except SystemExit as e:
        raise ConfigError(
            f"{where}: {what} called sys.exit({e.code!r}); your code must raise an exception "
            "instead of exiting the harness"
        ) from None
    except KeyboardInterrupt as e:
        if isinstance(e, Interrupted) or signal.getsignal(signal.SIGINT) is \
                signal.default_int_handler:  # a real signal, or no way to tell
            raise
        raise ConfigError(f"{where}: {what} raised KeyboardInterrupt; your code must raise "
                          "another exception") from None


def path_fault(path: str) -> str | None:
    """What makes ``path`` no import path (``mypkg.search..R``: an empty name; ``.R``,
    ``R.``, ``my-pkg.R``, ``mypkg.class.R``), or ``None`` if it is one: judged on the text
    alone, before anything is imported."""
    if not path.strip():
        return "it is empty"
    if path != path.strip():
        return "it has spaces around it"
    for i, part in enumerate(path.split(".")):
        if not part:
            return ("it starts with a dot" if i == 0 else "it ends with a dot"
                    if path.endswith(".") and i == path.count(".") else
                    "it has an empty name between two dots")
        if not part.isidentifier():
            return f"{part!r} is not a Python name"
        if keyword.iskeyword(part):
            return f"{part!r} is a Python keyword, not a module or attribute name"
    return None


def check_path(where: str, path: str) -> str:
    """``path`` if it is an import path by its text (``path_fault``); else a one-line
    ``ConfigError`` naming the fault: nothing was imported."""
    fault = path_fault(path)
    if fault is not None:
        raise ConfigError(f"{where}: {path!r} is not an import path ({fault}); write dotted "
                          "Python names such as mypkg.search.MyRetriever; nothing was imported")
    return path


def _import(where: str, name: str) -> types.ModuleType:
    """Import the user's module ``name``; its failure is one ``ConfigError`` naming it."""
    try:
        with user_code(where, f"importing {name}"):
            return importlib.import_module(name)
    except (ModuleNotFoundError, HarnessError):
        raise
    except Exception as e:
        lines = [x for x in str(e).strip().splitlines() if x.strip()]
        raise ConfigError(
            f"{where}: importing {name} failed: {type(e).__name__}: {lines[0] if lines else ''}"
        ) from None


def resolve(where: str, path: str, packages: tuple[str, ...]) -> Any:
    """The object trusted import path ``path`` names, checked attribute by attribute
    against what it really is: every module reached must be inside one of ``packages``
    (the trusted package prefixes that admit ``path``), and so must the module that
    defines the object found. Nothing is called (importing the trusted package runs its
    code, as trusting it allows); a one-line ``ConfigError`` otherwise.
    """
    parts = check_path(where, path).split(".")
    if any(p.startswith("__") for p in parts):
        raise ConfigError(f"{where}: {path!r} names a dunder attribute; name a class or "
                          "function of your package (nothing was imported)")
    for package in packages:
        allow_from_start_dir(package.split(".")[0])
    try:
        obj: Any = _import(where, parts[0])
    except ModuleNotFoundError as e:
        hint = " (run from the folder that holds your package, or pip install it)" \
            if e.name == parts[0] else ""
        raise ConfigError(f"{where}: cannot import {path!r}: ModuleNotFoundError: {e}{hint}"
                          ) from None
    for i, part in enumerate(parts[1:], start=1):
        _check_inside(where, path, obj, packages, ".".join(parts[:i]))
        missing = object()
        found = getattr(obj, part, missing)
        if found is missing and isinstance(obj, types.ModuleType):
            try:
                found = _import(where, f"{obj.__name__}.{part}")
            except ModuleNotFoundError as e:
                if e.name != f"{obj.__name__}.{part}":
                    raise ConfigError(f"{where}: cannot import {path!r}: "
                                      f"ModuleNotFoundError: {e}") from None
                found = missing
        if found is missing:
            raise ConfigError(f"{where}: cannot import {path!r}: "
                              f"{'.'.join(parts[:i])} has no {part!r}")
        obj = found
    _check_inside(where, path, obj, packages, None)
    return obj


def _check_inside(where: str, path: str, obj: Any, packages: tuple[str, ...],
                  so_far: str | None) -> None:
    """Refuse ``obj`` (reached by ``path``) unless its real module is in a trusted package;
    on the way (``so_far``: the path up to ``obj``), a module may also be a parent package
    of a trusted one, reached by its own name, and other objects are judged at the end."""
    if so_far is not None and not isinstance(obj, types.ModuleType):
        return
    module = real_module(obj)
    top = (module or "").split(".")[0]
    if module and not untrustable(top) and any(
        _within(module, p) or (module == so_far and _within(p, module)) for p in packages
    ):
        return
    what = f"the module {module}" if isinstance(obj, types.ModuleType) else (
        f"{module}.{getattr(obj, '__qualname__', type(obj).__qualname__)}" if module
        else f"a {type(obj).__name__} defined nowhere in your package")
    trusted = " or ".join(f"{p}.*" for p in packages)
    raise ConfigError(
        f"{where}: {path!r} resolves to {what}, outside the trusted {trusted}: trusting a "
        "package trusts the code it defines, not what it imports; name a function or "
        "class defined in your package (nothing was called)"
    )
