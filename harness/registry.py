"""Where the one registry lives: the config folder, and what its ``_target_`` may name."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from harness.errors import ConfigError, closest

#: Absolute, because Hydra resolves a relative config_path against the module of the
#: task function, which breaks under ``python -m``.
CONFIG_DIR = str(Path(__file__).resolve().parents[1] / "conf")

TRUSTED_TARGETS: tuple[str, ...] = (
    "harness.datasets.beir.BeirDataset",
    "harness.datasets.files.CsvDataset",
    "harness.datasets.files.JsonlDataset",
    "harness.datasets.json_doc.JsonDataset",
    "harness.datasets.files.ParquetDataset",
    "harness.datasets.files.SampleDataset",
    "harness.retrievers.bm25.BM25",
    "harness.retrievers.dense.Dense",
    "harness.retrievers.hybrid.Hybrid",
    "harness.retrievers.precomputed.Precomputed",
    "harness.metrics.id_based.IdContextPrecision",
    "harness.metrics.string_similarity.StringContextPrecision",
    "harness.metrics.llm.LLMContextPrecision",
    "harness.metrics.listwise.ContextualPrecision",
    "harness.judges.openai_chat.OpenAIJudge",
    "harness.prompts.template.PromptTemplate",
    "harness.prompts.template.PromptFile",
    "harness.tasks.evaluate.Evaluate",
    "harness.tasks.agreement.JudgeAgreement",
    "harness.tracking.base.NullTracker",
    "harness.tracking.mlflow.MlflowTracker",
    "harness.tracking.callbacks.SweepTracking",  # the Hydra callbacks of conf/config.yaml
    "harness.guard.RunGuard",
)
"""What a config ``_target_`` may name: the harness's component classes, by exact path.

The rule: a component class, i.e. a class that ``conf/`` names as the ``_target_`` of a
config group option (a dataset, retriever, metric, judge, prompt, task or tracker), plus
the Hydra callbacks ``conf/config.yaml`` installs. Never a function (``harness.cache.main``
wipes the cache) and never a helper class (``harness.judges.cache.VerdictCache`` opens a
file where it is told), so a config cannot make the harness call arbitrary code. This
tuple is the one place the rule lives: a new component adds its class path here.

It is enforced twice: every ``_target_`` string of a config group is checked against this
list before anything is imported (``check_targets``, ``check_target``), and Hydra applies it
again as its execution whitelist when it instantiates (``hydra.utils.execution_whitelist``,
and ``@hydra.main(execution_whitelist=...)`` for its callbacks).
"""


def trusted(where: str, target: Any) -> str:
    """``target`` if it is on ``TRUSTED_TARGETS``, else a one-line ``ConfigError``.

    A check of the string alone: nothing is imported.
    """
    if isinstance(target, str) and target in TRUSTED_TARGETS:
        return target
    hint = closest(target, TRUSTED_TARGETS) if isinstance(target, str) else ""
    raise ConfigError(
        f"{where}._target_: {target!r} is not a harness component{hint}; a config may only "
        "name the component classes in harness.registry.TRUSTED_TARGETS"
    )


def check_targets(where: str, node: Any) -> None:
    """Refuse any ``_target_`` in ``node``, at any depth, that is not on the allow-list;
    nothing is imported."""
    if isinstance(node, Mapping):
        if "_target_" in node:
            trusted(where, node["_target_"])
        for key, value in node.items():
            if key != "_target_":
                check_targets(f"{where}.{key}", value)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            check_targets(f"{where}.{i}", value)


def check_target(where: str, target: Any) -> Callable[..., Any]:
    """The component class a ``_target_`` names: checked on the allow-list, then imported."""
    from hydra.utils import get_method

    name = trusted(where, target)
    try:
        found: Callable[..., Any] = get_method(name)
    except Exception as e:
        raise ConfigError(f"{where}._target_: cannot import {name!r} ({e})") from None
    if not inspect.isclass(found):
        raise ConfigError(f"{where}._target_: {name!r} is not a component class")
    return found
