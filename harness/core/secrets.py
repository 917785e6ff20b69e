"""Credentials given on the command line never reach a file.

Hydra writes the command line's overrides into ``.hydra/`` and into run names before any
of our code runs. Each secret in an override's value is therefore handed to Hydra as a
reference to an environment variable of this process (inherited by launcher workers), the
value itself in that variable; the config resolves to the real value, and every text Hydra
writes holds only the reference. A secret is the value of a secret-named setting
(``retriever.api_key=...``, ``harness.core.redact.secret_key``), each scalar under one when
the value is a list or mapping (``retriever.auth=[user,password]``), and any text with a
credential ``redact`` finds (``tracking.tracking_uri=http://user:pass@host``).

The override is read with Hydra's own grammar and written back with each secret replaced
in place, so every shape Hydra reads keeps its meaning: lists and mappings (nested too),
quoted values, ``+key=``/``++key=``, sweeps (``a,b``, ``choice(...)``, ``shuffle(...)``,
``tag(...)``: each element hidden on its own, so a sweep stays a sweep), and text with
``=``, ``,``, ``]``, ``}`` or quotes inside. A text becomes ``'${oc.env:HARNESS_SECRET_<n>}'``;
a number ``'${oc.decode:${oc.env:HARNESS_SECRET_<n>}}'`` (still a number). What holds no
secret to hide is left as written: an interpolation (``${oc.env:MY_KEY}`` says where the
secret is, not what), ``null``, a boolean, an empty value, a ``range()``/``interval()``/
``glob()`` sweep, a group choice (``key@package=option``). ``~key=value`` (delete when the
value matches) becomes ``~key``: the deletion without the value. An override Hydra's grammar
cannot read is left for the syntax check, which names it with the value masked; a value
Hydra cannot read only for letters outside ASCII is taken as text, as that check takes it.
The rewritten override is read back and compared with the original; one that would not
mean the same is refused (``ConfigError``) rather than written with the secret.
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import urlsplit

from harness.core.errors import ConfigError
from harness.core.redact import MASK, redact, register, secret_key

PREFIX = "HARNESS_SECRET_"
# Hydra's override_dirname escapes the reference: $\{oc.env\:HARNESS_SECRET_0\}
_REFERENCE = re.compile(r"\$\\?\{oc\.decode\\?:\$\\?\{oc\.env\\?:(?P<decoded>" + PREFIX
                        + r"\d+)\\?\}\\?\}|\$\\?\{oc\.env\\?:(?P<text>" + PREFIX + r"\d+)\\?\}")
_PLACEHOLDER = "HARNESSREF"
#: Text Hydra reads back unquoted as the same text (it was read unquoted as text).
_PLAIN = re.compile(r"[\w./+\-@?|%*]+", re.ASCII)
_WHOLE_TEXT = re.compile(r"\$\{oc\.env:(" + PREFIX + r"\d+)\}")
_WHOLE_NUMBER = re.compile(r"\$\{oc\.decode:\$\{oc\.env:(" + PREFIX + r"\d+)\}\}")
#: Characters Hydra reads only inside a quoted value (``harness.config.syntax`` has the
#: same set): a value that has none of them and is unreadable only for letters outside
#: ASCII is text.
_SPECIAL = set("=,[]{}()'\"#~!^&;<>`")


def hide(args: list[str]) -> list[str]:
    """``args`` with each secret in an override's value moved to the environment (module
    docstring); every hidden value is registered, so ``redact`` masks it in any text."""
    return [_hide_arg(arg) for arg in args]


def _hide_arg(arg: str) -> str:
    key, sep, value = arg.partition("=")
    name = key.lstrip("+~")
    if not sep or key.startswith("-") or not name or "@" in name:
        return arg  # a flag, a deletion without a value, a group choice with a package
    secret = secret_key(name)
    if not secret and not _maybe_credential(value):
        return arg
    override = _override(arg)
    if override is None:  # Hydra cannot read it: the syntax check names it, masked
        if secret:
            register(value)
            if _text_only_for_letters(key, value):
                return f"{key}={_reference(value)}"
        return arg
    if override.is_delete():
        register(value)
        return key
    from hydra.core.override_parser.types import ChoiceSweep

    raw = override._value
    if override.is_sweep_override():
        if not isinstance(raw, ChoiceSweep):
            return arg  # range(), interval(), glob(): numbers and patterns, no text
        elements = [_hidden(e, secret) for e in raw.list]
        if all(new is old for new, old in zip(elements, raw.list, strict=True)):
            return arg
        text = _sweep_text(raw, elements)
    else:
        element = _hidden(raw, secret)
        if element is raw:
            return arg
        text = _text(element)
    hidden = f"{key}={text}"
    if not _same(override, hidden):
        raise ConfigError(
            f"{name}: this value cannot be kept out of the files Hydra writes as written; "
            f"put it in an environment variable and write {name}='${{oc.env:VARIABLE}}'")
    return hidden


def _maybe_credential(value: str) -> bool:
    """Whether a value of a setting not named as a secret may hold one: a list or mapping
    (a secret-named key inside), or text in which ``redact`` finds a credential."""
    return "[" in value or "{" in value or redact(value) != value


def _text_only_for_letters(key: str, value: str) -> bool:
    """Whether Hydra cannot read ``value`` only for its letters outside ASCII."""
    if value.isascii() or any(ch in _SPECIAL for ch in value):
        return False
    return _override(f"{key}='{value}'") is not None


def _override(arg: str) -> Any:
    """Hydra's reading of one override, or ``None`` when its grammar refuses it."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        return OverridesParser.create().parse_override(arg)
    except Exception:  # noqa: BLE001 - Hydra's grammar errors: the syntax check reports them
        return None


