"""The sandbox judge prompts render in, and the checks that refuse, at start-up, a template
reaching for Python internals (``__class__``, ``__globals__``, ...): the sandbox would refuse
it too, but only when the expression runs, mid-run."""

from __future__ import annotations

import re
from typing import Any

from harness.core.errors import ConfigError


def environment() -> Any:
    """Jinja2's immutable sandbox: variables are read, never changed; undefined ones fail."""
    from jinja2 import StrictUndefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    return ImmutableSandboxedEnvironment(
        undefined=StrictUndefined, autoescape=False, keep_trailing_newline=False
    )


def refuse_internals(where: str, text: str, tree: Any) -> None:
    """Refuse a template that names an attribute starting with ``_`` (``x.__class__``,
    ``x['__globals__']``, ``x|attr('__init__')``): the sandbox would refuse it too, but
    only when the expression runs."""
    from jinja2 import nodes

    for node in tree.find_all((nodes.Getattr, nodes.Getitem, nodes.Filter)):
        if isinstance(node, nodes.Getattr):
            name: Any = node.attr
        elif isinstance(node, nodes.Getitem):
            name = node.arg.value if isinstance(node.arg, nodes.Const) else None
        else:
            args = node.args if node.name == "attr" else []
            name = args[0].value if args and isinstance(args[0], nodes.Const) else None
        if isinstance(name, str) and name.startswith("_"):
            raise ConfigError(
                f"{where}: unsafe expression {expression(text, node.lineno, name)}: "
                f"access to '{name}' is refused; templates may use their variables, "
                "not Python internals"
            )


def expression(text: str, lineno: int, name: str) -> str:
    """The ``{{ }}`` / ``{% %}`` on line ``lineno`` of ``text`` that mentions ``name``."""
    lines = text.splitlines()
    line = lines[lineno - 1] if 0 < lineno <= len(lines) else ""
    for match in re.finditer(r"\{[{%].*?[%}]\}", line):
        if name in match.group():
            return match.group()
    return f"on line {lineno}: {line.strip()[:200]}"


def refusal(error: Exception) -> str:
    """The sandbox's refusal, with what a template may do."""
    return f"{error} Templates may use their variables, not Python internals"
