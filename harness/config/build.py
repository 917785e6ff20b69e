"""From a composed config to the parts of a job. ``_target_`` is the only registry.

The one builder, and the one place a run learns what it can before any work: every setting
checked against its constructor, each part checked against its role (``conform``: what it
lacks is refused, its optional members get their defaults), the objectives and gates named,
and the human labels read, matched to the dataset and their interval's library found. After
``build`` nothing reads the dataset's index, starts an MLflow run or sends a judge request
that a refusal here could have saved.

Only this module, ``runner`` and ``cli`` see a ``DictConfig``; the parts they build get
plain Python values.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from harness.core.capabilities import conform
from harness.core.errors import ConfigError, HarnessError, closest
from harness.core.protocols import DATASET, METRIC, Dataset, Metric, Parts
from harness.core.resolve import user_code
from harness.core.settings import RunSettings
from harness.core.trust import (
    check_target,
    check_targets,
    is_component,
    trust_patterns,
    trusting,
    whitelist,
)
from harness.core.validation import check_arguments, prechecked
from harness.retrievers.custom import conforming

if TYPE_CHECKING:
    from harness.metrics.panel import Panel


def settings(cfg: DictConfig) -> RunSettings:
    """Read the ``run`` block; unknown keys get a did-you-mean, bad values their range."""
    run = cfg.get("run")
    if run is None:
        return RunSettings()
    values = {str(k): v for k, v in _container(run, "run").items()}
    if "_target_" in values:
        raise ConfigError("run._target_: not a setting; run takes settings, not a component")
    check_arguments("run", RunSettings, values)
    with prechecked():  # checked once, above
        return RunSettings(**values)


def check_missing(cfg: DictConfig, group: str) -> None:
    """Raise ``ConfigError`` naming the settings of ``group`` left as ``???``."""
    node = cfg[group]
    if not OmegaConf.is_config(node):
        return
    missing = sorted(OmegaConf.missing_keys(node))
    if missing:
        raise ConfigError(
            f"{group}: no value for {', '.join(missing)}; "
            f"set it on the command line, e.g. {missing[0]}=..."
        )


def instantiate(cfg: DictConfig, group: str) -> Any:
    """Build the object the config group names with ``_target_``.

    Every ``_target_`` in it must be one of harness's own components (derived from
    ``conf/``) or admitted by the user's ``trusted_targets`` (checked before anything is
    imported), and every node is checked against its constructor (unknown keys with a
    did-you-mean, values of the wrong type or out of range) before any is built, so a typo
    costs no work.
    """
    from hydra.errors import InstantiationException
    from hydra.utils import execution_whitelist
    from hydra.utils import instantiate as hydra_instantiate

    check_missing(cfg, group)
    node = {str(k): v for k, v in _container(cfg[group], group).items()}
    if "_target_" not in node:
        raise ConfigError(
            f"{group}: expected a component (a mapping with _target_); "
            f"choose an option of the {group} group"
        )
    with trusting(trust_patterns(_trust_setting(cfg))):
        check_targets(group, node)  # every _target_ trusted before any import
        groups = {str(k) for k in cfg}
        check_arguments(group, check_target(group, node["_target_"]), node, groups)
        target = node["_target_"]
        guard = contextlib.nullcontext() if is_component(target) else user_code(
            f"{group}._target_", f"building {target}")
        try:
            with execution_whitelist(whitelist()), guard, prechecked():  # checked once, above
                return hydra_instantiate(cfg[group], _convert_="all")
        except HarnessError as e:
            raise _named(e, group) from None
        except InstantiationException as e:
            cause = e.__cause__
            if isinstance(cause, HarnessError):
                raise _named(cause, group) from None
            lines = [x for x in str(cause or e).strip().splitlines()
                     if not x.startswith("full_key:")]
            raise ConfigError(f"{group}: {lines[-1] if lines else e}") from None
        except TypeError as e:
            raise ConfigError(f"{group}: {str(e).splitlines()[0]}") from None


def _trust_setting(cfg: DictConfig) -> Any:
    """The ``trusted_targets`` setting, as plain values (``None`` when absent)."""
    value = cfg.get("trusted_targets")
    return OmegaConf.to_container(value) if OmegaConf.is_config(value) else value


def _container(node: Any, where: str) -> dict[Any, Any]:
    """A config node as a resolved plain dict; ``ConfigError`` if it is not a mapping."""
    from omegaconf.errors import OmegaConfBaseException

    if not isinstance(node, DictConfig):
        raise ConfigError(f"{where}: expected a mapping of settings, got {node!r}")
    try:
        value = OmegaConf.to_container(node, resolve=True)
    except OmegaConfBaseException as e:
        raise ConfigError(f"{where}: {str(e).splitlines()[0]}") from None
    assert isinstance(value, dict)
    return value


def _named(error: HarnessError, group: str) -> HarnessError:
    """Name a nested part's error by its path (``retriever.retrievers.bm25.b``): a part
    says ``retriever.b``, and Hydra notes where the part sits (``full_key: ...``)."""
    notes = [n for n in getattr(error, "__notes__", ()) if n.startswith("full_key: ")]
    where = notes[0].removeprefix("full_key: ") if notes else group
    message = str(error)
    if isinstance(error, ConfigError) and where != group and message.startswith(group + "."):
        return ConfigError(where + message[len(group) :])
    return error


def uses(cfg: DictConfig, group: str) -> bool:
    """Whether the chosen metric interpolates ``group`` (the judge and prompt groups)."""
    return group in cfg and "metric" in cfg and group in cfg.metric


def build(cfg: DictConfig | Mapping[str, Any], dataset: Dataset | None = None,
          variants: Sequence[str] = (), members: Sequence[DictConfig] = ()) -> Parts:
    """The one builder: instantiate each group into frozen parts; check everything that can
    fail before any work.

    Args:
        cfg: The composed config, or a plain mapping of the groups (a shard's worker; no
            ``tracking``: not tracked).
        dataset: Use this dataset instead of the ``dataset`` group (the Python API).
        variants: The variants of a run of several (``metric=[a,b]``): the metric is a
            ``Panel`` of them, and ``run.objective`` and ``run.fail_under`` may name
            ``<variant>/mean`` and the like of these.
        members: Each variant's own composition (its prompt, judge, ``min_grade``), the first
            ``cfg`` itself; default: ``cfg`` with ``metric`` as each one's node (``metric``
            maps each name to its settings: a worker's mapping).
    """
    if not isinstance(cfg, DictConfig):
        cfg = OmegaConf.create(dict(cfg))
    run_settings = settings(cfg)
    for group in ("judge", "prompt"):
        if uses(cfg, group):
            check_missing(cfg, group)
    check_objective(run_settings, variants)
    from harness.run.gates import check_fail_under

    check_fail_under(run_settings, variants)
    task = instantiate(cfg, "task") if "task" in cfg else _default_task()
    if dataset is None:
        dataset = instantiate(cfg, "dataset")
    assert dataset is not None
    dataset = conform(dataset, DATASET, f"dataset {_named_by(cfg, 'dataset', dataset)}")
    dataset.check()
    if run_settings.strata is not None:
        from harness.run.strata import stratify

        stratify(dataset, run_settings.strata, _named_by(cfg, "dataset", dataset))
    retriever = conforming(instantiate(cfg, "retriever"), str(cfg.retriever.get("_target_")))
    if variants:
        panel = _panel(cfg, variants, members)
        metric: Metric = conform(panel, METRIC, "metric")
        named = tuple(zip(variants, panel.members, strict=True))
    else:
        metric = _member(cfg)
        named = ((metric.name, metric),)
    if "tracking" in cfg:
        tracker = instantiate(cfg, "tracking")
    else:
        from harness.tracking.null import NullTracker

        tracker = NullTracker()
    size = run_settings.batch_size or metric.batch_size or DEFAULT_BATCH
    parts = Parts(task, dataset, retriever, metric, tracker, run_settings, named, size)
    from harness.run.confidence import human_labels

    return replace(parts, labels=human_labels(parts))  # read and checked before any work


#: Samples a batch when neither ``run.batch_size`` nor the metric says (judged metrics: the
#: calls one batch may have in flight together).
DEFAULT_BATCH = 1024


def _named_by(cfg: DictConfig, group: str, part: object) -> str:
    """How a line names a built part: its ``_target_``, else its class's import path."""
    node = cfg.get(group)
    target = node.get("_target_") if isinstance(node, DictConfig) else None
    cls = type(part)
    return str(target) if target else f"{cls.__module__}.{cls.__qualname__}"


