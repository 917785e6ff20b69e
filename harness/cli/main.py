"""``python -m harness``: compose the config with Hydra, then run one job per config."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from harness.core.trust import CONFIG_PATH, whitelist

#: Arguments after which no run will be logged, so no logger is prewarmed.
_NO_RUN = {
    "-h", "--help", "--hydra-help", "-i", "--info", "-c", "--cfg", "--version",
    "-m", "--multirun", "--shell-completion", "-sc",
}


def _hydra_app() -> Callable[[], Any]:
    import hydra
    from omegaconf import DictConfig

    @hydra.main(config_path=CONFIG_PATH, config_name="config", execution_whitelist=whitelist())
    def task(cfg: DictConfig) -> float | tuple[float, ...] | None:
        from harness.cli.job import main as run_main
        from harness.cli.stderr import release_stderr

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


def _signals(args: list[str]) -> list[str]:
    """SIGTERM (a scheduler, ``kill``) and SIGHUP (a closed terminal or SSH session) stop the
    run as cleanly as Ctrl-C: the MLflow run is marked KILLED and the rows written so far
    stay in samples.jsonl.partial."""
    import signal

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)
    return args


def _hide_secrets(args: list[str]) -> list[str]:
    """Credentials in override values move to the environment (``harness.core.secrets``)."""
    from harness.core.secrets import hide

    return hide(args)


def _custom_settings(args: list[str]) -> list[str]:
    from harness.config.compose import custom_settings

    return custom_settings(args)


def _untrusted_hydra_targets(args: list[str]) -> list[str]:
    _refuse_untrusted_hydra_targets(args)
    return args


def _ray_cluster(args: list[str]) -> list[str]:
    _check_ray_cluster(args)
    return args


def _prewarm_tracker(args: list[str]) -> list[str]:
    """Start MLflow's slow imports (2-3 s) now, in parallel with Hydra, unless no run will be
    logged (``tracking=none``, ``--help``, ``--cfg``, a sweep: its jobs log in process)."""
    choice = next((a.partition("=")[2] for a in args if a.partition("=")[0].lstrip("+")
                   == "tracking"), "mlflow")
    if choice == "mlflow" and not _NO_RUN.intersection(args):
        from harness.tracking.mlflow.tracker import prewarm

        prewarm()
    return args


def _sweep_note(args: list[str]) -> list[str]:
    """Say so when ``experiment=NAME`` defines a sweep but ``-m`` is missing."""
    from harness.config.hints import sweep_note

    note = None if _NO_RUN.intersection(args) else sweep_note(args)
    if note:
        print(note, file=sys.stderr)
    return args


def _resolvers(args: list[str]) -> list[str]:
    """The sweepers' direction: ``${harness_directions:${run.objective}}``."""
    from harness.core.objectives import register_resolver

    register_resolver()
    return args


#: What the command does before Hydra sees the command line, in order.
BEFORE_HYDRA: tuple[Callable[[list[str]], list[str]], ...] = (
    _signals, _hide_secrets, _custom_settings, _untrusted_hydra_targets, _ray_cluster,
    _prewarm_tracker, _sweep_note, _resolvers,
)


def main() -> None:
    """Console entry point: the steps before Hydra, then Hydra (one job per config; a sweep
    whose jobs failed ends with code 2, or 4 when only gates failed: ``cli.guard``)."""
    from harness.cli.stderr import hold_stderr
    from harness.config.hints import suggest
    from harness.tracking.mlflow.tracker import discard_prewarmed

    args = sys.argv[1:]
    for step in BEFORE_HYDRA:
        args = step(args)
    sys.argv[1:] = args
    held = hold_stderr()  # Hydra's composition errors, until a hint can lead them
    try:
        _hydra_app()()
    except SystemExit as e:
        if e.code == 1 and held.holding:  # Hydra could not compose: lead with a hint
            held.release(suggest(args))
        elif e.code == 1:  # a job that crashed in Hydra's hands: the hint after
            hint = suggest(args)
            if hint:
                print(hint, file=sys.stderr)
        raise
    finally:
        held.release()
        discard_prewarmed()
