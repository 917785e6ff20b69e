"""Human labels in a run (``run.human_labels``): read and checked when the parts are built,
before any work (``human_labels``), tied to each sample's chunks as it is scored (the whole
texts, not the rows' cut ones), and turned into each variant's ``confidence`` block once every
sample is scored.

The labels come from a file (``harness.confidence.labels``), from the dataset's own qrels
for a seeded uniform draw of ``run.human_label_samples`` samples (``qrels``: a chunk the
qrels do not name is not relevant; grades from the dataset's ``min_grade``), or from the
human feedback on MLflow traces (``mlflow``: ``harness.confidence.traces``). A labelled
sample's row gets ``human_verdicts`` (rank order) and, beside each variant's ``score``, its
``human_score``.

Which variants get a block: those that say how they score human verdicts
(``Metric.human_score``): every LLM variant, ``id_ranked`` and ``non_llm`` (average precision
over the ranked chunks), the judge-free ones included: their "judge" is the id or string
match, and the block says how far the labels move its mean. ``id_based`` (set precision,
duplicates collapsed) has none, nor has a metric of the user's own that does not declare it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.confidence.labels import Label, LabelFile, read_labels
from harness.confidence.match import Judged, Matched, RunSample, judged, match
from harness.confidence.ppi import NOT_DRAWN, variant_confidence
from harness.confidence.sheet import drawn_as_recorded, read_draw
from harness.confidence.strata import stratify_block
from harness.core.errors import ConfigError
from harness.core.protocols import Parts
from harness.core.settings import MLFLOW, QRELS
from harness.core.types import RagSample
from harness.run.tally import Tally

Scorer = Callable[[Sequence[int]], float]


def put_after(entry: dict[str, Any], after: str, key: str, value: Any) -> None:
    """Set ``entry[key]`` right after ``after`` (at the end when ``after`` is absent)."""
    items = [(k, v) for k, v in entry.items() if k != key]
    entry.clear()
    for k, v in items:
        entry[k] = v
        if k == after:
            entry[key] = value
    entry[key] = value


@dataclass
class HumanLabels:
    """A run's human labels, and what it collects while it scores.

    Args:
        source: Where the labels come from, as the block says it.
        scorers: Per variant (``None``: a run of one), its ``scorer``.
        level: ``run.confidence_level``.
        labels: The file's labels by sample id (a file or MLflow).
        file: The labels file (``None``: the qrels).
        drawn: The qrels' drawn sample ids, and the draw's record.
        min_grade: The dataset's, for the qrels' grades.
        seed: ``run.seed``, for the bootstrap interval of few labels.
        strata_column: ``run.strata``: the blocks are stratified by each sample's stratum.
    """

    source: str
    scorers: dict[str | None, Scorer | None]
    level: float
    labels: dict[str, list[Label]] = field(default_factory=dict)
    file: LabelFile | None = None
    drawn: set[str] = field(default_factory=set)
    draw: dict[str, Any] | None = None
    min_grade: float = 1.0
    seed: int = 0
    strata_column: str | None = None
    strata: dict[str, str] = field(default_factory=dict)
    verdicts: dict[str, tuple[int, ...]] = field(default_factory=dict)
    judged: dict[str | None, list[Judged]] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    counts: Matched = field(default_factory=Matched)

    def human_verdicts(self, sample: RagSample) -> tuple[int, ...] | None:
        """The sample's human verdicts in rank order, when every chunk of it has one."""
        ids = tuple(sample.retrieved_context_ids or ())
        if self.file is None:
            if sample.id not in self.drawn:
                return None
            self.seen.add(sample.id)
            refs, grades = sample.reference_context_ids or (), sample.reference_context_grades
            relevant = {r for i, r in enumerate(refs)
                        if grades is None or grades[i] >= self.min_grade}
            self.counts.rows += len(ids)
            self.counts.used += len(ids)
            return tuple(int(i in relevant) for i in ids)
        mine = self.labels.get(sample.id)
        if mine is None:
            return None
        self.seen.add(sample.id)
        chunks = RunSample(sample.id, ids, tuple(sample.retrieved_contexts or ()))
        got = match(LabelFile(self.file.path, tuple(mine), 0), [chunks])
        self.counts.used += got.used
        self.counts.unknown_chunks += got.unknown_chunks
        self.counts.partial_samples += got.partial_samples
        return got.verdicts.get(sample.id)

    def observe(self, sample: RagSample, row: dict[str, Any]) -> None:
        """Note one scored sample: its row gets the human verdicts and each variant's human
        score; each variant's score (and, when labelled, its verdicts) is kept."""
        verdicts = self.human_verdicts(sample)
        if sample.stratum is not None:
            self.strata[sample.id] = sample.stratum
        if verdicts is not None:
            self.verdicts[sample.id] = verdicts
            put_after(row, "verdicts", "human_verdicts", list(verdicts))
        for name, score in self.scorers.items():
            got = judged(row, name)
            kept = got if verdicts is not None else Judged(got.id, got.score)
            self.judged.setdefault(name, []).append(kept)
            entry = row if name is None else (row.get("variants") or {}).get(name)
            if verdicts is not None and score is not None and isinstance(entry, dict):
                put_after(entry, "score", "human_score", score(verdicts))

    def matched(self) -> Matched:
        """The verdicts of the fully labelled samples with the counts of what did not fit."""
        out = self.counts
        out.verdicts = self.verdicts
        if self.file is not None:
            out.rows, out.blank = len(self.file.labels), self.file.blank
            out.unknown_samples = sum(len(v) for k, v in self.labels.items()
                                      if k not in self.seen)
        return out

    def finish(self, tally: Tally) -> None:
        """Each variant's ``confidence`` block onto ``tally`` (a ``ConfigError`` when fewer
        than 2 labelled samples were scored)."""
        matched = self.matched()
        if self.file is None:
            random_draw, note = True, None
        elif self.source == MLFLOW:
            random_draw, note = False, NOT_DRAWN
        else:
            record = read_draw(self.file.path)
            random_draw, note = drawn_as_recorded(list(matched.verdicts), record)
            by = None if record is None else record.get("by")
            if isinstance(by, str) and by != self.strata_column:
                note = ((note + "; ") if note else "") + (
                    f"the labels were drawn by {by} (harness label --by): set run.strata={by} "
                    "so that each value's samples count by their share of the run")
        for name, score in self.scorers.items():
            if score is None:
                continue
            try:
                block = variant_confidence(self.judged.get(name, []), matched, score,
                                           self.level, random_draw, note, self.seed)
            except ConfigError as e:  # too few labelled samples: the outputs stay, exit 3
                tally.no_interval = f"{e}; {_label_counts(matched.counts())}"
                return
            if self.strata_column is not None:
                block = stratify_block(
                    block, {s.id: s.score for s in self.judged.get(name, [])},
                    {k: score(v) for k, v in matched.verdicts.items()}, self.strata,
                    self.strata_column, self.level, self.seed)
            block["labels_source"] = self.source
            if self.file is not None and self.file.skipped:
                block["labels"]["skipped_feedback"] = self.file.skipped
            if self.draw is not None:
                block["draw"] = self.draw
            target = tally if name is None else tally.variants[name]
            target.confidence = block


