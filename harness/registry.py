"""Where the one registry lives: the config folder, and what its ``_target_`` may name."""

from __future__ import annotations

from pathlib import Path

#: Absolute, because Hydra resolves a relative config_path against the module of the
#: task function, which breaks under ``python -m``.
CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "conf")

#: What config ``_target_`` values may name (Hydra 1.4's execution whitelist): our own
#: components. A config cannot make the harness call arbitrary Python.
TRUSTED_TARGETS = ("harness.*",)
