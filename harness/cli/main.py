"""``python -m harness``: compose the config with Hydra, then run one job per config."""

from __future__ import annotations

import os
import re
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


#: A ``_target_`` (or a logging factory, ``()``) inside a mapping value: ``{_target_: x}``.
_NESTED_TARGET = re.compile(r"""(?:^|[{,\s])['"]?(_target_|\(\))['"]?\s*:\s*['"]?([^,'"}\s]*)""")


def _refuse_untrusted_hydra_targets(args: list[str]) -> None:
    """Hydra builds its own nodes (``+hydra.callbacks.x._target_=...``, or a mapping value
    ``+hydra.callbacks.x={_target_: ...}``, a logging factory ``()``) before any of our
    checks: a target there must be on the allow-list too (nothing is imported)."""
    from harness.core.errors import ConfigError
    from harness.core.trust import trusted

    for arg in args:
        key, sep, value = arg.partition("=")
        key = key.lstrip("+~")
        if not sep or not (key == "hydra" or key.startswith("hydra.")):
            continue
        found = [("_target_", value)] if key.endswith("._target_") else []
        found += [(m.group(1), m.group(2)) for m in _NESTED_TARGET.finditer(value)]
        for kind, target in found:
            where = key.removesuffix("._target_")
            if kind == "()" or key.endswith(".()"):
                raise ConfigError(f"{where}: a logging factory ('()': {target}) would "
                                  "call code from the command line; refused, nothing "
                                  "was called")
            trusted(where, target)


def _check_ray_cluster(args: list[str]) -> None:
    """``hydra/launcher=ray_cluster``: a cluster answers, and no secret must travel."""
    from harness.cli import ray_check

    if ray_check.uses_ray_cluster(args) and not _NO_RUN.difference({"-m", "--multirun"}) \
            .intersection(args):
        ray_check.check(args)


def _signals(args: list[str]) -> list[str]:
    """Ctrl-C, SIGTERM (a scheduler, ``kill``) and SIGHUP (a closed terminal or SSH session)
    stop the run cleanly, a repeated one too (``harness.cli.signals``): the MLflow run is
    marked KILLED and the rows written so far stay in samples.jsonl.partial."""
    from harness.cli.signals import install

    install()
    return args


def _override_syntax(args: list[str]) -> list[str]:
    """Overrides Hydra's grammar cannot read (a list the shell split at a space, ``#`` or
    ``=`` in a value) are one line, exit 1; ``~/docs.jsonl`` is the home folder's file
    (``harness.config.syntax``)."""
    from harness.config.syntax import check_syntax

    return check_syntax(args)


def _config_folders(args: list[str]) -> list[str]:
    """Folders the command line adds to Hydra's search path exist (Hydra would only warn,
    then not find the user's configs): ``hydra.searchpath=[file://DIR]``, ``--config-dir``."""
    from harness.cli.config_args import check_config_folders

    check_config_folders(args)
    return args


def _metric_variants(args: list[str]) -> list[str]:
    """``metric=[a,b]`` names known options once each, and ``metric.KEY`` a key one of them
    has (``harness.config.variants``): one line and exit 2, not Hydra's dozen."""
    from harness.config.variants import check_command_line

    if check_command_line(args) and {"-c", "--cfg"}.intersection(args):
        print("note: --cfg prints Hydra's merge of the listed metric files; a run composes "
              "each variant on its own (--cfg job metric=NAME prints one)", file=sys.stderr)
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
    """Start the chosen tracker's slow imports (MLflow's: 2-3 s) now, in parallel with Hydra
    (before the override grammar's 0.15 s: the helper's start is the run's critical path),
    through its class (``cli.prewarm``); not when no run will be logged (``--help``,
    ``--cfg``, a sweep: its jobs log in process)."""
    if not _NO_RUN.intersection(args):
        from harness.cli.prewarm import start

        start(args)
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