def _panel(cfg: DictConfig, variants: Sequence[str], members: Sequence[DictConfig]) -> Panel:
    """A ``Panel`` of the listed variants, each built from its own config (all of them
    closed if one cannot be built)."""
    from functools import partial

    from harness.metrics.panel import Panel

    if not members:  # a worker's mapping: ``metric`` holds each variant's node
        plain = OmegaConf.to_container(cfg, resolve=False)
        assert isinstance(plain, dict)
        members = [OmegaConf.create({**plain, "metric": plain["metric"][name]})
                   for name in variants]
    return Panel.built([partial(_member, own) for own in members], variants)


def _member(own: DictConfig) -> Metric:
    """One variant's metric, its judge and prompt settings checked first, and the metric
    checked against its role (``conform``: a member it lacks is named before any work)."""
    for group in ("judge", "prompt"):
        if uses(own, group):
            check_missing(own, group)
    built = instantiate(own, "metric")
    metric: Metric = conform(built, METRIC, f"metric {_named_by(own, 'metric', built)}")
    return metric


def _default_task() -> Any:
    from harness.tasks.evaluate import Evaluate

    return Evaluate()


def check_objective(run: RunSettings, variants: Sequence[str] = ()) -> None:
    """Each name in ``run.objective`` must be a metric a run logs (its value may still be
    missing, e.g. a mean when nothing was scored: the job then returns NaN, a failed
    trial): the run's metrics, each listed variant's (``<variant>/mean``), the retrieval
    metrics at ``run.retrieval_ks``, the timing metrics, ``judge/<counter>`` or
    ``retriever/<name>`` (the catalogue ``harness.core.metric_names``, as the gates)."""
    from harness.core.metric_names import is_logged, logged_names
    from harness.core.objectives import parse

    names = set(logged_names(run.retrieval_ks, variants))
    for objective in parse(run.objective):
        name = objective.name
        if not is_logged(name, run.retrieval_ks, variants):
            raise ConfigError(
                f"run.objective: {name!r} is not a metric a run logs{closest(name, names)}; "
                f"choose one of {', '.join(sorted(names))}, judge/<counter> or "
                "retriever/<name> (a leading - minimises)"
            )
