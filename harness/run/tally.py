"""A run's counts: each variant's ``Scores`` and the run's ``Tally`` (``harness.run.loop``
fills them; the summary, the gates, the report and the shards' merge read them)."""

from __future__ import annotations

import math
import time
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.core.errors import headline
from harness.core.types import RagSample, SampleResult
from harness.metrics.retrieval import retrieval_summary
from harness.run.outputs.rows import plain_chunks
from harness.run.sampling import Evenly

#: Distinct unscored reasons a run counts by default (the rest: ``(other reasons)``).
MAX_REASONS = 20
MAX_RANK = 20
MAP_SAMPLES = 60
#: Rows kept for the HTML report's per-sample view: every one of a run of up to this many
#: samples (the report draws a page at a time), evenly spaced beyond; and unscored ones.
REPORT_ROWS = 10_000
REPORT_UNSCORED = 200


@dataclass
class Scores:
    """One variant's counts: its scores, unscored reasons, successes and per-rank relevance
    (``mean`` is over scored samples only)."""

    metric: str
    n_samples: int = 0
    scores: array[float] = field(default_factory=lambda: array("d"))
    reasons: Counter[str] = field(default_factory=Counter)
    successes: int | None = None
    #: Per rank (1..MAX_RANK): samples with a verdict there, and how many were relevant.
    rank_totals: list[int] = field(default_factory=lambda: [0] * MAX_RANK)
    rank_relevant: list[float] = field(default_factory=lambda: [0.0] * MAX_RANK)
    #: Distinct unscored reasons counted; later ones go under ``(other reasons)`` (a shard's
    #: worker counts every one: the parent caps the merged ones).
    max_reasons: int = MAX_REASONS
    #: With ``run.human_labels``: the variant's ``confidence`` block (``harness.run.confidence``).
    confidence: dict[str, Any] | None = None
    #: With ``run.human_labels``: why no block could be made (too few labelled samples
    #: scored); the run keeps its outputs and exits 3 (``harness.run.gates.broken_limit``).
    no_interval: str | None = None

    @property
    def n_scored(self) -> int:
        """Samples that got a score."""
        return len(self.scores)

    @property
    def n_unscored(self) -> int:
        """Samples without a score (their reasons are in ``reasons``)."""
        return self.n_samples - self.n_scored

    @property
    def mean(self) -> float | None:
        """Exactly rounded mean of the scores, or ``None`` when nothing was scored."""
        return math.fsum(self.scores) / len(self.scores) if self.scores else None

    @property
    def success_rate(self) -> float | None:
        """Successes over scored samples (``None``: not counted, or nothing scored)."""
        if self.successes is None or not self.n_scored:
            return None
        return self.successes / self.n_scored

    def add_reason(self, reason: str) -> None:
        """Count an unscored sample's reason (distinct reasons are capped)."""
        if reason in self.reasons or len(self.reasons) < self.max_reasons:
            self.reasons[reason] += 1
        else:
            self.reasons["(other reasons)"] += 1

    def count(self, score: float | None, error: str | None, details: dict[str, Any],
              verdicts: Sequence[float] | None) -> Sequence[float]:
        """Count one sample's outcome; returns the verdicts counted per rank."""
        self.n_samples += 1
        if score is None:
            # the row keeps a server's whole message, the console its first meaningful line
            self.add_reason(headline(error) if error else "unscored")
            return []
        self.scores.append(score)
        ranked = details.get("relevance") or verdicts or []
        totals, relevant = self.rank_totals, self.rank_relevant
        for rank, verdict in enumerate(ranked[:MAX_RANK]):
            totals[rank] += 1
            relevant[rank] += verdict
        success = details.get("success")
        if success is not None:
            self.successes = (self.successes or 0) + bool(success)
        return ranked

    def by_rank(self) -> list[float]:
        """Precision at each rank that some scored sample reached (relevant / verdicts)."""
        return [r / n for r, n in zip(self.rank_relevant, self.rank_totals, strict=True) if n]

    def variant_summary(self) -> dict[str, Any]:
        """One variant's part of ``summary.json``'s ``variants``."""
        out: dict[str, Any] = {"mean": self.mean, "n_scored": self.n_scored,
                               "n_unscored": self.n_unscored,
                               "unscored_reasons": dict(self.reasons.most_common())}
        if self.successes is not None:
            out["success_rate"] = self.success_rate
        out["precision_by_rank"] = self.by_rank()
        if self.confidence is not None:
            out["confidence"] = self.confidence
        return out


