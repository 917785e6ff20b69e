"""``python -m harness``: compose the config with Hydra, then run one job per config."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.core.trust import CONFIG_DIR, whitelist

#: Arguments after which no run will be logged, so no logger is prewarmed.
_NO_RUN = {
    "-h", "--help", "--hydra-help", "-i", "--info", "-c", "--cfg", "--version",
    "-m", "--multirun", "--shell-completion", "-sc",
}


def _hydra_app() -> Callable[[], Any]:
    import hydra
    from omegaconf import DictConfig

    @hydra.main(config_path=CONFIG_DIR, config_name="config", execution_whitelist=whitelist())
    def task(cfg: DictConfig) -> float | tuple[float, ...] | None:
        from harness.cli.job import main as run_main
        from harness.config.hints import release_stderr

        release_stderr()  # composed: nothing more to lead with a hint
        return run_main(cfg)

    app: Callable[[], Any] = task
    return app


def _on_signal(signum: int, frame: Any) -> None:
    from harness.core.errors import Interrupted

    raise Interrupted(signum)


def _refuse_untrusted_hydra_targets(args: list[str]) -> None:
    """Hydra builds its own nodes (``+hydra.callbacks.x._target_=...``) before any of our
    checks: a target there must be on the allow-list too (nothing is imported)."""
    from harness.core.errors import ConfigError
    from harness.core.trust import trusted

    for arg in args:
        key, sep, value = arg.partition("=")
        key = key.lstrip("+~")
        if sep and key.startswith("hydra.") and key.endswith("._target_"):
            try:
                trusted(key.removesuffix("._target_"), value)
            except ConfigError as e:
                print(f"error: {e}", file=sys.stderr)
                sys.exit(2)


def _check_ray_cluster(args: list[str]) -> None:
    """``hydra/launcher=ray_cluster``: a cluster answers, and no secret must travel."""
    from harness.cli import ray_check

    if ray_check.uses_ray_cluster(args) and not _NO_RUN.difference({"-m", "--multirun"}) \
            .intersection(args):
        from harness.core.errors import ConfigError

        try:
            ray_check.check(args)
        except ConfigError as e:
            print(f"error: {e}", file=sys.stderr)
            sys.exit(2)


def tracker_class(args: list[str]) -> Any:
    """The tracker class the command line chooses, read from ``conf/tracking/`` before
    Hydra composes anything; ``None`` when it cannot tell."""
    import importlib

    from omegaconf import OmegaConf

    try:
        defaults = OmegaConf.load(Path(CONFIG_DIR) / "config.yaml").defaults
        choice = next(
            str(d.tracking) for d in defaults if not isinstance(d, str) and "tracking" in d
        )
        for arg in args:
            key, _, value = arg.partition("=")
            if key.lstrip("+") == "tracking":
                choice = value
        target = str(OmegaConf.load(Path(CONFIG_DIR) / "tracking" / f"{choice}.yaml")._target_)
        module, _, name = target.rpartition(".")
        if not module.startswith("harness."):
            return None
        return getattr(importlib.import_module(module), name)
    except Exception:  # a bad choice is Hydra's to report, with its own message
        return None


def main() -> None:
    """Console entry point."""
    import signal

    from harness.config import hints
    from harness.core.secrets import hide
    from harness.tracking.mlflow import tracker as mlflow_tracking

    # SIGTERM (a scheduler, `kill`) and SIGHUP (a closed terminal or SSH session) stop the
    # run as cleanly as Ctrl-C: the MLflow run is marked KILLED and the rows written so far
    # stay in samples.jsonl.partial.
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)
    from harness.config.compose import custom_settings

    sys.argv[1:] = custom_settings(hide(sys.argv[1:]))
    _refuse_untrusted_hydra_targets(sys.argv[1:])
    _check_ray_cluster(sys.argv[1:])
    if not _NO_RUN.intersection(sys.argv[1:]):
        # Start the tracker's slow imports (MLflow: 2-3 s) now, in parallel with Hydra.
        tracker = tracker_class(sys.argv[1:])
        if tracker is not None:
            tracker.prewarm()
        note = hints.sweep_note(sys.argv[1:])
        if note:
            print(note, file=sys.stderr)
    from harness.cli.guard import Failures
    from harness.core.objectives import register_resolver

    register_resolver()  # the sweepers' direction: ${harness_directions:${run.objective}}
    Failures.count = Failures.gates = 0
    held = hints.hold_stderr()  # Hydra's composition errors, until a hint can lead them
    try:
        _hydra_app()()
        if Failures.count:  # a sweep whose jobs failed (each said why; the others ran)
            sys.exit(4 if Failures.gates == Failures.count else 2)  # 4: only gates failed
    except SystemExit as e:
        if e.code == 1 and held.holding:  # Hydra could not compose: lead with a hint
            held.release(hints.suggest(sys.argv[1:]))
        elif e.code == 1:  # a job that crashed in Hydra's hands: the hint after
            hint = hints.suggest(sys.argv[1:])
            if hint:
                print(hint, file=sys.stderr)
        raise
    finally:
        held.release()
        mlflow_tracking.discard_prewarmed()
