"""Several metric variants in one run: ``metric=[id_ranked,llm_with_reference]``.

Hydra reads a list of options as one node merged from every file (the later wins), which is
no variant at all. The last ``metric=`` override (parsed with Hydra's own parser) decides:
when its value is a list of two or more options, each is composed on its own with the same
overrides but ``metric=<name>``, so it gets exactly the config a single run would (its own
prompt, judge and ``min_grade``). ``metric.KEY=V`` goes to the variants that have ``KEY``.
The first variant's composition is the job's config for everything else.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.config.hints import ComposeError
from harness.core.errors import ConfigError, closest

if TYPE_CHECKING:
    from omegaconf import DictConfig


#: Arguments that add config folders: then an option may come from the user's own files.
_SEARCH_ARGS = ("hydra.searchpath", "--config-dir", "-cd", "--config-path", "-cp")


@dataclass(frozen=True)
class Listed:
    """The variants a command line lists: their names, in order, and which override."""

    names: tuple[str, ...]
    index: int


@dataclass(frozen=True)
class Variants:
    """Each listed variant's own composition, in order (the first is the job's config)."""

    names: tuple[str, ...]
    configs: list[DictConfig]
    #: Each one's options chosen per group, where the composition said (the CLI's).
    choices: list[dict[str, Any]]

    @property
    def choice(self) -> str:
        """The option as tags and run names show it: ``[id_ranked,non_llm]``."""
        return "[" + ",".join(self.names) + "]"


def _parsed(overrides: Sequence[str]) -> list[Any] | None:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        return list(OverridesParser.create().parse_overrides(list(overrides)))
    except Exception:  # noqa: BLE001 - Hydra reports its own syntax errors when it composes
        return None


def _is_metric(override: Any) -> bool:
    return bool(override.key_or_group == "metric" and not override.package
                and not override.is_add() and not override.is_delete())


def metric_options() -> list[str]:
    """The metric options harness ships (``conf/metric/*.yaml``)."""
    from harness.core.trust import CONFIG_DIR

    return sorted(p.stem for p in (Path(CONFIG_DIR) / "metric").glob("*.yaml"))


def listed(overrides: Sequence[str], options: Sequence[str] | None = None) -> Listed | None:
    """The variants the last ``metric=`` override lists, or ``None`` (one variant).

    Args:
        overrides: The job's overrides, as Hydra got them.
        options: The known metric options; a name outside them is an error (``None``: not
            checked, e.g. the user adds config folders).

    Raises:
        ConfigError: A name given twice, or one that is not an option (one line each).
    """
    parsed = _parsed(overrides)
    if not parsed:
        return None
    found = [(i, o) for i, o in enumerate(parsed) if _is_metric(o) and not o.is_sweep_override()]
    if not found:
        return None
    index, override = found[-1]
    value = override.value()
    if not isinstance(value, list):
        return None
    names = tuple(str(v) for v in value)
    check_names(names, options)
    return Listed(names, index)


def check_names(names: Sequence[str], options: Sequence[str] | None) -> None:
    """One ``ConfigError`` line for an empty list, a duplicate or an unknown option."""
    if not names:
        raise ConfigError("metric=[]: no variant listed; name one or more metric options, "
                          f"e.g. metric=[id_ranked,non_llm]{_options(options)}")
    for i, name in enumerate(names):
        if name in names[:i]:
            raise ConfigError(f"metric=[{','.join(names)}]: {name!r} is listed twice; list "
                              "each variant once")
        if options is not None and name not in options:  # as Hydra's for metric=NAME
            raise ComposeError(f"{name!r} is not a metric option{closest(name, options)}"
                               f"{_options(options)}")


def _options(options: Sequence[str] | None) -> str:
    return f"; the options: {', '.join(options)}" if options else ""


def check_command_line(args: Sequence[str]) -> bool:
    """Before Hydra composes (it would merge the list into one node, or fail on a name it
    cannot find with a dozen lines): each list of ``metric=`` (also each list of a sweep,
    ``-m metric=[a,b],[c]``) names known options once each, and every ``metric.KEY``
    override names a key one of the listed variants has. Best effort: the job checks again
    on the real compositions. Returns whether the command line lists variants."""
    if not any(a.lstrip("+~").startswith("metric") for a in args):
        return False  # nothing to check: the parser is not even loaded
    # overrides only: not the flags, nor a flag's value (--cfg job, --config-dir DIR)
    parsed = _parsed([a for a in args if not a.startswith("-") and ("=" in a or a[:1] == "~")])
    if not parsed:
        return False
    own = not any(a.lstrip("+").startswith(_SEARCH_ARGS) for a in args)
    options = metric_options() if own else None
    lists: list[list[str]] = []
    for override in parsed:
        if not _is_metric(override):
            continue
        if override.is_sweep_override():
            values = [v for v in override.sweep_iterator() if isinstance(v, list)]
        else:
            values = [override.value()] if isinstance(override.value(), list) else []
            lists.clear()  # the last plain metric= override decides
        lists.extend([str(x) for x in v] for v in values)
    for names in lists:
        check_names(names, options)
    if own and lists:
        keys = _file_keys({n for names in lists for n in names})
        for override in parsed:
            key = override.key_or_group
            if key.startswith("metric.") and not override.is_add() and not override.package:
                top = key.split(".")[1]
                if top not in keys:
                    raise ComposeError(_unknown_key(key, keys))
    return bool(lists)


def _file_keys(names: set[str]) -> set[str]:
    from omegaconf import OmegaConf

    from harness.core.trust import CONFIG_DIR

    keys: set[str] = set()
    for name in names:
        node = OmegaConf.load(Path(CONFIG_DIR) / "metric" / f"{name}.yaml")
        keys.update(str(k) for k in node if k not in ("defaults", "_target_"))
    return keys


def _unknown_key(key: str, keys: set[str]) -> str:
    part = key.split(".")[1]
    return (f"{key}: no listed variant has the setting {part!r}{closest(part, keys)}; "
            f"they have {', '.join(sorted(keys))}")


def _has(node: Any, path: Sequence[str]) -> bool:
    from omegaconf import DictConfig

    for part in path:
        if not isinstance(node, DictConfig) or part not in node.keys():  # noqa: SIM118
            return False
        node = node._get_node(part)  # no resolution: ${judge} stays a node
    return True


def compose_variants(
    overrides: Sequence[str], compose: Callable[[list[str]], DictConfig],
    options: Sequence[str] | None = None, searched: Sequence[str] = (),
) -> Variants | None:
    """Each listed variant's config, composed by ``compose`` (Hydra's, in the running app;
    ``harness.config.compose.composed`` in the Python API), or ``None`` when the overrides
    list fewer than two variants. ``searched``: ``hydra.searchpath`` overrides added to each
    composition (``search_overrides``): a variant finds the user's config folders.

    Raises:
        ConfigError: A duplicate or unknown name in the list, or a ``metric.KEY`` override
            that no listed variant has (one line, with a did-you-mean).
    """
    found = listed(overrides, options)
    if found is None or len(found.names) < 2:
        return None
    parsed = _parsed(overrides) or []
    base = list(overrides)
    plain, extra = compose, list(searched)
    compose = (lambda given: plain([*given, *extra])) if extra else plain  # noqa: E731
    keyed = [i for i, o in enumerate(parsed) if o.key_or_group.startswith("metric.")
             and not o.package]
    configs: list[DictConfig] = []
    used: set[int] = set()
    seen: set[str] = set()
    for name in found.names:
        chosen = [f"metric={name}" if i == found.index else a for i, a in enumerate(base)]
        if not keyed:
            configs.append(compose(chosen))
            continue
        bare = compose([a for i, a in enumerate(chosen) if i not in keyed])
        seen.update(str(k) for k in bare.metric.keys())  # noqa: SIM118
        mine = {i for i in keyed if parsed[i].is_add() or _has(
            bare.metric, parsed[i].key_or_group.split(".")[1:])}
        used |= mine
        if not mine:
            configs.append(bare)
            continue
        configs.append(compose([a for i, a in enumerate(chosen) if i not in keyed or i in mine]))
    for i in keyed:
        if i not in used:
            raise ConfigError(_unknown_key(parsed[i].key_or_group, seen - {"_target_"}))
    return Variants(found.names, configs, [_choices(cfg) for cfg in configs])


def search_overrides(hydra_overrides: Sequence[Any]) -> list[str]:
    """The ``hydra.searchpath`` overrides among Hydra's own (``hc.overrides.hydra``)."""
    return [str(a) for a in hydra_overrides
            if str(a).lstrip("+~").partition("=")[0] == "hydra.searchpath"]


def _choices(cfg: DictConfig) -> dict[str, Any]:
    """The options Hydra chose (``return_hydra_config``), its node then taken out."""
    from omegaconf import OmegaConf, open_dict

    if "hydra" not in cfg:
        return {}
    choices = OmegaConf.to_container(cfg.hydra.runtime.choices)
    with open_dict(cfg):
        del cfg["hydra"]
    return {str(k): v for k, v in choices.items()} if isinstance(choices, dict) else {}


def variant_choices(variants: Variants, choices: dict[str, str],
                    chosen: dict[str, Any]) -> dict[str, str]:
    """The job's options: ``metric=[a,b]``, and the judge and prompt of the first judged
    variant (a run whose first variant needs no judge still records the judge it asked)."""
    from harness.config.build import uses

    out = {**choices, "metric": variants.choice}
    for cfg, own in zip(variants.configs, variants.choices, strict=True):
        if uses(cfg, "judge"):
            for group in ("judge", "prompt"):
                value = own.get(group, chosen.get(group))
                if value:
                    out[group] = str(value)
            break
    return out


def variant_config(variants: Variants | None, config: dict[str, Any]) -> dict[str, Any]:
    """The job's config, with several variants ``metric`` as ``{variant: its metric node}``."""
    from harness.config.compose import job_config

    if variants is None:
        return config
    out = dict(config)
    out["metric"] = {name: job_config(cfg)["metric"]
                     for name, cfg in zip(variants.names, variants.configs, strict=True)}
    return out