@dataclass
class Tally(Scores):
    """Running counts of a run: the headline (first) variant's ``Scores``, each listed
    variant's (``variants``, several in one run), the retrieval metrics and report rows."""

    #: Several variants in one run: each one's counts, by name, in order (``{}``: one).
    variants: dict[str, Scores] = field(default_factory=dict)
    retrieval: dict[str, float] = field(default_factory=dict)
    n_retrieval: int = 0
    #: The longest retrieved list among them, the cut-offs asked for, and which of the
    #: names above that depth are still logged (``True``: all).
    retrieval_depth: int = 0
    retrieval_ks: tuple[int, ...] = ()
    beyond_depth: bool | tuple[str, ...] = True
    #: The verdicts of MAP_SAMPLES scored samples spread evenly over the run (verdict map).
    verdict_map: Evenly[tuple[str, list[float]]] = field(
        default_factory=lambda: Evenly(MAP_SAMPLES)
    )
    #: Rows for the HTML report: evenly spaced over the run, and unscored ones.
    report_rows: Evenly[dict[str, Any]] = field(default_factory=lambda: Evenly(REPORT_ROWS))
    report_unscored: Evenly[dict[str, Any]] = field(
        default_factory=lambda: Evenly(REPORT_UNSCORED)
    )
    started: float = field(default_factory=time.perf_counter)
    duration_s: float = 0.0
    #: Samples with both retrieved and reference ids; those whose retrieval holds one of
    #: its reference ids; a retrieved and a reference id of one that holds none.
    id_queries: int = 0
    id_matched: int = 0
    id_example: tuple[str, str] | None = None

    def note_ids(self, sample: RagSample) -> None:
        """Count whether ``sample``'s retrieved ids meet its reference (judged) ids: a run
        where none ever does most likely writes its ids otherwise than the qrels."""
        got, refs = sample.retrieved_context_ids, sample.reference_context_ids
        if not got or not refs:
            return
        self.id_queries += 1
        if not set(got).isdisjoint(refs):
            self.id_matched += 1
        elif self.id_example is None:
            self.id_example = (got[0], refs[0])

    def id_counts(self) -> dict[str, Any]:
        """``summary.json``'s ``dataset`` counts of retrieved ids meeting reference ids."""
        if not self.id_queries:
            return {}
        out: dict[str, Any] = {"queries_with_ids": self.id_queries,
                               "queries_retrieving_a_reference_id": self.id_matched}
        if not self.id_matched and self.id_example is not None:
            out["ids_example"] = {"retrieved": self.id_example[0],
                                  "reference": self.id_example[1]}
        return out

    def record(self, result: SampleResult, row: dict[str, Any]) -> None:
        """Count one sample's outcome (``row`` is its ``samples.jsonl`` row)."""
        at = self.n_samples
        ranked = self.count(result.score, result.error, result.details, result.verdicts)
        if result.score is None:
            unscored = self.report_unscored
            unscored.add(plain_chunks(row) if unscored.wants() else None, at=at)
        else:  # (the map's entry is built only when it is kept)
            kept = self.verdict_map
            kept.add((result.id, list(ranked[:MAX_RANK])) if kept.wants() else None)
        report = self.report_rows
        report.add(plain_chunks(row) if report.wants() else None)
        entries = result.details.get("variants") if self.variants else None
        if isinstance(entries, dict):
            for name, scores in self.variants.items():
                entry = entries.get(name) or {}
                scores.count(entry.get("score"), entry.get("error"), entry,
                              entry.get("verdicts"))

    def summary(self) -> dict[str, Any]:
        """The core of ``summary.json``."""
        rate = self.n_samples / self.duration_s if self.duration_s > 0 else None
        extra: dict[str, Any] = {}
        if self.successes is not None:
            extra["success_rate"] = self.success_rate
        if self.n_retrieval:
            extra.update(retrieval_summary(self.retrieval, self.n_retrieval, self.retrieval_ks,
                                           self.retrieval_depth, self.beyond_depth))
        if self.confidence is not None:
            extra["confidence"] = self.confidence
        return {
            "metric": self.metric,
            "mean": self.mean,
            "n_samples": self.n_samples,
            "n_scored": self.n_scored,
            "n_unscored": self.n_unscored,
            "unscored_reasons": dict(self.reasons.most_common()),
            "duration_s": round(self.duration_s, 6),
            "samples_per_s": None if rate is None else significant(rate),
            **extra,
        }


def significant(value: float, digits: int = 3) -> float:
    """``value`` rounded to ``digits`` significant figures (whole numbers keep every digit):
    12345.6 → 12346, 2.345 → 2.35, 0.012345 → 0.0123."""
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, max(0, digits - 1 - math.floor(math.log10(abs(value)))))
