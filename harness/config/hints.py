"""Did-you-mean hints for a command line Hydra could not compose, and notes on one it can."""

from __future__ import annotations

from pathlib import Path

from harness.core.trust import CONFIG_DIR


def sweep_note(args: list[str]) -> str | None:
    """A note when ``experiment=NAME`` names a study with sweep parameters but ``-m`` is
    missing: Hydra then runs one job with the experiment's base settings, silently."""
    if {"-m", "--multirun"}.intersection(args):
        return None
    try:
        from omegaconf import OmegaConf

        for arg in args:
            key, _, name = arg.partition("=")
            if key.lstrip("+") != "experiment" or not name or "/" in name:
                continue
            cfg = OmegaConf.load(Path(CONFIG_DIR) / "experiment" / f"{name}.yaml")
            params = OmegaConf.select(cfg, "hydra.sweeper.params")
            if params:
                swept = ", ".join(str(k) for k in params)
                return (
                    f"note: experiment={name} defines a sweep ({swept}); add -m to run it "
                    "(running one job with its base settings)"
                )
    except Exception:  # a bad name is Hydra's to report
        return None
    return None


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

    from harness.core.errors import closest

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
            elif (Path("conf") / key / f"{value}.yaml").is_file() and not any(
                    a.lstrip("+").startswith("hydra.searchpath=") for a in args):
                return (f"hint: '{value}' is in ./conf/{key}/{value}.yaml, which Hydra reads "
                        "once you add hydra.searchpath=[file://conf]")
            else:
                return f"hint: '{value}' is not a {key} option{closest(value, options)}"
        elif not key.isidentifier() or key in ("experiment_name", "run", "trusted_targets"):
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
