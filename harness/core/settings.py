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
        batch_size: Samples scored per batch (memory stays flat on any file size).
        max_unscored_frac: Fail the run (exit code 3, outputs still written) when more
            than this fraction of samples is unscored (0.5 by default: a mean over fewer
            than half the samples does not describe the dataset); 1: no limit (null: only a run
            with nothing scored fails).
        progress: Show a progress bar on stderr for work longer than a second.
        quiet: Print nothing but errors (for CI logs).
        objective: The logged metric a job returns to a sweeper and a sweep's parent run
            ranks children by: ``mean``, or e.g. ``ndcg_at_10`` (maximised); ``-name``
            minimises (``-retrieval_p95_ms``); a list (``[ndcg_at_10,-retrieval_p95_ms]``)
            makes a multi-objective study, ranked by the first, with a Pareto front.
        retrieval_ks: Cut-offs of the retrieval metrics logged beside context precision
            (``recall_at_<k>``, ``ndcg_at_<k>``, plus ``mrr``) for samples with reference ids;
            ``[]`` turns them off.
        retrieval_min_grade: The lowest reference grade counted as relevant by them
            (``null``: the dataset's ``min_grade``, else 1).
        retrieval_beyond_depth: Also log the cut-offs above the retrieval's depth (the
            longest retrieved list of the run), where a list scores as if padded with
            non-relevant chunks; by default they are dropped (summary ``retrieval_cutoffs``).
        fail_under: Fail the run (exit code 4, outputs kept) when its mean is below this
            (or nothing was scored), or a mapping of logged metric to floor
            (``{ndcg_at_10: 0.6}``; ``-name``: a ceiling); null for no gate.
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
    """

    seed: int = 0
    limit: Annotated[int, Range(ge=0)] | None = None
    batch_size: Annotated[int, Range(ge=1)] = 1024
    max_unscored_frac: Annotated[float, Range(ge=0, le=1)] | None = 0.5
    progress: bool = True
    quiet: bool = False
    objective: str | list[str] = "mean"
    retrieval_ks: list[Annotated[int, Range(ge=1)]] = dataclasses.field(
        default_factory=lambda: [5, 10]
    )
    retrieval_min_grade: float | None = None
    retrieval_beyond_depth: bool = False
    # a mapping: any finite bound per metric (names and values checked by harness.run.gates)
    fail_under: Annotated[float, Range(ge=0, le=1)] | dict[str, Annotated[float, Range()]] | (
        None
    ) = None
    row_text_chars: Annotated[int, Range(ge=0)] | None = 300
    report: bool = True
    retrieval_batch_size: Annotated[int, Range(ge=1)] = 1
    shards: Annotated[int, Range(ge=1)] = 1
    shard_backend: Literal["processes", "ray"] = "processes"

    def __post_init__(self) -> None:
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        check_call("run", type(self), values)  # the Python API; config checked it before


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
