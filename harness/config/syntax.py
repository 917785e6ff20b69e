"""The command line's overrides as Hydra's grammar reads them, checked before Hydra sees them.

Hydra answers an override its lexer cannot read with four lines (the override list, a caret,
a link to its grammar page); a list the shell split at a space (``metric=[a, b]`` unquoted is
two arguments) with the same. Here each is one line naming the setting and what to write
(``ComposeError``: exit 1, as Hydra's own composition errors). A value Hydra cannot read only
because of a home folder (``~/docs.jsonl``: the shell expands ``~`` only at a word's start) or
of letters outside ASCII (``données.jsonl``) is taken as the text it is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from harness.config.hints import ComposeError

#: Characters Hydra reads only inside a quoted value (its grammar's unquoted characters
#: are letters, digits, ``/-+.$%*@?|:_``, ``\\`` escapes and inner spaces).
_SPECIAL = set("=,[]{}()'\"#~!^&;<>`")
#: Flags whose value is the next argument (``--config-dir DIR``, ``--cfg job``).
_WITH_VALUE = {"--config-dir", "-cd", "--config-path", "-cp", "--config-name", "-cn",
               "--cfg", "-c", "--package", "-p", "--info", "-i", "--experimental-rerun",
               "--shell-completion", "-sc"}
_OPEN, _CLOSE = "[{(", "]})"
#: Groups a run cannot do without: ``~metric`` would end in a traceback inside the job.
_REQUIRED = ("dataset", "retriever", "metric", "tracking")
#: ``name: value`` inside a mapping value (``{api_key: K9}``), to mask a secret's value.
_NAMED = re.compile(r"(?P<name>[\w.-]+)(?P<sep>\s*:\s*)(?P<value>[^,{}\[\]\s]+)")


def _masked(arg: str) -> str:
    """An argument as a message may quote it: values of secret-named settings masked."""
    from harness.core.redact import MASK, redact, secret_key

    key, sep, value = arg.partition("=")
    if sep and secret_key(key):
        return f"{key}={MASK}"

    def mask(m: re.Match[str]) -> str:
        return f"{m['name']}{m['sep']}{MASK}" if secret_key(m["name"]) else m[0]

    return redact(key + sep + _NAMED.sub(mask, value))


def _parse(arg: str) -> Any:
    """Hydra's reading of one override, or the exception it raises."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        return OverridesParser.create().parse_overrides([arg])[0]
    except Exception as e:  # noqa: BLE001 - Hydra's OverrideParseException, or a surprise
        return e


def _depth(text: str) -> int:
    """Brackets opened and not closed in ``text`` (outside quotes)."""
    depth, quote = 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth -= 1
    return depth


def quoted(key: str, value: str) -> str:
    """``KEY=VALUE`` with the value quoted for Hydra, as typed in a POSIX shell."""
    if "'" not in value:
        return f"\"{key}='{value}'\""
    return "'" + key + '="' + value.replace('"', '\\"') + "\"'"


def _read_as_text(key: str, value: str) -> str | None:
    """``KEY='VALUE'``, when ``value`` is plainly text Hydra cannot read only for its letters
    outside ASCII (``données.jsonl``); else ``None``."""
    if not value or value.isascii() or "'" in value or any(ch in _SPECIAL for ch in value):
        return None
    candidate = f"{key}='{value}'"
    return None if isinstance(_parse(candidate), Exception) else candidate


def _split_list(args: Sequence[str], i: int) -> str | None:
    """The line for a list or mapping the shell split at spaces, from ``args[i]`` on."""
    depth, j = _depth(args[i]), i
    while depth > 0 and j + 1 < len(args):
        j += 1
        depth += _depth(args[j])
    if depth != 0 or j == i:
        return None
    parts, spaced = args[i:j + 1], _masked(" ".join(args[i:j + 1]))
    return (f"{spaced}: the shell split this setting at its spaces into {len(parts)} "
            f"arguments; write it without spaces ({_masked(''.join(parts))}) or quote it "
            f"whole ('{spaced}')")


