"""The Python API: ``from harness import evaluate``, and the one runner every way in calls.

``run_job`` runs a job: it builds the parts (``harness.config.build.build``, the one
builder), shards the task or not, runs it, closes the parts and returns the result. The
command line (``harness.cli.job``), ``evaluate`` and the pytest helpers (``harness.testing``)
all call it. ``evaluate`` composes the same Hydra config as the CLI (the metric chosen by
its option name, any override in CLI syntax); only the samples come from memory and nothing
is written unless asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from harness.config.variants import Variants
    from harness.core.protocols import Dataset, Parts
    from harness.core.settings import JobValue
    from harness.core.summary import Summary


@dataclass
class EvaluationResult:
    """What ``evaluate`` returns: one row per sample (as in ``samples.jsonl``) and the
    summary (as in ``summary.json``)."""

    summary: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def scores(self) -> list[float | None]:
        """Per-sample scores in input order (``None``: unscored, see the row's ``error``)."""
        return [r["score"] for r in self.rows]

    @property
    def mean(self) -> float | None:
        """The mean over scored samples (with human labels: the judge's mean alone)."""
        mean: float | None = self.summary["mean"]
        return mean

    @property
    def headline(self) -> float | None:
        """The number to report (``summary.json``'s ``headline``): with human labels the
        PPI++ mean, else the mean."""
        value: float | None = (self.summary.get("headline") or {}).get("value", self.mean)
        return value


@dataclass(frozen=True)
class Place:
    """Where a job writes and what it is called (``harness.core.settings.Job``'s fields
    but its config and builder)."""

    #: The job's folder; ``None``: a temporary one, removed once its rows are read.
    out_dir: Path | None = None
    choices: Mapping[str, str] = field(default_factory=dict)
    run_name: str = "default"
    overrides: str = ""
    sweep_dir: str | None = None
    job_num: int | None = None


@dataclass(frozen=True)
class JobResult:
    """What ``run_job`` returns: the summary, ``run.objective``'s value and, when asked,
    the rows of ``samples.jsonl``."""

    summary: Summary
    value: JobValue
    rows: list[dict[str, Any]] | None = None


def run_job(
    cfg: DictConfig,
    variants: Variants | None = None,
    *,
    place: Place | Callable[[DictConfig, Parts], Place],
    dataset: Dataset | None = None,
    refuse_shards: str | None = None,
    rows: bool = False,
) -> JobResult:
    """The one runner: build, shard or not, run, close, result.

    Args:
        cfg: The composed config; with several variants the first one's composition is the
            job's config instead (``variants.configs[0]``).
        variants: Several metric variants in one run (``metric=[a,b]``), each composed on
            its own (``harness.config.variants.compose_variants``).
        place: Where the job writes and what it is called, or how to tell from the job's
            config and its built parts (the command line's options depend on the task).
        dataset: Use this dataset instead of the ``dataset`` group (the Python API).
        refuse_shards: With ``run.shards`` > 1: ``None`` shards the task
            (``harness.shards``); a line refuses the run with it (``ConfigError``).
        rows: Read ``samples.jsonl`` back into the result.
    """
    from harness.config.build import build, instantiate
    from harness.config.compose import job_config
    from harness.config.variants import variant_config
    from harness.core.errors import ConfigError
    from harness.core.settings import Job

    if variants is not None:
        cfg = variants.configs[0]
    names, members = (variants.names, variants.configs) if variants else ((), ())
    parts = build(cfg, dataset, names, members)
    try:
        if parts.settings.shards > 1:  # one evaluation, scored by workers (harness.shards)
            if refuse_shards is not None:
                raise ConfigError(refuse_shards)
            from harness.shards import sharded

            parts = replace(parts, task=sharded(parts.task))
        config = variant_config(variants, job_config(cfg))
        where = place(cfg, parts) if callable(place) else place
        with _folder(where.out_dir) as out_dir:
            job = Job(config, out_dir, dict(where.choices), where.run_name, where.overrides,
                      where.sweep_dir, where.job_num, build=lambda group: instantiate(cfg, group))
            summary, value = parts.task.run(parts, job)
            if not rows or parts.settings.dry_run:  # a dry run writes no rows
                return JobResult(summary, value)
            text = (out_dir / "samples.jsonl").read_text("utf-8")
            return JobResult(summary, value, [json.loads(line) for line in text.splitlines()])
    finally:
        parts.close()


@contextlib.contextmanager
def _folder(out_dir: Path | None) -> Iterator[Path]:
    """``out_dir``, made if missing; ``None``: a temporary folder, removed afterwards."""
    import tempfile

    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        yield out_dir
        return
    with tempfile.TemporaryDirectory(prefix="harness-") as tmp:
        yield Path(tmp)


def run_in_process(
    args: Sequence[str], metric: str, choices: Mapping[str, str], label: str, *,
    refuse_shards: str, out_dir: Path | None = None,
    dataset: Callable[[], Dataset] | None = None,
) -> EvaluationResult:
    """The job ``python -m harness ARGS`` would run, in this process (``evaluate`` and the
    pytest helpers): composed as the CLI composes it (each listed variant on its own),
    run by ``run_job``, the rows read back.

    Args:
        args: The overrides, ``metric=`` among them.
        metric: The chosen option as tags and run names show it (several: the list's).
        choices: The options to record (``metric`` is set to the chosen one).
        label: The run name's first word (``api``, ``test``).
        refuse_shards: The line refusing ``run.shards`` > 1.
        out_dir: Keep the outputs here; default: a temporary folder.
        dataset: Makes the dataset to use instead of the ``dataset`` group (once the
            config composed: a bad override is told first).
    """
    from harness.config.compose import composed
    from harness.config.variants import compose_variants, metric_options

    variants = compose_variants(list(args), composed, metric_options())
    if variants is not None:
        metric = variants.choice
    cfg = composed(list(args)) if variants is None else variants.configs[0]
    place = Place(out_dir, {**choices, "metric": metric}, f"{label} metric={metric}")
    done = run_job(cfg, variants, place=place, dataset=None if dataset is None else dataset(),
                   refuse_shards=refuse_shards, rows=True)
    return EvaluationResult(done.summary.as_json(), done.rows or [])


def evaluate(
    samples: Sequence[Any],
    metric: str | Sequence[str] = "id_based",
    *,
    overrides: Sequence[str] = (),
    fields: Mapping[str, str] | None = None,
    mlflow: bool = False,
    output_dir: str | Path | None = None,
) -> EvaluationResult:
    """Score ``samples`` with a metric variant, as ``python -m harness metric=NAME`` would.

    Args:
        samples: Dicts (or objects with ``model_dump``/``to_dict``) with ragas field names
            (``user_input``, ``retrieved_contexts``, ``reference``...), ragas's legacy
            names (``question``, ``contexts``, ``answer``, ``ground_truth``) or deepeval
            ``LLMTestCase`` names (``input``, ``actual_output``, ``expected_output``,
            ``retrieval_context``).
        metric: The option name: ``id_based``, ``id_ranked``, ``non_llm``,
            ``llm_with_reference``, ``llm_without_reference``, ``contextual_precision``;
            or a list of them (``["id_ranked", "non_llm"]``, or ``"[id_ranked,non_llm]"``):
            every one scored on the same samples, the first the headline (``mean``,
            ``scores``), each one's numbers in ``summary["variants"]`` and each row's
            ``variants``.
        overrides: Any other setting in CLI syntax, e.g. ``["metric.threshold=0.7",
            "judge=local", "judge.base_url=http://localhost:8000/v1", "judge.model=M"]``.
        fields: Harness field -> key in your records, where they differ.
        mlflow: Log the run to MLflow (the ``tracking`` group: ``$MLFLOW_TRACKING_URI`` or
            ``sqlite:///mlflow.db``; ``experiment_name=...`` in ``overrides``).
        output_dir: Keep ``samples.jsonl``, ``summary.json`` (and plots) here; default: a
            temporary folder, removed afterwards.

    Returns:
        The rows and the summary. Raises ``harness.core.errors.HarnessError`` on bad input;
        ``harness.core.errors.ConfigError`` (led by a did-you-mean hint) for overrides Hydra
        cannot compose.
    """
    from harness.config.compose import caller_overrides
    from harness.datasets.memory import RecordsDataset

    metric = metric_choice(metric)
    tracking = "tracking=mlflow" if mlflow else "tracking=none"
    args = [f"metric={metric}", tracking, "run.quiet=true", "run.progress=false",
            "run.report=false", *caller_overrides(overrides)]
    return run_in_process(
        args, metric, {"dataset": "records", "retriever": "precomputed", "metric": metric,
                       "tracking": tracking.split("=")[1]}, "api",
        out_dir=None if output_dir is None else Path(output_dir),
        dataset=lambda: RecordsDataset(samples, fields),
        refuse_shards="run.shards: the Python API scores samples in this process; shard a "
                      "big dataset file from the command line (python -m harness "
                      "run.shards=N dataset=jsonl dataset.path=FILE)")


def metric_choice(metric: str | Sequence[str]) -> str:
    """A variant's name as given, or a list of them as ``metric=`` takes it: ``[a,b]``."""
    if isinstance(metric, str):
        return metric
    return "[" + ",".join(str(m) for m in metric) + "]"


async def aevaluate(
    samples: Sequence[Any], metric: str | Sequence[str] = "id_based", **kwargs: Any
) -> EvaluationResult:
    """``evaluate`` for async code: runs in a worker thread, never blocking the loop."""
    return await asyncio.to_thread(evaluate, samples, metric, **kwargs)
