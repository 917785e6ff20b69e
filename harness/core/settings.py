"""What one job is made of: its settings, and where its outputs go (its built parts are
``harness.core.protocols.Parts``).

The runner builds these from the composed config (``harness.config.build``); below it, nothing
sees a ``DictConfig``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from harness.core.validation import Range, check_call

#: What a job returns to a sweeper: ``run.objective``'s value, one per objective.
JobValue = float | tuple[float, ...]


@dataclass(frozen=True)
class RunSettings:
    """The ``run`` block of the config.

    Args:
        seed: Random seed for anything sampled (recorded for replay).
        limit: Score only the first N samples (smoke runs); null for all.
        batch_size: Samples scored per batch (memory stays flat on any file size); null
            (the default): the metric's own ``batch_size`` if it has one (the id variants:
            128, a batch that stays in the CPU's cache), else 1024.
        max_unscored_frac: Fail the run (exit code 3, outputs still written) when more
            than this fraction of samples is unscored (0.5 by default: a mean over fewer
            than half the samples does not describe the dataset); 1: no limit (null: only a run
            with nothing scored fails).
        progress: Show a progress bar on stderr for work longer than a second.
        quiet: Print nothing but errors (for CI logs).
        objective: The logged metric a job returns to a sweeper and a sweep's parent run
            ranks children by: ``headline`` (the default: the run's headline, its PPI++
            mean ``ppi_mean`` with ``run.human_labels``, else ``mean``), ``mean``, or e.g.
            ``ndcg_at_10`` (maximised); ``-name`` minimises (``-retrieval_p95_ms``); a list
            (``[ndcg_at_10,-retrieval_p95_ms]``) makes a multi-objective study, ranked by
            the first, with a Pareto front.
        retrieval_ks: Cut-offs of the retrieval metrics logged beside context precision
            (``recall_at_<k>``, ``ndcg_at_<k>``, plus ``mrr``) for samples with reference ids;
            ``[]`` turns them off.
        retrieval_min_grade: The lowest reference grade counted as relevant by them
            (``null``: the dataset's ``min_grade``, else 1).
        retrieval_beyond_depth: Score the cut-offs above the retrieval's depth (the
            longest retrieved list of the run) as trec_eval and ranx do: a list shorter
            than k scores as if padded with non-relevant chunks (``precision_at_10`` of 3
            chunks divides by 10), so a sweep over ``retriever.top_k`` logs the same names
            at every depth; false drops them (summary ``retrieval_cutoffs``).
        fail_under: Fail the run (exit code 4, outputs kept) when its headline (the PPI++
            mean with human labels, else the mean) is below this (or nothing was scored),
            or a mapping of logged metric to floor (``{ndcg_at_10: 0.6}``; ``-name``: a
            ceiling); null for no gate.
        row_text_chars: Characters of the question and of each chunk's text kept in a
            ``samples.jsonl`` row (0: no texts, chunk ids only; ``null``: whole texts).
        report: Write ``report.html`` (summary, plots, every sample's ranked chunks).
        retrieval_batch_size: Questions per retriever call: 1 (the default) times each
            query alone, as a user's request would be served, for the latency percentiles
            (``retrieval_p50_ms``, ...); larger batches are faster for batched retrievers,
            and the percentiles are then per call.
        shards: Split the evaluation into this many contiguous shards scored in parallel
            and merged into one run with the numbers of one process (``harness.shards``);
            judge-free metrics only.
        shard_backend: Where the shards run: ``processes`` (local worker processes) or
            ``ray`` (actors on the Ray cluster ``ray.init()`` finds, e.g. ``RAY_ADDRESS``).
        human_labels: Human relevance labels, for an interval that accounts for the judge's
            errors (PPI++, ``confidence`` in the summary): a JSON-lines or CSV file (one row
            per chunk: ``id``, ``context_id``/``rank``/``context``, ``relevant`` or
            ``grade``; relative to the working folder), ``qrels`` (the dataset's own
            reference ids and grades, for a seeded random draw of ``human_label_samples``
            samples) or ``mlflow`` (human feedback on the traces of
            ``dataset=mlflow_traces``); null: none. Variants that score by average precision
            get a block (every LLM variant, ``id_ranked``, ``non_llm``); not with shards.
        human_label_samples: With ``human_labels=qrels``: how many samples to draw (seed
            ``run.seed``), at least 2.
        confidence_level: The level of the confidence intervals, between 0 and 1.
        strata: A column of the dataset (query type, language): each sample's row gets
            its value (``stratum``), and with ``human_labels`` the ``confidence`` block
            reports the PPI++ mean and interval per value and combines them into the
            overall one (``harness.confidence.strata``); ``harness label --by`` draws per
            value. Datasets read from records only (JSONL, CSV, JSON, Parquet, Python).
        dry_run: Send no judge request: read the dataset, run the retriever and build
            every judge request as the run would, look each up in the verdict cache (only
            read), and write ``estimate.json`` (requests, tokens, cost at realtime and
            batch prices, time) instead of scoring; no tracked run (``harness.run.estimate``).
    """

    seed: int = 0
    limit: Annotated[int, Range(ge=0)] | None = None
    batch_size: Annotated[int, Range(ge=1)] | None = None
    max_unscored_frac: Annotated[float, Range(ge=0, le=1)] | None = 0.5
    progress: bool = True
    quiet: bool = False
    objective: str | list[str] = "headline"
    retrieval_ks: list[Annotated[int, Range(ge=1)]] = dataclasses.field(
        default_factory=lambda: [5, 10]
    )
    retrieval_min_grade: float | None = None
    retrieval_beyond_depth: bool = True
    # a mapping: any finite bound per metric (names and values checked by harness.run.gates)
    fail_under: Annotated[float, Range(ge=0, le=1)] | dict[str, Annotated[float, Range()]] | (
        None
    ) = None
    row_text_chars: Annotated[int, Range(ge=0)] | None = 300
    report: bool = True
    retrieval_batch_size: Annotated[int, Range(ge=1)] = 1
    shards: Annotated[int, Range(ge=1)] = 1
    shard_backend: Literal["processes", "ray"] = "processes"
    human_labels: str | None = None
    human_label_samples: Annotated[int, Range(ge=2)] | None = None
    confidence_level: Annotated[float, Range(gt=0, lt=1)] = 0.95
    strata: str | None = None
    dry_run: bool = False

    def __post_init__(self) -> None:
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        check_call("run", type(self), values)  # the Python API; config checked it before
        check_labels(self)
        if self.dry_run and self.shards > 1:
            from harness.core.errors import ConfigError

            raise ConfigError("run.dry_run: a dry run estimates in one process; set "
                              "run.shards=1 (judged runs are never sharded)")


#: ``run.human_labels`` values that are not files.
QRELS, MLFLOW = "qrels", "mlflow"


def check_labels(run: RunSettings) -> None:
    """``run.human_labels`` and what goes with it: ``qrels`` needs ``human_label_samples``;
    shards cannot label; a gate or an objective naming a confidence metric (``ci_low``)
    needs labels. A ``ConfigError`` of one line, before any work."""
    from harness.core.errors import ConfigError
    from harness.core.metric_names import CONFIDENCE_METRICS
    from harness.core.objectives import parse

    labels = run.human_labels
    if labels == QRELS and run.human_label_samples is None:
        raise ConfigError("run.human_label_samples: run.human_labels=qrels draws that many "
                          "samples to label from the dataset's qrels; set it, e.g. "
                          "run.human_label_samples=150")
    if labels is not None and not labels.strip():
        raise ConfigError("run.human_labels: expected a labels file, qrels or mlflow, got ''")
    if run.strata is not None and run.shards > 1:
        raise ConfigError("run.strata: shards do not carry the strata; set run.shards=1")
    if labels is not None and run.shards > 1:
        raise ConfigError("run.human_labels: shards do not carry the labelled chunks; "
                          "set run.shards=1 for a run with human labels")
    if labels is not None:
        return
    try:
        named = [("run.objective", o.name) for o in parse(run.objective)]
    except ConfigError:
        named = []  # a malformed objective: the builder names it (check_objective)
    if isinstance(run.fail_under, dict):
        named += [("run.fail_under", str(k).removeprefix("-")) for k in run.fail_under]
    for where, name in named:
        if name.rpartition("/")[2] in CONFIDENCE_METRICS:
            raise ConfigError(f"{where}: {name!r} is logged only by a run with human labels; "
                              "set run.human_labels=FILE (or qrels, or mlflow)")


@dataclass(frozen=True)
class Job:
    """Where a job's outputs go and what it is called, with its resolved config.

    Attributes:
        config: The resolved config (no ``hydra`` node), plain containers.
        out_dir: Where ``samples.jsonl``, ``summary.json`` and the rest are written.
        choices: The option chosen in each config group that matters (``metric: id_based``).
        run_name: The tracker's run name (short: the metric and what varied).
        overrides: The job's command-line overrides, as Hydra names its folder (a tag).
        sweep_dir: The sweep's folder when the job is part of a ``-m`` sweep.
        job_num: The job's number in that sweep.
        build: Builds a config group that the task needs beyond the parts (``judge``).
    """

    config: dict[str, Any]
    out_dir: Path
    choices: dict[str, str]
    run_name: str = "default"
    overrides: str = ""
    sweep_dir: str | None = None
    job_num: int | None = None
    build: Callable[[str], Any] | None = None

    @property
    def multirun(self) -> bool:
        """Whether the job is part of a sweep."""
        return self.sweep_dir is not None
