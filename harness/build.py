"""From a composed config to the parts of a job. ``_target_`` is the only registry.

Only this module, ``runner`` and ``cli`` see a ``DictConfig``; the parts they build get
plain Python values.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from harness.errors import ConfigError, HarnessError, closest
from harness.job import Parts, RunSettings
from harness.protocols import Dataset
from harness.registry import TRUSTED_TARGETS
from harness.validation import check_arguments

#: Metrics every run logs, whatever its metric (``run.objective`` may name one).
RUN_METRICS = ("mean", "n_samples", "n_scored", "n_unscored", "duration_s", "success_rate", "mrr")


def settings(cfg: DictConfig) -> RunSettings:
    """Read the ``run`` block; unknown keys get a did-you-mean."""
    run = cfg.get("run")
    values = dict(OmegaConf.to_container(run, resolve=True)) if run is not None else {}  # type: ignore[arg-type]
    check_arguments("run", RunSettings, values)
    return RunSettings(**{str(k): v for k, v in values.items()})


def check_missing(cfg: DictConfig, group: str) -> None:
    """Raise ``ConfigError`` naming the settings of ``group`` left as ``???``."""
    missing = sorted(OmegaConf.missing_keys(cfg[group]))
    if missing:
        raise ConfigError(
            f"{group}: no value for {', '.join(missing)}; "
            f"set it on the command line, e.g. {missing[0]}=..."
        )


def instantiate(cfg: DictConfig, group: str) -> Any:
    """Build the object the config group names with ``_target_``.

    Every ``_target_`` node in it is checked against its constructor first (unknown keys
    with a did-you-mean, values of the wrong type), so a typo costs no work.
    """
    from hydra.errors import InstantiationException
    from hydra.utils import execution_whitelist, get_method
    from hydra.utils import instantiate as hydra_instantiate
    from omegaconf.errors import OmegaConfBaseException

    check_missing(cfg, group)
    try:
        node = OmegaConf.to_container(cfg[group], resolve=True)
    except OmegaConfBaseException as e:
        raise ConfigError(f"{group}: {str(e).splitlines()[0]}") from None
    if isinstance(node, dict) and "_target_" in node:
        try:
            target = get_method(node["_target_"])
        except Exception as e:
            raise ConfigError(
                f"{group}._target_: cannot import {node['_target_']!r} ({e})"
            ) from None
        check_arguments(group, target, {str(k): v for k, v in node.items()})
    try:
        with execution_whitelist(TRUSTED_TARGETS):
            return hydra_instantiate(cfg[group], _convert_="all")
    except HarnessError as e:
        raise _named(e, group) from None
    except InstantiationException as e:
        cause = e.__cause__
        if isinstance(cause, HarnessError):
            raise _named(cause, group) from None
        lines = [x for x in str(cause or e).strip().splitlines() if not x.startswith("full_key:")]
        raise ConfigError(f"{group}: {lines[-1] if lines else e}") from None
    except TypeError as e:
        raise ConfigError(f"{group}: {str(e).splitlines()[0]}") from None


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


def build(cfg: DictConfig, dataset: Dataset | None = None) -> Parts:
    """Instantiate each group; check everything that can fail before any work.

    Args:
        cfg: The composed config.
        dataset: Use this dataset instead of the ``dataset`` group (the Python API).
    """
    run_settings = settings(cfg)
    for group in ("judge", "prompt"):
        if uses(cfg, group):
            check_missing(cfg, group)
    check_objective(run_settings)
    task = instantiate(cfg, "task") if "task" in cfg else _default_task()
    if dataset is None:
        dataset = instantiate(cfg, "dataset")
    assert dataset is not None
    dataset.check()
    retriever = instantiate(cfg, "retriever")
    metric = instantiate(cfg, "metric")
    tracker = instantiate(cfg, "tracking")
    return Parts(task, dataset, retriever, metric, tracker, run_settings)


def _default_task() -> Any:
    from harness.tasks.evaluate import Evaluate

    return Evaluate()


def check_objective(run: RunSettings) -> None:
    """``run.objective`` must name a metric a run logs (its value may still be missing,
    e.g. a mean when nothing was scored: the job then returns NaN, a failed trial)."""
    names = set(RUN_METRICS)
    for k in run.retrieval_ks:
        names |= {f"recall_at_{k}", f"ndcg_at_{k}"}
    objective = run.objective
    if objective not in names and not objective.startswith("judge/"):
        raise ConfigError(
            f"run.objective: {objective!r} is not a metric a run logs{closest(objective, names)}; "
            f"choose one of {', '.join(sorted(names))} or judge/<counter>"
        )