def _hidden(element: Any, secret: bool) -> Any:
    """A parsed element with each secret in it a reference (``QuotedString``); the element
    itself (``is``) when it holds none."""
    from hydra.core.override_parser.types import QuotedString

    if isinstance(element, dict):
        items = {k: _hidden(v, secret or secret_key(str(k))) for k, v in element.items()}
        return element if all(items[k] is element[k] for k in element) else items
    if isinstance(element, list):
        values = [_hidden(v, secret) for v in element]
        return element if all(n is o for n, o in zip(values, element, strict=True)) else values
    if isinstance(element, bool) or element is None:
        return element  # unset or off: says nothing of the secret
    if isinstance(element, int | float):
        if not secret:
            return element
        register(str(element))
        return QuotedString(text=_reference(str(element), number=True), quote=_single())
    text = element.text if isinstance(element, QuotedString) else element
    if not isinstance(text, str) or text == "":
        return element
    if secret and "${" in text:
        register(text)  # masked where it is written whole
        return element  # a reference: Hydra writes where the secret is, not what it is
    if not secret and (redact(text) == text or _password_is_reference(text)):
        return element
    register(text)
    return QuotedString(text=_reference(text), quote=_single())


def _single() -> Any:
    from hydra.core.override_parser.types import Quote

    return Quote.single


def _reference(value: str, number: bool = False) -> str:
    """A reference to a new environment variable holding ``value`` (``number``: read back
    as the number it spells)."""
    name = f"{PREFIX}{sum(k.startswith(PREFIX) for k in os.environ)}"
    os.environ[name] = value
    return f"${{oc.decode:${{oc.env:{name}}}}}" if number else f"${{oc.env:{name}}}"