def _label_counts(counts: dict[str, int]) -> str:
    """What became of the label rows, for the line of a run left without an interval."""
    said = [f"{counts[k]:,} {what}" for k, what in (
        ("unknown_samples", "name samples this run does not have"),
        ("unknown_chunks", "name chunks their sample did not retrieve"),
        ("partially_labelled_samples", "samples are labelled in part"),
        ("blank_rows", "rows have no verdict yet"),
    ) if counts.get(k)]
    rows, kept = counts.get("label_rows", 0), " (the run's outputs are kept, without an interval)"
    if not rows and counts.get("blank_rows"):
        return (f"none of its {counts['blank_rows']:,} rows has a verdict yet: fill in the "
                "relevant column (1 relevant, 0 not)" + kept)
    return (f"of {rows:,} label rows, " + ", ".join(said) if said
            else f"{rows:,} label rows") + kept


def human_labels(parts: Parts) -> HumanLabels | None:
    """The run's labels (``run.human_labels``), read and checked when the parts are built,
    before any work; ``None`` without. Bad labels are one ``DatasetError`` naming the file,
    line and field; labels the run cannot score are one ``ConfigError``."""
    run = parts.settings
    if run.human_labels is None:
        return None
    check_extra()
    keys: list[str | None] = list(parts.variants) or [None]
    members = [m for _, m in parts.members][: len(keys)]  # a panel of one is a run of one
    scorers = {k: m.human_score for k, m in zip(keys, members, strict=True)}
    if not any(scorers.values()):
        raise ConfigError(f"run.human_labels: {_lacking(parts)}")
    min_grade = parts.dataset.min_grade
    out = HumanLabels(run.human_labels, scorers, run.confidence_level, min_grade=min_grade,
                      seed=run.seed, strata_column=run.strata)
    if run.human_labels == QRELS:
        out.drawn, out.draw, out.source = _qrels_draw(parts)
        return out
    if run.human_labels == MLFLOW:
        out.file = _trace_labels(parts)
    else:
        out.file = read_labels(run.human_labels, min_grade)
        out.source = out.file.path
        if not out.file.labels:
            raise ConfigError(
                f"run.human_labels: none of the {out.file.blank:,} rows of {out.source} has a "
                "verdict yet: fill in the relevant column (1 relevant, 0 not), or drop "
                "run.human_labels")
    for label in out.file.labels:
        out.labels.setdefault(label.sample_id, []).append(label)
    _check_ids(out, parts)
    return out


