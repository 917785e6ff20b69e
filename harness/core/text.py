"""Text helpers shared by outputs and messages: clipping, the Unicode check every text a run
writes passes (``text_problem``), and server or user text made fit for one console line."""

from __future__ import annotations

import re


def clip(text: str, limit: int | None) -> str:
    """``text`` cut to ``limit`` characters, with ``…`` where it was cut (``None``: whole)."""
    return text if limit is None or len(text) <= limit else text[:limit] + "…"


def text_problem(text: str) -> str | None:
    """What makes ``text`` unwritable as UTF-8, or None.

    JSON's ``\\ud800`` escapes, Python literals and Python strings can hold a lone
    surrogate; UTF-8 cannot, so such a text would parse, then fail when written.
    """
    if text.isascii():  # O(1) in CPython: the common case costs nothing
        return None
    try:
        text.encode("utf-8")  # fails on a surrogate code point, and only there
    except UnicodeEncodeError as e:
        return (
            f"contains a lone surrogate (\\u{ord(text[e.start]):04x}), which is not valid "
            "Unicode; fix the text"
        )
    return None


def all_writable(values: object) -> bool:
    """Whether ``values`` is a list or tuple of ``str`` none of which has a ``text_problem``:
    one join, at C speed (a lone surrogate stays one in the join); ``False`` for anything
    else, which the caller checks item by item to name what is wrong."""
    if not isinstance(values, list | tuple):
        return False
    try:
        joined = "".join(values)
    except TypeError:  # an item that is not a str
        return False
    return text_problem(joined) is None


def writable(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD: for text a server or a library
    wrote (a judge's reason, an exception's message), which is reported, not refused."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)


_SURROGATE = re.compile("[\ud800-\udfff]")
# C0/C1 controls and the line and paragraph separators ``str.splitlines`` breaks on
_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")


def one_line(text: str, limit: int | None = 300) -> str:
    """``text`` as one printable line: runs of line breaks and other control characters
    become one space (``⏎`` never splits an ``error:`` line), lone surrogates U+FFFD, cut
    to ``limit`` characters."""
    return clip(_BREAKS.sub(" ", writable(text)).strip(), limit)