def _text(element: Any) -> str:
    """A parsed element as Hydra's grammar reads it back (lists and mappings with a space
    after each separator, as users write them)."""
    from hydra.core.override_parser.types import QuotedString

    if isinstance(element, QuotedString):
        if _WHOLE_TEXT.fullmatch(element.text):
            return element.text  # Hydra reads ${oc.env:NAME} unquoted (not a nested one)
        return element.with_quotes()
    if isinstance(element, dict):
        return "{" + ", ".join(f"{_text(k)}: {_text(v)}" for k, v in element.items()) + "}"
    if isinstance(element, list):
        return "[" + ", ".join(_text(v) for v in element) + "]"
    if element is None:
        return "null"
    if isinstance(element, bool):
        return str(element).lower()
    if isinstance(element, str) and not _PLAIN.fullmatch(element):
        # quoted: an interpolation stays one, and no character needs escaping
        return QuotedString(text=element, quote=_single()).with_quotes()
    return str(element)


def _sweep_text(sweep: Any, elements: list[Any]) -> str:
    """A choice sweep with ``elements``, in the form it was written (``a,b``,
    ``choice(a,b)``, ``shuffle(...)``, ``tag(t,choice(...))``)."""
    inner = ",".join(_text(e) for e in elements)
    text = inner if sweep.simple_form and not sweep.tags else f"choice({inner})"
    if sweep.shuffle:
        text = f"shuffle({text})"
    if sweep.tags:
        text = f"tag({','.join(sorted(sweep.tags))},{text})"
    return text


def _same(override: Any, hidden: str) -> bool:
    """Whether the override ``hidden`` means what ``override`` does, its references read."""
    from hydra.core.override_parser.types import ChoiceSweep

    again = _override(hidden)
    if again is None or (again.key_or_group, again.package, again.type) != (
            override.key_or_group, override.package, override.type):
        return False
    before, after = override.value(), again.value()
    if isinstance(before, ChoiceSweep):
        return isinstance(after, ChoiceSweep) and (
            [_revealed(v) for v in after.list], after.tags, after.shuffle) == (
            [_revealed(v, False) for v in before.list], before.tags, before.shuffle)
    return bool(_revealed(after) == before)


def _revealed(value: Any, hidden: bool = True) -> Any:
    """A parsed value as plain data (a ``QuotedString`` its text), with each whole
    reference to a hidden value replaced by it (``hidden``)."""
    from hydra.core.override_parser.types import QuotedString

    if isinstance(value, dict):
        return {k: _revealed(v, hidden) for k, v in value.items()}
    if isinstance(value, list):
        return [_revealed(v, hidden) for v in value]
    if isinstance(value, QuotedString):
        value = value.text
    if not isinstance(value, str) or not hidden:
        return value
    if m := _WHOLE_TEXT.fullmatch(value):
        return os.environ.get(m[1], value)
    if m := _WHOLE_NUMBER.fullmatch(value):
        override = _override(f"x={os.environ.get(m[1], '')}")
        return value if override is None else override.value()
    return value


def _password_is_reference(value: str) -> bool:
    """Whether the only secret in ``value`` is an interpolation (``scheme://user:${oc.env:PW}
    @host``): then Hydra may write it as it is, and must resolve it, which it would not do
    inside a hidden value."""
    if "${" not in value:
        return False
    spans, depth, start = [], 0, 0
    for i, c in enumerate(value):
        if value.startswith("${", i):
            if depth == 0:
                start = i
            depth += 1
        elif c == "}" and depth:
            depth -= 1
            if depth == 0:
                spans.append((start, i + 1))
    probe, end = "", 0
    for a, b in spans:
        probe, end = probe + value[end:a] + _PLACEHOLDER, b
    probe += value[end:]
    try:
        password = urlsplit(probe).password
    except ValueError:
        return False
    query_free = redact(probe.split("?", 1)[0]) == redact(probe) if "?" in probe else True
    return password == _PLACEHOLDER and query_free


def reveal(text: str) -> str:
    """``text`` with each hidden value's reference replaced by what may be shown of it: a
    URI without its credentials (``http://***@host``), else the mask."""
    return _REFERENCE.sub(_revealed_reference, text)


def _revealed_reference(m: re.Match[str]) -> str:
    value = os.environ.get(m["text"]) if m["text"] else None
    if value is not None and "://" in value:
        return redact(value)
    return MASK
