"""Check config values against the constructor they configure, before anything runs.

A component's constructor is its config schema: unknown keys get a did-you-mean, and a
value of the wrong type or outside its range is named with what is expected, instead of a
traceback (or a silently wrong score) later.

Ranges are declared on the annotation with ``typing.Annotated`` and ``Range``::

    def __init__(
        self,
        eps: Annotated[float, Range(ge=0)] = 0.0,          # a finite float >= 0
        threshold: Annotated[float, Range(ge=0, le=1)] = 0.5,
        top_k: Annotated[int, Range(ge=1)] | None = None,  # an int >= 1, or null
        ks: list[Annotated[int, Range(ge=1)]] = ...,       # a range on each item
    ) -> None: ...

Every ``float`` must be finite (no nan, inf or -inf) unless its annotation carries
``AllowNonFinite()``. ``list[X]`` checks each item against ``X``. A ``Literal`` is an enum:
a misspelt string gets a did-you-mean. The message is always
``<group>.<key>: expected <what, with its range>, got <value>``.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import math
import types
import typing
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from harness.core.errors import ConfigError, closest


@dataclass(frozen=True)
class Range:
    """The bounds of a number setting: ``Annotated[float, Range(ge=0, le=1)]``.

    Args:
        ge: Lowest value allowed (inclusive).
        gt: Values must be above this.
        le: Highest value allowed (inclusive).
        lt: Values must be below this.
    """

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return False
        return not (
            (self.ge is not None and not value >= self.ge)
            or (self.gt is not None and not value > self.gt)
            or (self.le is not None and not value <= self.le)
            or (self.lt is not None and not value < self.lt)
        )

    def __str__(self) -> str:
        low = f"[{_num(self.ge)}" if self.ge is not None else f"({_num(self.gt)}"
        high = f"{_num(self.le)}]" if self.le is not None else f"{_num(self.lt)})"
        if (self.ge, self.gt) != (None, None) and (self.le, self.lt) != (None, None):
            return f"in {low}, {high}"
        bounds = ((">=", self.ge), (">", self.gt), ("<=", self.le), ("<", self.lt))
        return " and ".join(f"{op} {_num(v)}" for op, v in bounds if v is not None)


@dataclass(frozen=True)
class AllowNonFinite:
    """Lets a float setting be nan, inf or -inf: ``Annotated[float, AllowNonFinite()]``."""


def _num(value: float | None) -> str:
    return repr(int(value)) if isinstance(value, float) and value.is_integer() else repr(value)


def _fits(annotation: Any, value: Any, ranges: bool) -> bool:
    """Whether ``value`` has the annotated type (and, with ``ranges``, is within range)."""
    if annotation is Any or annotation is inspect.Parameter.empty:
        return True
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Annotated:
        base, extras = args[0], args[1:]
        if not ranges:
            return _fits(base, value, False)
        allow = any(isinstance(e, AllowNonFinite) for e in extras)
        if base is float and allow:
            if not _fits(float, value, False):
                return False
        elif not _fits(base, value, True):
            return False
        return all(value in e for e in extras if isinstance(e, Range))
    if origin in (typing.Union, types.UnionType):
        return any(_fits(a, value, ranges) for a in args)
    if origin is Literal:
        return any(type(value) is type(a) and value == a for a in args)
    if annotation is type(None):
        return value is None
    if annotation is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return False
        return not ranges or isinstance(value, int) or math.isfinite(value)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation in (str, bool):
        return isinstance(value, annotation)
    if origin in (list, Sequence) and args:
        if not isinstance(value, list):
            return False
        # Items of a component type come as _target_ nodes: their constructor names a
        # wrong item better than a type could.
        return _is_component(args[0]) or all(_fits(args[0], v, ranges) for v in value)
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


def _is_component(annotation: Any) -> bool:
    """Whether ``annotation`` is a class other than plain data (a part such as a retriever)."""
    return isinstance(annotation, type) and annotation not in (int, float, str, bool, dict)


def describe(annotation: Any, ranges: bool = True) -> str:
    """What an annotation accepts, in words (``int >= 1 or null``, ``finite float``)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Annotated:
        base, extras = args[0], args[1:]
        text = describe(base, ranges)
        if not ranges:
            return text
        if base is float and any(isinstance(e, AllowNonFinite) for e in extras):
            text = "float"
        bounds = [str(e) for e in extras if isinstance(e, Range)]
        return " ".join([text, *bounds])
    if origin is Literal:
        return " or ".join(repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(describe(a, ranges) for a in args)
    if origin in (list, Sequence) and args:
        return f"list of {describe(args[0], ranges)}"
    if annotation is type(None):
        return "null"
    if annotation in (Mapping, dict) or origin in (Mapping, dict):
        return "mapping"
    if annotation is float and ranges:
        return "finite float"
    return getattr(annotation, "__name__", str(annotation))


def check_value(where: str, annotation: Any, value: Any) -> None:
    """Raise ``ConfigError`` unless ``value`` fits ``annotation`` (type, range, finiteness).

    Args:
        where: The setting's config path for the message, e.g. ``metric.eps``.
        annotation: E.g. ``Annotated[float, Range(ge=0)]``.
        value: The configured value.
    """
    if not _fits(annotation, value, ranges=False):
        raise ConfigError(f"{where}: expected {describe(annotation, False)}, got {value!r}"
                          f"{_did_you_mean(annotation, value)}")
    if not _fits(annotation, value, ranges=True):
        raise ConfigError(f"{where}: expected {describe(annotation)}, got {value!r}")


def check_call(where: str, function: Callable[..., Any], values: Mapping[str, Any]) -> None:
    """A constructor's check of its own arguments against its annotations (the Python API):
    ``check_value`` for each; skipped inside ``prechecked()``, where ``check_arguments``
    checked the same config node before anything was built (each value is checked once).

    Args:
        where: The config group, e.g. ``judge``.
        function: The ``__init__`` whose annotations declare the ranges.
        values: The arguments by name (``self`` and unannotated names are skipped).
    """
    if _PRECHECKED.get():
        return
    hints = typing.get_type_hints(function, include_extras=True)
    for name, value in values.items():
        if name in hints and name != "return":
            check_value(f"{where}.{name}", hints[name], value)


@contextlib.contextmanager
def prechecked() -> Iterator[None]:
    """Build parts whose config ``check_arguments`` has checked: ``check_call`` skips."""
    token = _PRECHECKED.set(True)
    try:
        yield
    finally:
        _PRECHECKED.reset(token)


_PRECHECKED: contextvars.ContextVar[bool] = contextvars.ContextVar("prechecked", default=False)


def _did_you_mean(annotation: Any, value: Any) -> str:
    """A did-you-mean among the string choices of a ``Literal`` (possibly in a union)."""
    if not isinstance(value, str):
        return ""
    choices: list[str] = []
    stack = [annotation]
    while stack:
        a = stack.pop()
        if typing.get_origin(a) is Literal:
            choices += [c for c in typing.get_args(a) if isinstance(c, str)]
        elif typing.get_origin(a) in (typing.Union, types.UnionType, Annotated):
            stack += typing.get_args(a)
    return closest(value, choices) if choices else ""


def check_arguments(
    where: str,
    target: Callable[..., Any],
    values: Mapping[str, Any],
    groups: Collection[str] = (),
) -> None:
    """Raise ``ConfigError`` for keys ``target`` does not take or values it does not accept.

    Args:
        where: The config path for messages, e.g. ``metric``.
        target: The class or function the values configure.
        values: The keyword arguments (``_target_`` is skipped; Hydra's other ``_x_``
            keys are refused: a component is configured by its named settings only).
        groups: The config's top-level groups: a nested component under one of these
            keys (``metric.judge``, from ``${judge}``) is named by the group (``judge``),
            any other by its path (``retriever.rerank``).
    """
    from harness.core.trust import check_target  # policy, loaded by a config's check only

    signature = inspect.signature(target)
    hints = typing.get_type_hints(
        target.__init__ if inspect.isclass(target) else target, include_extras=True
    )
    params = {
        name: p
        for name, p in signature.parameters.items()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }
    takes_any = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    for key, value in values.items():
        if key == "_target_":
            continue
        if key.startswith("_") and key.endswith("_"):
            raise ConfigError(
                f"{where}.{key}: not a setting; {where} is configured by its settings "
                f"({', '.join(params) or 'none'})"
            )
        if key not in params and not takes_any:
            raise ConfigError(
                f"{where}.{key}: unknown setting{closest(key, params)}; "
                f"{where} takes {', '.join(params) or 'no settings'}"
            )
        if isinstance(value, Mapping) and "_target_" in value:
            # A nested component (the judge inside a metric, a rerank stage).
            path = key if key in groups else f"{where}.{key}"
            check_arguments(path, check_target(path, value["_target_"]), value, groups)
            continue
        nested = _components(value)
        if nested:
            # Components inside a mapping or list (a hybrid's parts): named by their path.
            for sub, node in nested:
                path = f"{where}.{key}.{sub}"
                check_arguments(path, check_target(path, node["_target_"]), node, groups)
            continue
        if key not in params:
            continue  # the target takes **kwargs
        check_value(f"{where}.{key}", hints.get(key, params[key].annotation), value)


def _components(value: Any) -> list[tuple[str, Mapping[str, Any]]]:
    """The ``_target_`` nodes directly inside a mapping or list, with their keys."""
    if isinstance(value, Mapping):
        items: list[tuple[str, Any]] = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, list):
        items = [(str(i), v) for i, v in enumerate(value)]
    else:
        return []
    return [(k, v) for k, v in items if isinstance(v, Mapping) and "_target_" in v]
