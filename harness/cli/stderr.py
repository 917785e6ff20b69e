"""What the command writes to stderr while Hydra composes: held, so that a did-you-mean hint
can lead Hydra's multi-line composition error instead of trailing it."""

from __future__ import annotations

import re
import sys
from typing import Any


class HeldStderr:
    """Holds what is written to ``sys.stderr`` until ``release``, so that a did-you-mean
    hint can lead Hydra's multi-line composition error instead of trailing it.

    Installed while Hydra composes; released when the job starts (nothing is held during
    a run) or when the command ends.
    """

    def __init__(self) -> None:
        self.target: Any = sys.stderr
        self.parts: list[str] = []
        self.holding = True
        sys.stderr = self

    def write(self, text: str) -> int:
        """Hold ``text`` (or pass it on, once released)."""
        if self.holding:
            self.parts.append(text)
            return len(text)
        return int(self.target.write(text))

    def flush(self) -> None:
        """Flush the real stream (nothing while holding)."""
        if not self.holding:
            self.target.flush()

    def release(self, lead: str | None = None) -> None:
        """Put the real stream back and write ``lead`` (a line), then what was held."""
        if not self.holding:
            return
        self.holding = False
        if sys.stderr is self:
            sys.stderr = self.target
        self.target.write((f"{lead}\n" if lead else "") + "".join(self.parts))
        self.target.flush()

    def replace(self, line: str) -> None:
        """Put the real stream back and write ``line`` instead of what was held (Hydra's
        listing, once a did-you-mean line has said what it says)."""
        if not self.holding:
            return
        self.holding = False
        if sys.stderr is self:
            sys.stderr = self.target
        self.target.write(f"{line}\n")
        self.target.flush()

    def held(self) -> str:
        """What was written while holding."""
        return "".join(self.parts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.target, name)


#: The hold of this command, if any (``hold_stderr``).
_held: list[HeldStderr] = []


def hold_stderr() -> HeldStderr:
    """Start holding stderr (see ``HeldStderr``)."""
    _held[:] = [HeldStderr()]
    return _held[0]


def release_stderr() -> None:
    """Stop holding stderr, writing what was held (a job starts: Hydra composed it)."""
    while _held:
        _held.pop().release()


def flat_line(text: str) -> str:
    """Hydra's multi-line composition error as one ``error:`` line: its message, without
    the config search path and links, with the options it listed."""
    lines = []
    for line in text.strip().splitlines():
        if line.startswith(("Config search path:", "Available options in", "\t")):
            break
        if line.strip() and not line.startswith("See https://"):
            lines.append(line.strip())
    listing = re.search(r"Available options in '[^']*':\n((?:\t.*\n?)+)", text)
    options = listing.group(1).split() if listing else []
    return ("error: " + " ".join(lines).removeprefix("Error: ")
            + (f"; the options: {', '.join(options)}" if options else ""))


def usage_line(text: str) -> str | None:
    """argparse's usage and error (Hydra's flags) as one ``error:`` line, or ``None``."""
    found = re.search(r"^\S+: error: (.*)$", text, re.MULTILINE) if "usage:" in text else None
    return f"error: {found.group(1)}; see harness --help" if found else None
