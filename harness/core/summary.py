"""What a finished job says about itself, typed: ``summary.json`` and the run's record.

A task builds one summary (``RunSummary`` for ``task=evaluate``, ``AgreementSummary`` for
``task=judge_agreement``); the one record path (``harness.run.record``) writes it as
``summary.json`` (``as_json``) and logs its ``params``, ``metrics`` and ``tags``. Readers of
``summary.json`` files (reports, sweep summaries) read them back with ``from_json``, which
accepts the files of earlier versions (a section they lack is empty).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness.core.bill import bill, bill_line, bill_metrics, variant_bill_metrics
from harness.core.described import retriever_metrics
from harness.core.metric_names import (
    HEADLINE,
    HEADLINE_TAG,
    TIMING_METRICS,
    VARIANT_METRICS,
    confidence_metrics,
    headline_metric,
)


class Summary(Protocol):
    """What every task's summary gives the record path."""

    def as_json(self) -> dict[str, Any]:
        """``summary.json``."""
        ...

    def params(self) -> dict[str, str]:
        """The MLflow params: the settings that decide the results."""
        ...

    def metrics(self) -> dict[str, float | None]:
        """The MLflow metrics (``None``: no value, not logged)."""
        ...

    def tags(self) -> dict[str, str]:
        """The task's own MLflow tags (the record path adds the job's)."""
        ...


def flatten(tree: Any, prefix: str = "", elsewhere: Collection[str] = ()) -> dict[str, str]:
    """Flatten nested config into ``{"a.b": "value"}`` strings.

    ``_target_`` keys are skipped, and so are nested components named in ``elsewhere``
    (logged under their own group, as a metric's ``judge``); other nested components (a
    hybrid's parts, a rerank stage) are flattened under their path.
    """
    out: dict[str, str] = {}
    if isinstance(tree, dict):
        for key, value in tree.items():
            if key == "_target_" or (
                prefix and key in elsewhere and isinstance(value, dict) and "_target_" in value
            ):
                continue
            out.update(flatten(value, f"{prefix}{key}.", elsewhere))
    elif isinstance(tree, list):
        out[prefix[:-1]] = json.dumps(tree)
    else:
        out[prefix[:-1]] = "null" if tree is None else str(tree)
    return out


def judge_tags(judge: Mapping[str, Any] | None) -> dict[str, str]:
    """Tags naming the model that answered: ``judge.served_model`` (and ``judge.model_path``,
    ``judge.digest``, ``judge.reply_models`` where the server said), ``judge.cost`` when the
    cost is unknown."""
    if not judge:
        return {}
    tags = {f"judge.{k}": str(judge[k]) for k in ("served_model", "model_path", "digest")
            if judge.get(k) is not None}
    if judge.get("reply_models"):
        tags["judge.reply_models"] = ", ".join(judge["reply_models"])
    if judge.get("cost_unknown"):
        tags["judge.cost"] = f"unknown ({judge['cost_unknown']})"
    return tags


def variant_metrics(variants: Mapping[str, Any] | None) -> dict[str, float | None]:
    """``<variant>/mean``, ``/n_scored``, ``/n_unscored`` and ``/success_rate`` of each
    variant of a run of several (``{}`` for one)."""
    metrics = {f"{name}/{key}": numbers.get(key) for name, numbers in (variants or {}).items()
               for key in VARIANT_METRICS}
    for name, numbers in (variants or {}).items():
        metrics.update(confidence_metrics(numbers.get("confidence"), f"{name}/"))
    return metrics


#: A section ``summary.json`` holds only when it applies (``None``: not written).
Section = dict[str, Any] | None


