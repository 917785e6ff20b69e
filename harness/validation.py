"""Check config values against the constructor they configure, before anything runs.

A component's constructor is its config schema: unknown keys get a did-you-mean, and a
value of the wrong type is named with the type expected, instead of a traceback later.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal

from harness.errors import ConfigError, closest


def _accepts(annotation: Any, value: Any) -> bool:
    if annotation is Any or annotation is inspect.Parameter.empty:
        return True
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_accepts(a, value) for a in typing.get_args(annotation))
    if origin is Literal:
        return value in typing.get_args(annotation)
    if annotation is type(None):
        return value is None
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation in (str, bool):
        return isinstance(value, annotation)
    if origin is not None:
        annotation = origin
    if isinstance(annotation, type):
        if annotation in (Mapping, dict):
            return isinstance(value, Mapping)
        try:
            return isinstance(value, annotation)
        except TypeError:
            return True
    return True


def _describe(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return " or ".join(repr(a) for a in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in typing.get_args(annotation))
    if annotation is type(None):
        return "null"
    return getattr(annotation, "__name__", str(annotation))


def check_arguments(where: str, target: Callable[..., Any], values: Mapping[str, Any]) -> None:
    """Raise ``ConfigError`` for keys ``target`` does not take or values of the wrong type.

    Args:
        where: The config path for messages, e.g. ``metric``.
        target: The class or function the values configure.
        values: The keyword arguments (``_target_`` and other ``_x_`` keys are skipped).
    """
    signature = inspect.signature(target)
    hints = typing.get_type_hints(target.__init__ if inspect.isclass(target) else target)
    params = {
        name: p
        for name, p in signature.parameters.items()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }
    takes_any = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    for key, value in values.items():
        if key.startswith("_") and key.endswith("_"):
            continue
        if key not in params and not takes_any:
            raise ConfigError(
                f"{where}.{key}: unknown setting{closest(key, params)}; "
                f"{where} takes {', '.join(params) or 'no settings'}"
            )
        if isinstance(value, Mapping) and "_target_" in value:
            # A nested component (the judge inside a metric, a rerank stage): check it
            # under its own name, which is also its config group.
            check_arguments(key, _target(key, value["_target_"]), value)
            continue
        nested = _components(value)
        if nested:
            # Components inside a mapping or list (a hybrid's parts): named by their path.
            for sub, node in nested:
                path = f"{where}.{key}.{sub}"
                check_arguments(path, _target(path, node["_target_"]), node)
            continue
        if key not in params:
            continue  # the target takes **kwargs
        annotation = hints.get(key, params[key].annotation)
        if not _accepts(annotation, value):
            raise ConfigError(
                f"{where}.{key}: expected {_describe(annotation)}, got {value!r}"
            )


def _components(value: Any) -> list[tuple[str, Mapping[str, Any]]]:
    """The ``_target_`` nodes directly inside a mapping or list, with their keys."""
    if isinstance(value, Mapping):
        items: list[tuple[str, Any]] = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, list):
        items = [(str(i), v) for i, v in enumerate(value)]
    else:
        return []
    return [(k, v) for k, v in items if isinstance(v, Mapping) and "_target_" in v]


def _target(where: str, target: Any) -> Callable[..., Any]:
    """The class or function a nested ``_target_`` names."""
    from hydra.utils import get_method

    try:
        found: Callable[..., Any] = get_method(str(target))
    except Exception as e:
        raise ConfigError(f"{where}._target_: cannot import {target!r} ({e})") from None
    return found
