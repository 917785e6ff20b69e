"""The config the CLI and the Python API both compose: Hydra's composition of ``conf/`` with
the overrides, cached per process, and what the command line adds before it."""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when used: the CLI reads custom_settings before Hydra loads
    from omegaconf import DictConfig

#: Composed configs kept per process, by their overrides (the least recently used go first).
COMPOSED_MAX = 64
_composed: OrderedDict[tuple[str, ...], DictConfig] = OrderedDict()
_compose_lock = threading.Lock()


def custom_settings(args: list[str]) -> list[str]:
    """With ``retriever=custom``, ``retriever.KEY=VALUE`` adds a setting of the user's own
    retriever (``++``: Hydra refuses a plain key that ``custom.yaml`` cannot declare)."""
    if "retriever=custom" not in args:
        return args
    out = []
    for arg in args:
        key, sep, _ = arg.partition("=")
        if sep and key.startswith("retriever.") and key != "retriever._target_":
            arg = "++" + arg
        out.append(arg)
    return out


def caller_overrides(overrides: Sequence[str]) -> list[str]:
    """A Python caller's overrides, checked as the command line's are (an override Hydra's
    grammar cannot read is one line naming it, ``ComposeError``), custom settings added."""
    from harness.config.syntax import check_syntax

    return custom_settings(check_syntax([str(o) for o in overrides]))


def job_config(cfg: DictConfig) -> dict[str, Any]:
    """The resolved config as plain containers, without Hydra's own node."""
    from omegaconf import OmegaConf

    resolved = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(resolved, dict)
    resolved.pop("hydra", None)
    return {str(k): v for k, v in resolved.items()}


def composed(overrides: Sequence[str]) -> DictConfig:
    """The config ``python -m harness OVERRIDES`` would compose, as a fresh copy.

    Hydra composes each distinct list of overrides once per process (it costs ~0.1-0.3 s,
    more than scoring a few hundred samples); later calls copy the result (~2 ms).
    Interpolations (``${oc.env:...}``) stay unresolved in the copy, so they are read when
    used, as before; files under ``conf/`` are read once per process. Thread-safe: Hydra's
    global state is touched under a lock.
    """
    from hydra import compose, initialize_config_module

    from harness.core.trust import CONFIG_MODULE

    key = tuple(overrides)
    with _compose_lock:
        cfg = _composed.get(key)
        if cfg is None:
            try:
                with initialize_config_module(config_module=CONFIG_MODULE):
                    cfg = compose("config", overrides=list(key))
            except Exception as e:
                raise config_error(e, list(key)) from None
            _composed[key] = cfg
            while len(_composed) > COMPOSED_MAX:
                _composed.popitem(last=False)
        else:
            _composed.move_to_end(key)
        return copy.deepcopy(cfg)


def config_error(error: Exception, overrides: list[str]) -> Exception:
    """Hydra's (or OmegaConf's) composition error as the CLI reports it: one line, led by
    the did-you-mean hint (a ``ConfigError``); anything else unchanged."""
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from harness.config.hints import suggest
    from harness.core.errors import ConfigError, headline

    if not isinstance(error, (HydraException, OmegaConfBaseException)):
        return error
    hint = suggest(overrides)
    what = headline(str(error)) or type(error).__name__
    lead = hint.removeprefix("hint: ") if hint else None
    return ConfigError(f"{lead} [{what}]" if lead else what)
