"""``python -m harness``: compose the config with Hydra, then run one job per config."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: Absolute, because Hydra resolves a relative config_path against the module of the
#: task function, which breaks under ``python -m``.
CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "conf")

#: What config ``_target_`` values may name (Hydra 1.4's execution whitelist): our own
#: components. A config cannot make the harness call arbitrary Python.
TRUSTED_TARGETS = ("harness.*",)

#: Arguments after which no MLflow run will be logged, so no logger is prewarmed.
_NO_TRACKING = {
    "-h", "--help", "--hydra-help", "-i", "--info", "-c", "--cfg", "--version",
    "-m", "--multirun", "--shell-completion", "-sc", "tracking=none",
}


def _hydra_app() -> Callable[[], Any]:
    import hydra
    from omegaconf import DictConfig

    @hydra.main(config_path=CONFIG_DIR, config_name="config", execution_whitelist=TRUSTED_TARGETS)
    def task(cfg: DictConfig) -> float | None:
        from harness.runner import main as run_main

        return run_main(cfg)

    return task


def _on_signal(signum: int, frame: Any) -> None:
    from harness.errors import Interrupted

    raise Interrupted(signum)


def main() -> None:
    """Console entry point."""
    import signal

    from harness.tracking import mlflow as mlflow_tracking

    # SIGTERM (a scheduler, `kill`) stops the run as cleanly as Ctrl-C: the MLflow run is
    # marked KILLED and the rows written so far stay in samples.jsonl.
    signal.signal(signal.SIGTERM, _on_signal)
    if not _NO_TRACKING.intersection(sys.argv[1:]):
        # Start MLflow's 2-3 s of imports first, in parallel with Hydra and the work.
        mlflow_tracking.prewarm()
    try:
        _hydra_app()()
    except SystemExit as e:
        if e.code == 1:  # Hydra could not compose the config: add a did-you-mean
            hint = suggest(sys.argv[1:])
            if hint:
                print(hint, file=sys.stderr)
        raise
    finally:
        mlflow_tracking.discard_prewarmed()


def suggest(args: list[str]) -> str | None:
    """A ``did you mean`` line for the first misspelt group, option or key in ``args``.

    Best effort: it never raises (any surprise just means no hint).
    """
    try:
        return _suggest(args)
    except Exception:
        return None


def _suggest(args: list[str]) -> str | None:
    from hydra import compose, initialize_config_dir
    from omegaconf import DictConfig, OmegaConf

    from harness.errors import closest

    conf = Path(CONFIG_DIR)
    groups = sorted(p.name for p in conf.iterdir() if p.is_dir() and p.name != "hydra")
    picks, keys = [], []
    for arg in args:
        if arg.startswith("-") or "=" not in arg:
            continue
        key = arg.split("=", 1)[0]
        if key.startswith(("+", "~", "hydra")):
            continue
        (picks if "." not in key and "/" not in key else keys).append(arg)
    valid_picks = []
    for arg in picks:
        key, value = arg.split("=", 1)
        if key in groups:
            options = sorted(f.stem for f in (conf / key).glob("*.yaml"))
            if value in options or "," in value:
                valid_picks.append(arg)
            else:
                return f"hint: '{value}' is not a {key} option{closest(value, options)}"
        elif not key.isidentifier() or key in ("experiment_name", "run"):
            continue
        else:
            return f"hint: '{key}' is not a config group{closest(key, groups)}"
    try:
        with initialize_config_dir(config_dir=CONFIG_DIR):
            cfg = compose("config", overrides=valid_picks)
    except Exception:
        return None
    for arg in keys:
        path = arg.split("=", 1)[0].split(".")
        node = cfg
        for i, part in enumerate(path):
            if not isinstance(node, DictConfig):
                break
            if part not in node.keys():  # keys(): a value left as ??? is still a setting
                where = ".".join(path[:i])
                siblings = [str(k) for k in node.keys()]
                name = ".".join(path[: i + 1])
                return f"hint: '{name}' is not a setting{closest(part, siblings)}" + (
                    f"; {where} has {', '.join(siblings)}" if where and siblings else ""
                )
            if OmegaConf.is_missing(node, part):
                break  # a value left as ???: a leaf, and a setting
            node = node[part]
    return None
