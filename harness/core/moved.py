"""Modules that moved in 0.2.0 (the package's rooms, CHANGELOG "Deprecated"): their old import
paths keep working until 0.3.0, for code, ``_target_`` paths in YAML, ``trusted_targets`` and
``python -m``.

``import harness`` installs a finder (``harness.core.old_paths``) that answers an old name
with the module at its new place (the same module object, so classes compare equal), after a
``DeprecationWarning``; ``python -m harness.cache`` runs ``harness.cli.cache``. No file is
left at the old place.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import warnings
from types import CodeType, ModuleType

#: The release that drops the old paths.
UNTIL = "0.3.0"

#: Old module path -> its new place.
MOVED: dict[str, str] = {
    "harness.errors": "harness.core.errors",
    "harness.types": "harness.core.types",
    "harness.protocols": "harness.core.protocols",
    "harness.job": "harness.core.settings",
    "harness.validation": "harness.core.validation",
    "harness.redact": "harness.core.redact",
    "harness.cli_secrets": "harness.core.secrets",
    "harness.aio": "harness.core.aio",
    "harness.text": "harness.core.text",
    "harness.objectives": "harness.core.objectives",
    "harness.registry": "harness.core.trust",
    "harness.datasets.beir_files": "harness.datasets.beir.files",
    "harness.datasets.spans": "harness.shards.plan",
    "harness.retrievers.base": "harness.retrievers.corpus",
    "harness.retrievers.boundary": "harness.core.boundary",
    "harness.retrievers.ann": "harness.retrievers.dense.ann",
    "harness.retrievers.encoder": "harness.retrievers.dense.encoder",
    "harness.retrievers.chroma_client": "harness.retrievers.chroma.client",
    "harness.retrievers.factory": "harness.retrievers.adapters.factory",
    "harness.retrievers.langchain": "harness.retrievers.adapters.langchain",
    "harness.retrievers.llamaindex": "harness.retrievers.adapters.llamaindex",
    "harness.metrics.string_similarity": "harness.metrics.non_llm",
    "harness.metrics.listwise": "harness.metrics.contextual_precision",
    "harness.judges.sending": "harness.judges.transport.sending",
    "harness.judges.pacing": "harness.judges.transport.pacing",
    "harness.judges.reply": "harness.judges.replies.read",
    "harness.judges.parse": "harness.judges.replies.parse",
    "harness.judges.schemas": "harness.judges.replies.schemas",
    "harness.judges.failures": "harness.judges.replies.failures",
    "harness.judges.cache_pg": "harness.judges.cache.postgres",
    "harness.judges.cache_pg_schema": "harness.judges.cache.schema",
    "harness.judges.cached": "harness.judges.cache.lookup",
    "harness.tracking.base": "harness.tracking.null",
    "harness.tracking.store": "harness.tracking.mlflow.store",
    "harness.tracking.worker": "harness.tracking.mlflow.worker",
    "harness.tracking.server": "harness.tracking.mlflow.server",
    "harness.tracking.table": "harness.tracking.mlflow.table",
    "harness.tracking.summary": "harness.report.console",
    "harness.tracking.callbacks": "harness.cli.sweep_tracking",
    "harness.evaluation": "harness.run.loop",
    "harness.record": "harness.run.record",
    "harness.gates": "harness.run.gates",
    "harness.timing": "harness.run.timing",
    "harness.outputs": "harness.run.outputs",
    "harness.report.sampling": "harness.run.sampling",
    "harness.plots": "harness.report.plots",
    "harness.guard": "harness.cli.guard",
    "harness.agreement": "harness.tasks.agreement.stats",
    "harness.build": "harness.config.build",
    "harness.hints": "harness.config.hints",
    "harness.shards_merge": "harness.shards.merge",
    "harness.shards_procs": "harness.shards.processes",
    "harness.shards_ray": "harness.shards.ray",
    "harness.shards_worker": "harness.shards.worker",
    "harness.runner": "harness.cli.job",
    "harness.ray_check": "harness.cli.ray_check",
    "harness.cache": "harness.cli.cache",
    "harness.compare.cli": "harness.cli.compare",
    "harness.report.cli": "harness.cli.report",
}


def new_path(dotted: str) -> str | None:
    """Where an old ``module.Name`` (or module) lives now; ``None`` when it did not move."""
    module, _, name = dotted.rpartition(".")
    if dotted in MOVED:
        return MOVED[dotted]
    if module in MOVED:
        return f"{MOVED[module]}.{name}"
    return None


def note(old: str, new: str) -> str:
    """The deprecation line for an old path."""
    return f"{old} moved to {new} in harness 0.2.0; the old path works until {UNTIL}"


class _Alias(importlib.abc.Loader):
    """Loads an old name as the module at its new place (``get_code``: for ``python -m``)."""

    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(note(spec.name, self.new), DeprecationWarning, stacklevel=2)
        return importlib.import_module(self.new)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module at the new place ran when it was imported."""

    def get_code(self, fullname: str) -> CodeType | None:
        spec = importlib.util.find_spec(self.new)
        loader = spec.loader if spec is not None else None
        if not isinstance(loader, importlib.abc.InspectLoader):
            return None
        return loader.get_code(self.new)


def spec(fullname: str) -> importlib.machinery.ModuleSpec | None:
    """The spec that loads old path ``fullname`` as the module at its new place; ``None``
    when it did not move (asked by ``harness.core.old_paths``, the finder ``import harness``
    installs)."""
    new = MOVED.get(fullname)
    if new is None:
        return None
    return importlib.util.spec_from_loader(fullname, _Alias(new))