@dataclass
class RunSummary:
    """``summary.json`` of ``task=evaluate``, in the order the file lists its keys."""

    metric: str
    mean: float | None = None
    n_samples: int = 0
    n_scored: int = 0
    n_unscored: int = 0
    unscored_reasons: dict[str, int] = field(default_factory=dict)
    duration_s: float = 0.0
    samples_per_s: float | None = None
    #: Written when the metric counts successes (a hit at all); ``None`` inside: no sample.
    success_rate: dict[str, float | None] | None = None
    #: Several variants in one run (``metric=[a,b]``): each one's mean, counts, unscored
    #: reasons, success rate and precision by rank, by name in the order listed (the
    #: headline numbers above are the first one's); ``None`` for a run of one variant.
    variants: Section = None
    #: With ``run.human_labels``, a run of one variant: the PPI++ mean and interval beside
    #: the labels-only and judge-only ones (``harness.confidence.ppi``); several variants
    #: have theirs under ``variants.<name>.confidence``.
    confidence: Section = None
    retrieval: Section = None  # recall/ndcg at the cut-offs, mrr, n_queries
    retrieval_cutoffs: Section = None  # the retrieval's depth and the cut-offs above it
    options: dict[str, str] = field(default_factory=dict)  # the option chosen per group
    config: dict[str, Any] = field(default_factory=dict)  # the groups that decide the scores
    #: ``config`` with every component's defaults filled in (its effective settings).
    settings: Section = None
    dataset: dict[str, Any] = field(default_factory=dict)
    retriever: dict[str, Any] = field(default_factory=dict)
    judge: Section = None  # the judge's settings (LLM variants)
    prompt: Section = None
    described: dict[str, Any] = field(default_factory=dict)  # the metric's other provenance
    tracking: dict[str, Any] = field(default_factory=dict)
    harness_version: str = ""
    output_dir: str = ""
    timing: dict[str, Any] = field(default_factory=dict)
    gate: Section = None  # run.fail_under and whether it passed
    #: The judge's traffic counters (written inside ``judge``; logged as ``judge/<name>``).
    judge_stats: dict[str, float | None] = field(default_factory=dict)

    @property
    def success(self) -> float | None:
        """The success rate, when counted."""
        return None if self.success_rate is None else self.success_rate["value"]

    def as_json(self) -> dict[str, Any]:
        """``summary.json``: the sections that apply, in order."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "success_rate":
                if value is not None:
                    out["success_rate"] = value["value"]
            elif f.name == "described":
                out.update(value)
            elif f.name == "judge_stats":
                continue
            elif f.name == "judge" and value is not None:
                counters = {**value, **self.judge_stats}
                out["judge"] = {**counters, "bill": bill(counters)}
            elif f.name == "variants" and value is not None:
                out["variants"] = variants_with_headlines(value)
            elif value is not None or f.name in ("mean", "samples_per_s"):
                out[f.name] = value
            if f.name == "mean":
                out[HEADLINE] = self.headline()
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunSummary:
        """A ``summary.json`` read back (keys it lacks keep their defaults)."""
        names = {f.name for f in dataclasses.fields(cls)} - {
            "success_rate", "described", "judge_stats"}
        known = {k: v for k, v in data.items() if k in names}
        summary = cls(**{"metric": str(data.get("metric", "?")), **known})
        if "success_rate" in data:
            summary.success_rate = {"value": data["success_rate"]}
        summary.described = {k: v for k, v in data.items()  # ``headline`` is derived
                             if k not in names and k not in ("success_rate", HEADLINE)}
        return summary

    def headline(self) -> dict[str, Any]:
        """``summary.json``'s ``headline``: the number to report. With human labels, the
        PPI++ mean of the (first) variant and its interval; else the mean (no interval is
        recorded for it). ``name`` is the logged metric that holds it."""
        variants = list(self.variants or {})
        first = (self.variants or {}).get(variants[0]) if variants else None
        block = first.get("confidence") if isinstance(first, Mapping) else self.confidence
        name = headline_metric(variants, labelled=isinstance(block, Mapping))
        return headline_entry(name, self.mean, block if isinstance(block, Mapping) else None,
                              self.judge is not None)

    def params(self) -> dict[str, str]:
        """The config groups that decide the scores, flattened (a metric's judge and prompt
        under their own groups), with their defaults when known (``settings``), and the
        prompt's version and mode."""
        params: dict[str, str] = {}
        for group, tree in (self.config if self.settings is None else self.settings).items():
            params.update(flatten(tree, f"{group}.", elsewhere=("judge", "prompt")))
        if self.prompt is not None:
            params["prompt.version"] = str(self.prompt["version"])
            params["prompt.mode"] = str(self.prompt["mode"])
        return params

    def metrics(self) -> dict[str, float | None]:
        """The headline numbers, each variant's (``<variant>/mean``), the confidence block's
        (``ppi_mean``, ``ci_low``, ``ci_high``, ``kappa``), judge traffic,
        retrieval metrics, timing, the retriever's own numbers (``retriever/<name>``) and the
        retrieval's depth; last ``headline``, the value of the metric the run's headline is
        (read by ``run.objective``, ``run.fail_under`` and the floors; the record path logs
        it under its own name only, and tags that name: ``harness.headline``)."""
        metrics: dict[str, float | None] = {
            "mean": self.mean, "n_samples": self.n_samples, "n_scored": self.n_scored,
            "n_unscored": self.n_unscored, "duration_s": self.duration_s,
            "success_rate": self.success,
        }
        metrics.update(variant_metrics(self.variants))
        metrics.update(confidence_metrics(self.confidence))
        metrics.update({f"judge/{k}": v for k, v in self.judge_stats.items()})
        metrics.update(bill_metrics(self.judge_stats))
        metrics.update(variant_bill_metrics(self.variants))
        metrics.update({k: v for k, v in (self.retrieval or {}).items() if k != "n_queries"})
        metrics.update({k: self.timing[k] for k in TIMING_METRICS if k in self.timing})
        metrics.update(retriever_metrics(self.retriever))
        if self.retrieval_cutoffs is not None:
            metrics["retrieval_depth"] = self.retrieval_cutoffs["depth"]
        metrics[HEADLINE] = self.headline()["value"]
        return metrics

    def tags(self) -> dict[str, str]:
        """The prompt's hash and version, the dataset's hash, the run's description, the
        cut-offs above the retrieval's depth, the gate, and the model that answered."""
        tags: dict[str, str] = {}
        if self.prompt is not None:
            tags["prompt.sha256"] = str(self.prompt["sha256"])
            tags["prompt.version"] = str(self.prompt["version"])
        tags["dataset.sha256"] = str(self.dataset.get("sha256", ""))
        tags[HEADLINE_TAG] = str(self.headline()["name"])
        tags["mlflow.note.content"] = self.description()
        cut = self.retrieval_cutoffs or {}
        for what in ("dropped", "logged"):
            if cut.get(what):  # cut-offs above the depth: not logged, or logged but flagged
                tags[f"retrieval.above_depth.{what}"] = ",".join(cut[what])
        if self.gate is not None:
            tags["gate.fail_under"] = "passed" if self.gate["passed"] else (
                "undecided" if self.gate.get("decided") is False else "failed")
        tags.update(judge_tags(None if self.judge is None else {**self.judge, **self.judge_stats}))
        line = None if self.judge is None else bill_line({**self.judge, **self.judge_stats})
        if line is not None:
            tags["judge.bill"] = line
        return tags

    def description(self) -> str:
        """The MLflow run description: what was evaluated, how, and the headline numbers."""
        options = self.options
        lines = [
            f"Context precision `{self.metric}` of `{options.get('dataset', '?')}` "
            f"({self.dataset.get('path')}) with retriever `{options.get('retriever', '?')}`.",
        ]
        if self.judge is not None and self.prompt is not None:
            judge, prompt = self.judge["model"], self.prompt["version"]
            served = self.judge.get("served_model")
            if served and served != judge:
                judge = f"{judge}` (served: `{served}"
            lines.append(f"Judge `{judge}`, prompt `{prompt}`.")
        mean = self.mean
        if self.confidence:  # the headline first: the mean corrected by human labels
            block = self.confidence
            lines.append(f"PPI++ mean {_four(block['mean'])} [{_four(block['ci'][0])}, "
                         f"{_four(block['ci'][1])}] at {block['level']:g}, "
                         f"{block['n_labelled']} of {block['n']} samples labelled.")
        lines.append(
            f"{'Judge alone: mean' if self.confidence else 'Mean'} {_four(mean)} over "
            f"{self.n_scored} scored of {self.n_samples} samples ({self.n_unscored} unscored)."
        )
        if self.variants:
            lines.append("Variants: " + "; ".join(
                f"`{name}` mean {_four(v.get('mean'))} ({v.get('n_scored')} scored)"
                for name, v in self.variants.items()) + ".")
        return "\n\n".join(lines)