def _lacking(parts: Parts) -> str:
    """Why no variant of the run can score the labels: what each lacks."""
    names = ", ".join(f"{name} ({type(m).__module__}.{type(m).__qualname__})"
                      for name, m in parts.members)
    several = len(parts.members) > 1
    return (f"metric{'s' if several else ''} {names} {'have' if several else 'has'} no "
            "human_score, which scores a sample's labelled chunks (1 relevant, 0 not, in rank "
            "order) as the metric scores its own verdicts, so the labels cannot be scored and "
            "there is no interval; use metric=id_ranked or an LLM variant (average precision; "
            "id_based scores set precision over ids), or give your metric class a human_score "
            "(harness.metrics.ranking.average_precision with its eps, for one)")


def check_extra() -> None:
    """The interval's library is installed (``ppi-python``), before any work."""
    import importlib.util

    if importlib.util.find_spec("ppi_py") is None:
        raise ConfigError(
            "run.human_labels: the PPI++ interval needs ppi-python, which is not installed; "
            "pip install 'harness-context-precision[confidence]' (or drop run.human_labels)")


def _check_ids(labels: HumanLabels, parts: Parts) -> None:
    """The labels name samples of this run's dataset: none matching is refused before any
    work (ids written another way, the wrong file); some not matching are counted when
    the run ends (``unknown_samples``)."""
    if not labels.labels or labels.file is None:
        return
    ids = {s.id for s in parts.dataset.samples(parts.settings.limit)}
    if ids.isdisjoint(labels.labels):
        given = next(iter(labels.labels))
        some = f"; a sample of the dataset: {next(iter(ids))!r}" if ids else ""
        raise ConfigError(
            f"run.human_labels: none of the {len(labels.labels):,} sample ids of "
            f"{labels.source} is a sample of {parts.dataset.source} (a labelled id: "
            f"{given!r}{some}); label this run's samples (harness label RUN_DIR N draws "
            "them), or check run.limit and the dataset")


def _qrels_draw(parts: Parts) -> tuple[set[str], dict[str, Any], str]:
    """The seeded uniform draw of ``run.human_label_samples`` of the samples that have
    reference ids (``random.Random(run.seed).sample``, as ``harness label`` draws)."""
    run = parts.settings
    n = run.human_label_samples
    assert n is not None  # RunSettings checked it
    population = list(dict.fromkeys(
        s.id for s in parts.dataset.samples(run.limit) if s.reference_context_ids is not None))
    if n > len(population):
        raise ConfigError(
            f"run.human_label_samples: {n} samples asked for, but {len(population)} samples "
            f"of {parts.dataset.source} have reference ids (qrels); ask for at most that many")
    drawn = random.Random(run.seed).sample(population, n)
    record = {"seed": run.seed, "n": n, "population": len(population), "drawn": drawn}
    source = (f"qrels of {parts.dataset.source} (seed {run.seed}, {n} of "
              f"{len(population)} samples drawn)")
    return set(drawn), record, source


def _trace_labels(parts: Parts) -> LabelFile:
    """The human feedback on the traces of ``dataset=mlflow_traces``, as labels."""
    try:
        from harness.confidence.traces import trace_labels  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise ConfigError("run.human_labels=mlflow: this version cannot read human feedback "
                          "on traces yet (harness.confidence.traces); export the labels to "
                          "a file and set run.human_labels=FILE") from None
    labels: LabelFile = trace_labels(parts.dataset)
    return labels
