"""From a composed Hydra config to outputs: build the parts, evaluate, write, log.

Only this module and ``cli`` know about Hydra.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
import dataclasses
from collections.abc import Callable, Iterable
from typing import Any

from omegaconf import DictConfig, OmegaConf

from harness import __version__
from harness.errors import (
    ConfigError,
    DatasetError,
    HarnessError,
    JudgeUnavailable,
    RunFailed,
    closest,
)
from harness.evaluation import evaluate
from harness.tracking.base import RunRecord
from harness.types import RagSample
from harness.report import describe_run, render_summary
from harness.validation import check_arguments

#: Config subtrees that decide the scores; logged as MLflow params.
PARAM_GROUPS = ("dataset", "retriever", "metric", "run")


@dataclass(frozen=True)
class RunSettings:
    """The ``run`` block of the config.

    Args:
        seed: Random seed for anything sampled (recorded for replay).
        limit: Score only the first N samples (smoke runs); null for all.
        batch_size: Samples scored per batch (memory stays flat on any file size).
        max_unscored_frac: Fail the run (exit code 3, outputs still written) when more
            than this fraction of samples is unscored; null for no limit.
        progress: Show a progress bar on stderr for work longer than a second.
        quiet: Print nothing but errors (for CI logs).
        objective: The logged metric a job returns to a sweeper (Optuna maximises it) and
            a sweep's parent run ranks children by: ``mean``, or e.g. ``ndcg_at_10``.
        retrieval_ks: Cut-offs of the retrieval metrics logged beside context precision
            (``recall_at_<k>``, ``ndcg_at_<k>``, plus ``mrr``) for samples with reference ids;
            ``[]`` turns them off.
        retrieval_min_grade: The lowest reference grade counted as relevant by them
            (``null``: the dataset's ``min_grade``, else 1).
    """

    seed: int = 0
    limit: int | None = None
    batch_size: int = 1024
    max_unscored_frac: float | None = None
    progress: bool = True
    quiet: bool = False
    objective: str = "mean"
    retrieval_ks: list[int] = dataclasses.field(default_factory=lambda: [10])
    retrieval_min_grade: float | None = None

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < 0:
            raise ConfigError(f"run.limit: expected a number >= 0 or null, got {self.limit}")
        if self.batch_size < 1:
            raise ConfigError(f"run.batch_size: expected a number >= 1, got {self.batch_size}")
        frac = self.max_unscored_frac
        if frac is not None and not 0.0 <= frac <= 1.0:
            raise ConfigError(f"run.max_unscored_frac: expected a number in [0, 1], got {frac}")

    @classmethod
    def from_config(cls, run: Any) -> RunSettings:
        """Read the ``run`` block; unknown keys get a did-you-mean."""
        values = dict(OmegaConf.to_container(run, resolve=True)) if run is not None else {}
        check_arguments("run", cls, values)
        return cls(**values)


@dataclass
class Parts:
    """The instantiated components of one run."""

    dataset: Any
    retriever: Any
    metric: Any
    tracker: Any
    settings: RunSettings


def _check_missing(cfg: DictConfig, group: str) -> None:
    missing = sorted(OmegaConf.missing_keys(cfg[group]))
    if missing:
        raise ConfigError(
            f"{group}: no value for {', '.join(missing)}; "
            f"set it on the command line, e.g. {missing[0]}=..."
        )


def _instantiate(cfg: DictConfig, group: str) -> Any:
    from hydra.errors import InstantiationException
    from hydra.utils import execution_whitelist, get_method, instantiate

    from harness.cli import TRUSTED_TARGETS

    from omegaconf.errors import OmegaConfBaseException

    _check_missing(cfg, group)
    try:
        node = OmegaConf.to_container(cfg[group], resolve=True)
    except OmegaConfBaseException as e:
        raise ConfigError(f"{group}: {str(e).splitlines()[0]}") from None
    if isinstance(node, dict) and "_target_" in node:
        try:
            target = get_method(node["_target_"])
        except Exception as e:
            raise ConfigError(f"{group}._target_: cannot import {node['_target_']!r} ({e})") from None
        check_arguments(group, target, node)
    try:
        with execution_whitelist(TRUSTED_TARGETS):
            return instantiate(cfg[group], _convert_="all")
    except InstantiationException as e:
        cause = e.__cause__
        if isinstance(cause, HarnessError):
            raise cause from None
        message = str(cause or e).strip().splitlines()[-1]
        raise ConfigError(f"{group}: {message}") from None


def _uses(cfg: DictConfig, group: str) -> bool:
    """Whether the chosen metric interpolates ``group`` (the judge and prompt groups)."""
    return group in cfg and "metric" in cfg and group in cfg.metric


def build(cfg: DictConfig, dataset: Any = None) -> Parts:
    """Instantiate each group; check everything that can fail before any work.

    Args:
        cfg: The composed config.
        dataset: Use this dataset instead of the ``dataset`` group (the Python API).
    """
    settings = RunSettings.from_config(cfg.get("run"))
    for group in ("judge", "prompt"):
        if _uses(cfg, group):
            _check_missing(cfg, group)
    _check_objective(settings)
    if dataset is None:
        dataset = _instantiate(cfg, "dataset")
    dataset.check()
    retriever = _instantiate(cfg, "retriever")
    metric = _instantiate(cfg, "metric")
    tracker = _instantiate(cfg, "tracking")
    return Parts(dataset, retriever, metric, tracker, settings)


def _check_objective(settings: RunSettings) -> None:
    """``run.objective`` must name a metric a run logs (its value may still be missing,
    e.g. a mean when nothing was scored: the job then returns NaN, a failed trial)."""
    names = {"mean", "n_samples", "n_scored", "n_unscored", "duration_s", "success_rate", "mrr"}
    for k in settings.retrieval_ks:
        names |= {f"recall_at_{k}", f"ndcg_at_{k}"}
    objective = settings.objective
    if objective not in names and not objective.startswith("judge/"):
        raise ConfigError(
            f"run.objective: {objective!r} is not a metric a run logs{closest(objective, names)}; "
            f"choose one of {', '.join(sorted(names))} or judge/<counter>"
        )


def flatten(tree: Any, prefix: str = "") -> dict[str, str]:
    """Flatten nested config into ``{"a.b": "value"}`` strings.

    ``_target_`` keys and nested components (logged under their own group) are skipped.
    """
    out: dict[str, str] = {}
    if isinstance(tree, dict):
        for key, value in tree.items():
            if key == "_target_" or (prefix and isinstance(value, dict) and "_target_" in value):
                continue
            out.update(flatten(value, f"{prefix}{key}."))
    elif isinstance(tree, list):
        out[prefix[:-1]] = json.dumps(tree)
    else:
        out[prefix[:-1]] = "null" if tree is None else str(tree)
    return out


def _progress(settings: RunSettings, total: int) -> tuple[Any, Callable[[int], None] | None]:
    if settings.quiet or not settings.progress:
        return None, None
    from tqdm import tqdm

    if settings.limit is not None:
        total = min(total, settings.limit)
    bar = tqdm(
        total=total, unit=" samples", delay=1.0, file=sys.stderr, desc="scoring",
        dynamic_ncols=True, smoothing=0.1,
    )
    return bar, bar.update


def _prepare_retriever(parts: Parts) -> None:
    """Give a corpus retriever (BM25, dense, hybrid) the dataset's corpus to index."""
    prepare = getattr(parts.retriever, "prepare", None)
    if prepare is None:
        return
    corpus = getattr(parts.dataset, "corpus", None)
    if corpus is None:
        raise ConfigError(
            f"retriever {type(parts.retriever).__name__} searches a corpus, but the dataset "
            f"({parts.dataset.describe().get('format')}) has none; use a BEIR dataset "
            "(dataset=beir dataset.path=DIR, or dataset=scifact) or retriever=precomputed"
        )
    prepare(corpus(), parts.dataset.corpus_key())


def _load_for_judging(parts: Parts) -> list[RagSample]:
    """Read and validate every record, and check the endpoint, before the first judge call."""
    samples = parts.retriever.retrieve_batch(list(parts.dataset.samples(parts.settings.limit)))
    if not samples:
        raise DatasetError(str(getattr(parts.dataset, "path", "dataset")), "contains no records")
    for field in sorted(parts.metric.requires):
        if all(getattr(s, field) is None for s in samples):
            raise ConfigError(
                f"metric {parts.metric.name} needs the field '{field}', which no record of "
                f"{getattr(parts.dataset, 'path', 'the dataset')} has; map your column with "
                f"dataset.fields.{field}=COLUMN or choose another metric"
            )
    parts.metric.preflight()
    return samples


def plan(parts: Parts) -> tuple[Iterable[list[RagSample]], int]:
    """Prepare the retriever and the batches to score, with a count for progress.

    Judged metrics get the whole dataset read, validated and retrieved first, and the
    endpoint checked, before any call; the others stream.
    """
    _prepare_retriever(parts)
    size = parts.settings.batch_size
    if getattr(parts.metric, "prevalidate", False):
        samples = _load_for_judging(parts)
        return (samples[i : i + size] for i in range(0, len(samples), size)), len(samples)
    batches = map(parts.retriever.retrieve_batch, parts.dataset.batches(size, parts.settings.limit))
    return batches, parts.dataset.estimate_count()


def score(
    parts: Parts,
    batches: Iterable[list[RagSample]],
    sink: Any,
    progress: Callable[[int], None] | None = None,
) -> Any:
    """Score ``batches`` with the run's metric and retrieval metrics; rows go to ``sink``."""
    min_grade = parts.settings.retrieval_min_grade
    if min_grade is None:
        min_grade = getattr(parts.dataset, "min_grade", 1)
    return evaluate(batches, parts.metric, sink, progress, parts.settings.retrieval_ks, min_grade)


def run(cfg: DictConfig) -> float | None:
    """Run one evaluation job; return ``run.objective`` (NaN when it has no value)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hc = HydraConfig.get()
    out_dir = Path(hc.runtime.output_dir)
    choices = {k: v for k, v in hc.runtime.choices.items() if not k.startswith("hydra/") and v}
    if not _uses(cfg, "judge"):
        choices = {k: v for k, v in choices.items() if k not in ("judge", "prompt")}
    if choices.get("task") == "evaluate":
        del choices["task"]
    parts = build(cfg)
    multirun = hc.mode == RunMode.MULTIRUN
    if cfg.get("task") is not None and cfg.task.name == "judge_agreement":
        from harness.agreement import run_agreement

        choices.pop("metric", None)
        return run_agreement(cfg, parts, out_dir, choices, hc.job.override_dirname or "default")
    try:
        return execute(
            cfg, parts, out_dir, choices, hc.job.override_dirname or "default",
            sweep_dir=str(hc.sweep.dir) if multirun else None,
            job_num=hc.job.num if multirun else None,
        )[1]
    finally:
        close = getattr(parts.metric, "close", None)
        if close is not None:
            close()


def execute(
    cfg: DictConfig,
    parts: Parts,
    out_dir: Path,
    choices: dict[str, str],
    run_name: str = "default",
    *,
    sweep_dir: str | None = None,
    job_num: int | None = None,
) -> tuple[dict[str, Any], float]:
    """Evaluate, write the outputs into ``out_dir``, log the run; the CLI's and the API's
    one code path.

    Returns:
        The summary and the value of ``run.objective`` (NaN when it has none).
    """
    multirun = sweep_dir is not None
    metric_name = choices.get("metric", parts.metric.name)
    batches, total = plan(parts)

    tags = {f"choice.{k}": str(v) for k, v in choices.items()}
    tags["harness.version"] = __version__
    described = getattr(parts.metric, "describe", dict)()
    if "prompt" in described:
        tags["prompt.sha256"] = described["prompt"]["sha256"]
        tags["prompt.version"] = described["prompt"]["version"]
    if multirun:
        tags["hydra.sweep_dir"], tags["hydra.job_num"] = str(sweep_dir), str(job_num)
    parts.tracker.begin(run_name, tags, multirun=multirun, sweep_dir=sweep_dir)

    samples_path = out_dir / "samples.jsonl"
    bar, progress = _progress(parts.settings, total)
    try:
        with open(samples_path, "w", encoding="utf-8") as sink:
            tally = score(parts, batches, sink, progress)
    except JudgeUnavailable:
        parts.tracker.abort("FAILED")  # the endpoint died mid-run: keep what was finished
        raise
    except HarnessError:
        parts.tracker.abort("DELETE")  # bad input: no run, no partial results
        samples_path.unlink(missing_ok=True)
        raise
    except BaseException:
        parts.tracker.abort("KILLED")  # interrupted: the rows written so far stay
        raise
    finally:
        if bar is not None:
            bar.close()
    if tally.n_samples == 0:
        parts.tracker.abort("DELETE")
        samples_path.unlink(missing_ok=True)
        raise DatasetError(str(getattr(parts.dataset, "path", "dataset")), "contains no records")

    groups = [g for g in PARAM_GROUPS if g in cfg]
    if _uses(cfg, "judge"):
        groups += ["judge"]
    used = {g: OmegaConf.to_container(cfg[g], resolve=True) for g in groups}
    sha = parts.dataset.sha256()
    summary: dict[str, Any] = {
        **tally.summary(),
        "metric": metric_name,
        "options": choices,
        "config": used,
        "dataset": {**parts.dataset.describe(), "sha256": sha},
        "retriever": parts.retriever.describe(),
        **described,
        "tracking": parts.tracker.describe(),
        "harness_version": __version__,
        "output_dir": str(out_dir),
    }
    artifacts = []
    if parts.tracker.describe().get("backend") == "mlflow":
        # drawn while the MLflow helper is still importing: no added wall time
        from harness.plots import write_plots

        artifacts += [str(p) for p in write_plots(tally, metric_name, out_dir / "plots")]
    if "judge" in described:
        summary["judge"] = {**described["judge"], **parts.metric.stats()}
        prompt_path = out_dir / "prompt.yaml"
        prompt_path.write_text(parts.metric.prompt.to_yaml(), "utf-8")
        artifacts.append(str(prompt_path))
    summary_path = out_dir / "summary.json"
    summary_path.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", "utf-8")
    config_path = out_dir / "config.yaml"
    resolved = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(resolved, dict)
    resolved.pop("hydra", None)
    config_path.write_text(OmegaConf.to_yaml(resolved), "utf-8")

    params: dict[str, str] = {}
    for group, tree in used.items():
        params.update(flatten(tree, f"{group}."))
    if "prompt" in described:
        params["prompt.version"] = described["prompt"]["version"]
        params["prompt.mode"] = described["prompt"]["mode"]
    metrics: dict[str, Any] = {
        "mean": tally.mean,
        "n_samples": tally.n_samples,
        "n_scored": tally.n_scored,
        "n_unscored": tally.n_unscored,
        "duration_s": tally.duration_s,
        "success_rate": summary.get("success_rate"),
    }
    if "judge" in described:
        metrics.update({f"judge/{k}": v for k, v in parts.metric.stats().items()})
    metrics.update({k: v for k, v in summary.get("retrieval", {}).items() if k != "n_queries"})
    record = RunRecord(
        params=params,
        metrics={k: float(v) for k, v in metrics.items() if v is not None},
        tags={**tags, "dataset.sha256": sha, "mlflow.note.content": describe_run(summary)},
        artifacts=[str(config_path), str(samples_path), str(summary_path), *artifacts],
    )
    tracked = parts.tracker.finish(record)
    if not parts.settings.quiet:
        print(render_summary(summary, tracked))
    frac = parts.settings.max_unscored_frac
    if frac is not None and tally.n_unscored > frac * tally.n_samples:
        raise RunFailed(
            f"{tally.n_unscored} of {tally.n_samples} samples are unscored, more than "
            f"run.max_unscored_frac={frac}; see {samples_path}"
        )
    return summary, record.metrics.get(parts.settings.objective, float("nan"))


def main(cfg: DictConfig) -> float | None:
    """Hydra task function: report ``HarnessError`` as one line and a non-zero exit."""
    try:
        return run(cfg)
    except RunFailed as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(3)
    except HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt as e:
        signum = getattr(e, "signum", 2)
        print(
            f"interrupted (signal {signum}): the MLflow run is marked KILLED; finished rows are "
            "in samples.jsonl and judge verdicts in the cache, so rerunning resumes",
            file=sys.stderr,
        )
        sys.exit(128 + signum)