#: What the command does before Hydra sees the command line, in order. A step that finds
#: the command line wrong raises ``ConfigError``: one ``error:`` line, exit 2 (1 for a
#: ``ComposeError``: an unknown option, an override Hydra's grammar cannot read).
BEFORE_HYDRA: tuple[Callable[[list[str]], list[str]], ...] = (
    _signals, _hide_secrets, _custom_settings, _untrusted_hydra_targets, _prewarm_tracker,
    _override_syntax, _config_folders, _metric_variants, _ray_cluster, _sweep_note, _resolvers,
)


def main() -> None:
    """Console entry point: the steps before Hydra, then Hydra (one job per config; a sweep
    whose jobs failed ends with code 2, or 4 when only gates failed: ``cli.guard``).

    What Hydra would print as a traceback before a job starts (a YAML error in a config
    file, a refused callback or logging factory) is one line (``cli.failures``); an
    interruption outside a job, one line and 128 + the signal's number."""
    from harness.cli.prewarm import discard
    from harness.cli.signals import exiting, signal_number
    from harness.cli.stderr import flat_line, hold_stderr, usage_line
    from harness.config.hints import ComposeError, suggest
    from harness.core.errors import ConfigError

    args = sys.argv[1:]
    try:
        for step in BEFORE_HYDRA:
            args = step(args)
    except ConfigError as e:  # a step's check of the command line: one line, exit 2
        discard()  # no run: the prewarmed logger ends now, not after its imports
        print(f"error: {e}", file=sys.stderr)  # (1: it cannot compose, as Hydra's own)
        sys.exit(1 if isinstance(e, ComposeError) else 2)
    sys.argv[1:] = args
    held = hold_stderr()  # Hydra's composition errors, until a hint can lead them
    full_error = os.environ.get("HYDRA_FULL_ERROR")  # the user's: Hydra's traceback
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra raises; _report says it (cli.failures)
    try:
        try:
            _hydra_app()()
        except Exception as e:
            _restore_full_error(full_error)
            if full_error is not None:
                raise
            _report(e, held)
    except _Reported:
        raise
    except SystemExit as e:
        if e.code == 1 and held.holding:  # Hydra could not compose: one line
            hint = suggest(args)
            text = held.held()
            if text.strip():
                held.replace(typo_line(hint, text) if hint else flat_line(text))
        elif e.code == 2 and held.holding and usage_line(held.held()):  # Hydra's flags
            held.replace(str(usage_line(held.held())))
        elif e.code == 1:  # a job that crashed in Hydra's hands: the hint after
            hint = suggest(args)
            if hint:
                print(hint, file=sys.stderr)
        raise
    except KeyboardInterrupt as e:  # outside a job (composing, a sweep's callbacks)
        held.release()
        signum = signal_number(e)
        print(f"interrupted (signal {signum}): stopped before or between jobs; the results "
              "of finished jobs are in their folders", file=sys.stderr)
        sys.exit(exiting(e))
    finally:
        _restore_full_error(full_error)
        held.release()
        discard()
        _release_claimed()


def _release_claimed() -> None:
    from harness.cli.guard import release_claimed

    release_claimed()


def typo_line(hint: str, hydra_text: str) -> str:
    """The did-you-mean ``hint`` as the command's one ``error:`` line, with the options
    Hydra listed (instead of its dozen lines: the listing and its config search path)."""
    import re

    line = "error: " + hint.removeprefix("hint: ")
    listing = re.search(r"Available options in '[^']*':\n((?:\t.*\n?)+)", hydra_text)
    if listing:
        options = [o.strip() for o in listing.group(1).splitlines() if o.strip()]
        line += "; the options: " + ", ".join(options)
    return line


class _Reported(SystemExit):
    """The command ended with its one line already written (no hint to add)."""


def _restore_full_error(value: str | None) -> None:
    if value is None:
        os.environ.pop("HYDRA_FULL_ERROR", None)
    else:
        os.environ["HYDRA_FULL_ERROR"] = value


def _report(error: Exception, held: Any) -> None:
    """One line for what Hydra raised before a job (``cli.failures``), else Hydra's own
    report; either way the command ends."""
    from harness.cli.failures import hydra_report, one_line
    from harness.core.redact import redact

    found = one_line(error)
    if found is None:
        hydra_report(error)
    line, code = found
    held.release()
    print(f"error: {redact(line)}", file=sys.stderr)
    raise _Reported(code)
