"""Did-you-mean hints for a command line Hydra could not compose, and notes on one it can."""

from __future__ import annotations

from pathlib import Path

from harness.core.errors import ConfigError
from harness.core.trust import CONFIG_DIR


class ComposeError(ConfigError):
    """The command line cannot be composed: an unknown option of a group, an override Hydra's
    grammar cannot read. Exit 1, as Hydra's own composition errors, led by a did-you-mean."""


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
        if key.startswith("+") and key[1:] in groups:  # Hydra: "Multiple values for ..."
            return (f"hint: '{arg}': {key[1:]} is in the config's defaults already ('+' "
                    f"adds a group it lacks); write {arg[1:]}")
        if key.startswith(("+", "~", "hydra")):
            continue
        (picks if "." not in key and "/" not in key else keys).append(arg)
    valid_picks = []
    folders = [conf, *_user_folders(args)]
    for arg in picks:
        key, value = arg.split("=", 1)
        if key in groups:
            options = sorted({f.stem for d in folders for f in (d / key).glob("*.yaml")})
            names = _list_items(value)
            unknown = [n for n in names if n not in options]
            if not unknown or ("," in value and not value.startswith("[")):
                valid_picks.append(arg)
                continue
            value = unknown[0]
            if (Path("conf") / key / f"{value}.yaml").is_file() and len(folders) == 1:
                return (f"hint: '{value}' is in ./conf/{key}/{value}.yaml, which Hydra reads "
                        "once you add hydra.searchpath=[file://conf]")
            article = "an" if key[:1] in "aeiou" else "a"
            return f"hint: '{value}' is not {article} {key} option{closest(value, options)}"
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
            if node[part] is None and i + 1 < len(path):  # run.fail_under.KEY: null has no keys
                name, rest = ".".join(path[: i + 1]), ".".join(path[i + 1:])
                value = arg.split("=", 1)[1]
                return (f"hint: '{name}' is null, so it has no setting '{rest}'; set it "
                        f"whole: '{name}={{{rest}: {value}}}'")
            node = node[part]
    return None


def _list_items(value: str) -> list[str]:
    """The names of a list value (``[a,b]``), or the value itself."""
    inner = value.strip()
    if inner.startswith("[") and inner.endswith("]"):
        return [x.strip().strip("'\"") for x in inner[1:-1].split(",") if x.strip()]
    return [inner]


def _user_folders(args: list[str]) -> list[Path]:
    """The config folders the command line adds (``hydra.searchpath=[file://DIR]``,
    ``--config-dir DIR``): their options are options too."""
    out = []
    for i, arg in enumerate(args):
        key, sep, value = arg.partition("=")
        if sep and key.lstrip("+") == "hydra.searchpath":
            out += [Path(x.removeprefix("file://")) for x in _list_items(value)
                    if x.startswith("file://")]
        elif key in ("--config-dir", "-cd") and sep:
            out.append(Path(value))
        elif arg in ("--config-dir", "-cd") and i + 1 < len(args):
            out.append(Path(args[i + 1]))
    return out
