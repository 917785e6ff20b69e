"""Before any command: the libraries the harness imports are importable by this Python.

Run with a Python that lacks them (the system's ``python3`` instead of the virtual
environment's, or a ``pip install --no-deps``), a command would end in a traceback from
the first import that fails, deep inside a check of the command line. One ``error:`` line
naming what is missing and how to get it instead. Only the standard library here: this runs
before anything else is imported.
"""

from __future__ import annotations

import sys
from importlib.util import find_spec

#: Import name -> the distribution ``pip install harness-context-precision`` brings it with
#: (``pyproject.toml``'s ``dependencies``; a test keeps the two the same).
REQUIRED: dict[str, str] = {
    "hydra": "hydra-core",
    "omegaconf": "omegaconf",
    "openai": "openai",
    "aiohttp": "aiohttp",  # openai[aiohttp]
    "jinja2": "jinja2",
    "rapidfuzz": "rapidfuzz",
    "mlflow": "mlflow",
    "msgspec": "msgspec",
    "numpy": "numpy",
    "tqdm": "tqdm",
    "matplotlib": "matplotlib",
    "scipy": "scipy",
    "bm25s": "bm25s",
    "pyarrow": "pyarrow",
}

#: What sets the harness up, from the clone's root (the README's install line).
INSTALL = "python3 -m venv .venv && . .venv/bin/activate && pip install -e ."


def missing() -> list[str]:
    """The distributions of ``REQUIRED`` whose module this Python cannot find (nothing is
    imported: a look at the path only, a few milliseconds)."""
    out = []
    for module, distribution in REQUIRED.items():
        try:
            found = find_spec(module) is not None
        except (ImportError, ValueError):  # a broken parent package, a stray module
            found = False
        if not found:
            out.append(distribution)
    return out


def message(absent: list[str]) -> str:
    """The one line for ``absent`` distributions."""
    return (f"error: this Python ({sys.executable}) cannot import {', '.join(absent)}, which "
            "the harness needs: activate the virtual environment you installed it into "
            f"(. .venv/bin/activate), or set one up from the clone's root: {INSTALL}")


def check() -> None:
    """Exit 2 with one line when a library the harness needs is missing."""
    absent = missing()
    if absent:
        print(message(absent), file=sys.stderr)
        sys.exit(2)
