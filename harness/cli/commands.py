"""The one ``harness`` command: ``harness compare|report|cache|label ...`` runs that command (its
first word picks it), anything else is the Hydra app (``harness metric=id_based``).

A Hydra override always holds ``=`` or starts with ``-``, ``+`` or ``~``, so a bare first
word is never one: a word close to a command's name is a typo (one line, exit 2). Adding a
command is one line in ``COMMANDS``.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from typing import NoReturn

#: First word -> (module whose ``main(argv, prog=...)`` runs it, one line for ``--help``).
COMMANDS: dict[str, tuple[str, str]] = {
    "compare": ("harness.cli.compare",
                "rank a sweep's runs, or test a candidate run against a baseline"),
    "report": ("harness.cli.report",
               "write (again) the report.html of a run, a sweep or an MLflow run"),
    "cache": ("harness.cli.cache", "inspect and prune the judge's verdict cache"),
    "label": ("harness.cli.label",
              "draw the samples to label from a finished run; write their sheet"),
}

#: The release that drops the old command forms (``harness-compare``, ``harness-cache``,
#: ``python -m harness.compare``, ``python -m harness.report``).
SHIMS_UNTIL = "0.3.0"

_HELP = {"-h", "--help"}


def main() -> None:
    """Console entry point of ``harness`` (and ``python -m harness``)."""
    from harness.cli.deps import check

    check()  # a Python without the harness's libraries: one line, not a traceback
    args = sys.argv[1:]
    word = args[0] if args else ""
    if word in COMMANDS:
        sys.exit(run(word, args[1:]))
    if word and not word.startswith(("-", "+", "~")) and "=" not in word:
        _refuse_typo(word)
    from harness.cli.main import main as hydra_main

    if not _HELP.intersection(args):
        hydra_main()
        return
    try:
        hydra_main()
    except SystemExit as e:
        if e.code in (0, None):
            print(commands_help())
        raise
    print(commands_help())


def run(word: str, argv: list[str], prog: str | None = None) -> int:
    """Run the command ``word`` on ``argv``; its exit code."""
    module = importlib.import_module(COMMANDS[word][0])
    code = module.main(argv, prog=prog or f"harness {word}")
    return int(code or 0)


def commands_help() -> str:
    """The commands, for ``harness --help``."""
    width = max(map(len, COMMANDS))
    lines = [f"  harness {w:<{width}}  {about}" for w, (_, about) in COMMANDS.items()]
    return "== Commands ==\nThe first word picks a command (each has --help):\n\n" + \
        "\n".join(lines)


def shim(word: str, old: str) -> NoReturn:
    """An old command form (``old``) running ``harness WORD``, until ``SHIMS_UNTIL``."""
    warnings.warn(f"{old} is now 'harness {word}'; the old form works until {SHIMS_UNTIL}",
                  DeprecationWarning, stacklevel=1)
    sys.exit(run(word, sys.argv[1:], prog=old))


def compare_shim() -> NoReturn:
    """``harness-compare`` (installed script), until 0.3.0."""
    shim("compare", "harness-compare")


def cache_shim() -> NoReturn:
    """``harness-cache`` (installed script), until 0.3.0."""
    shim("cache", "harness-cache")


def _refuse_typo(word: str) -> None:
    """A bare first word close to a command's name: one line, exit 2 (else the override
    check says it is not one, exit 1)."""
    import difflib

    match = difflib.get_close_matches(word, list(COMMANDS), n=1, cutoff=0.6)
    if match:
        print(f"error: '{word}' is not a command (did you mean 'harness {match[0]}'?); the "
              f"commands: {', '.join(COMMANDS)}; an override is KEY=VALUE", file=sys.stderr)
        sys.exit(2)
