"""Hydra's own copies of the config, with no secret in them.

Hydra writes ``.hydra/config.yaml``, ``hydra.yaml`` and ``overrides.yaml`` into a job's
folder (and ``multirun.yaml`` into a sweep's) before any of our code runs. A secret given
on the command line never reaches them (``harness.core.secrets.hide``), but one written in a
config file (``conf/retriever/mine.yaml: api_key: ...``) would be copied there. The
callback ``RedactedHydraFiles`` (registered in ``conf/config.yaml``) rewrites those files
as soon as the job starts (``on_job_start`` runs after Hydra saved them): the value of each
secret-named setting masked, and every credential ``redact`` finds. The files stay where
users and tools look for them; a reference (``${oc.env:MY_KEY}``) stays as written.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from harness.core.redact import redact_tree, register_tree

#: The files Hydra writes into a job's ``hydra.output_subdir``.
JOB_FILES = ("config.yaml", "hydra.yaml", "overrides.yaml")


def redact_file(path: Path) -> bool:
    """Rewrite the YAML file ``path`` (atomically) with its secrets masked; whether it
    changed. A file that is missing or not YAML is left alone."""
    import yaml

    try:
        text = path.read_text("utf-8")
        data = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    redacted = redact_tree(data)
    if redacted == data:
        return False
    out = OmegaConf.to_yaml(OmegaConf.create(redacted)) if isinstance(redacted, (dict, list)) \
        else yaml.safe_dump(redacted)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as f:
            f.write(out)
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)
        return False
    return True


def _register(config: DictConfig) -> None:
    """Secret-named settings' values (unresolved: composing did not fail on them) masked
    in free text too (an override list naming one)."""
    try:
        register_tree(OmegaConf.to_container(config, resolve=False))
    except Exception:  # noqa: BLE001 - a config OmegaConf cannot read back: the keys suffice
        return


def _sweep_file(config: DictConfig) -> Path | None:
    try:
        return Path(str(config.hydra.sweep.dir)) / "multirun.yaml"
    except Exception:  # noqa: BLE001 - an unresolvable sweep folder: Hydra reported it
        return None


class RedactedHydraFiles(Callback):
    """Mask secrets in the files Hydra wrote for a job (and a sweep) once they exist."""

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        _register(config)
        try:
            subdir = config.hydra.output_subdir
            folder = Path(str(config.hydra.runtime.output_dir))
        except Exception:  # noqa: BLE001 - no runtime folder (a compose-only call)
            return
        if subdir is not None:
            for name in JOB_FILES:
                redact_file(folder / str(subdir) / name)
        if str(config.hydra.get("mode", "")).endswith("MULTIRUN"):
            sweep = _sweep_file(config)
            if sweep is not None:
                redact_file(sweep)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """A sweep whose jobs all failed before starting still has its file redacted."""
        _register(config)
        sweep = _sweep_file(config)
        if sweep is not None:
            redact_file(sweep)