def _four(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


#: ``headline.method``: the PPI++ mean (human labels), the judge's mean of a judged variant
#: taken as right, or the mean of the scored samples of a variant with no judge.
PPI, JUDGE_ALONE, SAMPLE_MEAN = "ppi++", "judge alone", "sample mean"


def headline_entry(name: str, mean: float | None, block: Mapping[str, Any] | None,
                   judged: bool) -> dict[str, Any]:
    """A ``headline``: ``name`` (the logged metric), ``value``, ``interval`` (``[lo, hi]``
    centred on the value, or ``None``), ``level`` and ``method``. With a ``confidence``
    ``block``, its PPI++ mean and interval; else ``mean``."""
    if block is not None:
        return {"name": name, "value": block.get("mean"), "interval": block.get("ci"),
                "level": block.get("level"), "method": PPI}
    return {"name": name, "value": mean, "interval": None, "level": None,
            "method": JUDGE_ALONE if judged else SAMPLE_MEAN}


def variants_with_headlines(variants: Mapping[str, Any]) -> dict[str, Any]:
    """``variants`` with each entry's ``headline`` after its ``mean`` (named
    ``<variant>/ppi_mean`` with a ``confidence`` block, else ``<variant>/mean``; a judged
    variant's entry holds its ``judge``)."""
    out: dict[str, Any] = {}
    for name, entry in variants.items():
        if not isinstance(entry, Mapping):
            out[name] = entry
            continue
        block = entry.get("confidence")
        labelled = isinstance(block, Mapping)
        own = headline_entry(f"{name}/{'ppi_mean' if labelled else 'mean'}",
                             entry.get("mean"), block if labelled else None,
                             entry.get("judge") is not None)
        rebuilt: dict[str, Any] = {}
        for key, value in entry.items():
            if key != HEADLINE:
                rebuilt[key] = value
            if key == "mean":
                rebuilt[HEADLINE] = own
        out[name] = rebuilt if "mean" in entry else {**rebuilt, HEADLINE: own}
    return out


@dataclass
class AgreementSummary:
    """``summary.json`` of ``task=judge_agreement``."""

    options: dict[str, str]
    min_grade: float
    unjudged_pairs: int
    result: dict[str, Any]  # pairs, accuracy, precision, recall, f1, cohen_kappa, confusion, ...
    judge: dict[str, Any]
    judge_stats: dict[str, float | None]
    prompt: dict[str, Any]
    harness_version: str
    pairs_per_query: int | None
    dataset: dict[str, Any] = field(default_factory=dict)  # the dataset group's settings

    def as_json(self) -> dict[str, Any]:
        return {"task": "judge_agreement", "options": self.options, "min_grade": self.min_grade,
                "unjudged_pairs": self.unjudged_pairs, **self.result,
                "judge": {**self.judge, **self.judge_stats}, "prompt": self.prompt,
                "harness_version": self.harness_version}

    def params(self) -> dict[str, str]:
        params = {"task.pairs_per_query": str(self.pairs_per_query),
                  "task.min_grade": str(self.min_grade), "judge.model": str(self.judge["model"]),
                  "prompt.version": str(self.prompt["version"])}
        params.update({f"dataset.{k}": str(v) for k, v in self.dataset.items()
                       if not str(k).startswith("_")})
        return params

    def metrics(self) -> dict[str, float | None]:
        names = ("pairs", "accuracy", "precision", "recall", "f1", "cohen_kappa")
        metrics: dict[str, float | None] = {k: self.result[k] for k in names}
        metrics.update({f"judge/{k}": v for k, v in self.judge_stats.items()})
        return metrics

    def tags(self) -> dict[str, str]:
        return {"prompt.sha256": str(self.prompt["sha256"]), "task": "judge_agreement",
                **judge_tags({**self.judge, **self.judge_stats})}
