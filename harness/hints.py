"""Did-you-mean hints for a command line Hydra could not compose."""

from __future__ import annotations

from pathlib import Path

from harness.registry import CONFIG_DIR


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
    picks: list[str] = []
    keys: list[str] = []
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
            # keys(), not `in node`: a value left as ??? is still a setting
            if part not in node.keys():  # noqa: SIM118
                where = ".".join(path[:i])
                siblings = [str(k) for k in node.keys()]  # noqa: SIM118
                name = ".".join(path[: i + 1])
                return f"hint: '{name}' is not a setting{closest(part, siblings)}" + (
                    f"; {where} has {', '.join(siblings)}" if where and siblings else ""
                )
            if OmegaConf.is_missing(node, part):
                break  # a value left as ???: a leaf, and a setting
            node = node[part]
    return None