def _culprit(arg: str, error: str) -> tuple[str, int] | None:
    """The character Hydra's lexer stopped at (its caret) and where, or the input it did not
    expect (where: -1, unknown)."""
    lines = error.splitlines()
    head = "LexerNoViableAltException: "
    for i, line in enumerate(lines[:-1]):
        if line.startswith(head) and "^" in lines[i + 1]:
            column = lines[i + 1].index("^") - len(head)
            return (arg[column], column) if 0 <= column < len(arg) else None
    found = re.search(r"(?:mismatched|extraneous) input '(.)'", error)
    return (found.group(1), -1) if found else None


def _unreadable(arg: str, error: Exception) -> str:
    """One line for an override Hydra's grammar refuses."""
    key, sep, value = arg.partition("=")
    shown = _masked(arg).partition("=")[2]
    if not sep:
        return f"{_masked(arg)!r}: not an override; write KEY=VALUE (e.g. metric=id_ranked)"
    found = _culprit(arg, str(error))
    if found and 0 <= found[1] < len(key):
        return (f"{key!r}: not a setting name (Hydra cannot read {found[0]!r} in it); "
                "write KEY=VALUE with a dotted key, e.g. dataset.path=FILE")
    if _depth(value) > 0:
        return (f"{key}={shown}: a bracket is not closed; close it, or quote the whole setting "
                f"if it holds spaces ('{key}={shown} ...')")
    bad = found[0] if found else next(
        (ch for ch in value if ch in _SPECIAL or not ch.isascii()), None)
    what = f"{bad!r} in an unquoted value" if bad else "this value"
    if value.lstrip()[:1] in ("[", "{"):
        return (f"{key}={shown}: Hydra cannot read {what}; quote the item that holds it "
                "(e.g. [a,'b#c'] or {k: 'b#c'})")
    return f"{key}: Hydra cannot read {what}; quote the value: {quoted(key, shown)}"


def check_syntax(args: Sequence[str]) -> list[str]:
    """``args`` with each override checked against Hydra's grammar (``~`` and non-ASCII
    text values taken as text). Raises ``ComposeError``: one line naming the setting."""
    multirun = bool({"-m", "--multirun"}.intersection(args)) or any(
        a.lstrip("+").replace(" ", "") == "hydra.mode=MULTIRUN" for a in args)
    out: list[str] = []
    skip = False
    for i, arg in enumerate(args):
        if skip or arg.startswith("-"):
            skip = not skip and arg in _WITH_VALUE and "=" not in arg
            out.append(arg)
            continue
        key, sep, value = arg.partition("=")
        if key[:1] == "~" and key[1:] in _REQUIRED:
            raise ComposeError(f"{arg}: a run needs a {key[1:]}; choose one with "
                               f"{key[1:]}=NAME instead of removing it")
        if sep and not key.lstrip("+~"):
            raise ComposeError(f"{arg!r}: no setting before '='; write KEY=VALUE "
                               "(e.g. metric=id_ranked)")
        if sep and value.startswith("~"):  # the shell leaves ~ after "=": the home folder
            value = os.path.expanduser(value)
            arg = f"{key}={value}"
        parsed = _parse(arg)
        if isinstance(parsed, Exception):
            fixed = _read_as_text(key, value) if sep else None
            if fixed is None:
                raise ComposeError(_split_list(args, i) or _unreadable(arg, parsed))
            out.append(fixed)
            continue
        if (not multirun and parsed.is_sweep_override() and not key.lstrip("+~").startswith(
                "hydra") and "," in value and not value.lstrip().startswith(
                ("choice(", "range(", "interval(", "glob("))):
            shown = _masked(arg).partition("=")[2]
            raise ComposeError(
                f"{key}: a comma makes {shown!r} a sweep, and this is one run; for text "
                f"quote the value ({quoted(key, shown)}), for a list write {key}=[{shown}], "
                "to sweep add -m")
        out.append(arg)
    return out
