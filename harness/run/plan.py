"""What a job scores and how: the retriever prepared with the corpus, the batches (read and
validated whole first for judged metrics), the progress bar, the scoring loop's settings."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from harness.core.boundary import guarded
from harness.core.errors import ConfigError, DatasetError
from harness.core.objectives import parse as parse_objective
from harness.core.protocols import Parts
from harness.core.settings import RunSettings
from harness.core.types import RagSample
from harness.run.advice import corpus_fix, field_fix
from harness.run.loop import Tally, evaluate, retrieved
from harness.run.missed import CorpusTexts
from harness.run.questions import check_all, check_retrieval, watched
from harness.run.tally import MAX_REASONS
from harness.run.timing import Timed


def progress_bar(settings: RunSettings, total: int) -> tuple[Any, Callable[[int], None] | None]:
    if settings.quiet or not settings.progress:
        return None, None
    from tqdm import tqdm

    if settings.limit is not None:
        total = min(total, settings.limit)
    # Into a file or a pipe (a CI log) every redraw is a line of its own: redraw rarely, so
    # a short run leaves one line (the last), a long one a line every half minute.
    redraw = 0.1 if sys.stderr.isatty() else 30.0
    bar = tqdm(
        total=total, unit=" samples", delay=1.0, file=sys.stderr, desc="scoring",
        dynamic_ncols=True, smoothing=0.1, mininterval=redraw,
    )
    return bar, bar.update


def timed_retriever(parts: Parts) -> Timed:
    """The run's retriever, timed (``harness.run.timing``) when it searches."""
    inner = parts.retriever
    return Timed(inner, parts.settings.retrieval_batch_size if inner.searches else None)


def prepare_retriever(parts: Parts) -> None:
    """Give the retriever the dataset's corpus to index (corpus retrievers need one); a
    corpus with no retrieved lists and a retriever that searches nothing is refused."""
    corpus = parts.dataset.corpus()
    if parts.retriever.needs_corpus and corpus is None:
        kind = parts.dataset.describe().get("format")
        raise ConfigError(
            f"retriever {parts.retriever.label} searches a corpus, but the dataset "
            f"({kind}) has none; {corpus_fix(kind)}"
        )
    if corpus is not None:
        check_retrieval(parts, lambda: corpus)
    parts.retriever.prepare(corpus)


def _load_for_judging(parts: Parts) -> list[RagSample]:
    """Read and validate every record, and check the endpoint, before the first judge call."""
    read = check_all(parts, list(parts.dataset.samples(parts.settings.limit)))
    samples = parts.retriever.retrieve_batch(read)
    if not samples:
        raise DatasetError(parts.dataset.source, "contains no records")
    for field in sorted(parts.metric.requires):
        if all(getattr(s, field) is None for s in samples):
            who = parts.needing(field)[0]
            fix = field_fix(parts.dataset.describe().get("format"), field,
                            parts.dataset.corpus() is not None)
            raise ConfigError(
                f"metric {who} needs the field '{field}', which no record of "
                f"{parts.dataset.source} has; {fix}"
            )
    guarded(f"metric {parts.metric.name}", "preflight()", parts.metric.preflight)
    return samples


def plan(parts: Parts) -> tuple[Iterable[list[RagSample]], int]:
    """Prepare the retriever and the batches to score, with a count for progress.

    Metrics that ``prevalidate`` (the judged ones) get the whole dataset read, validated
    and retrieved first, and the endpoint checked, before any call; the others stream.
    """
    prepare_retriever(parts)
    size = parts.batch_size
    if parts.metric.prevalidate:
        samples = _load_for_judging(parts)
        return (samples[i : i + size] for i in range(0, len(samples), size)), len(samples)
    # a slow search hands on what it found about every second (rows kept if interrupted)
    per_call = parts.settings.retrieval_batch_size if parts.retriever.searches else None
    batches = retrieved(parts.retriever,
                        watched(parts, parts.dataset.batches(size, parts.settings.limit)),
                        per_call)
    return batches, parts.dataset.estimate_count()


def _observer(parts: Parts) -> Callable[[RagSample, dict[str, Any]], None] | None:
    """What sees each sample and its row before it is written: ``run.strata`` puts the
    sample's stratum in the row, human labels their verdicts (both, in that order)."""
    from harness.run.strata import with_stratum

    labels, strata = parts.labels, parts.settings.strata is not None
    if labels is None:
        return with_stratum if strata else None
    if not strata:
        return labels.observe

    def both(sample: RagSample, row: dict[str, Any]) -> None:
        with_stratum(sample, row)
        labels.observe(sample, row)

    return both


def score(
    parts: Parts,
    batches: Iterable[list[RagSample]],
    sink: Any,
    progress: Callable[[int], None] | None = None,
    variants: Sequence[str] | None = None,
    max_reasons: int = MAX_REASONS,
) -> Tally:
    """Score ``batches`` with the run's metric and retrieval metrics; rows go to ``sink``
    (``variants``: the names of the variants it scores at once; default: a ``Panel``'s;
    ``max_reasons``: distinct unscored reasons counted, ``Tally.max_reasons``); with
    ``run.human_labels``, the labelled rows get the human verdicts and the tally each
    variant's ``confidence`` block (``harness.run.confidence``)."""
    min_grade = parts.settings.retrieval_min_grade
    if min_grade is None:
        min_grade = parts.dataset.min_grade
    names = parts.variants if variants is None else variants
    labels = parts.labels  # read and checked when the parts were built
    tally = evaluate(batches, parts.metric, sink, progress, parts.settings.retrieval_ks,
                     min_grade, row_text_chars=parts.settings.row_text_chars,
                     beyond_depth=parts.settings.retrieval_beyond_depth or
                     [o.name for o in parse_objective(parts.settings.objective)],
                     variants=names, documents=CorpusTexts(parts.dataset.corpus),
                     max_reasons=max_reasons,
                     observe=_observer(parts),
                     report=parts.settings.report)
    if labels is not None:
        labels.finish(tally)
    return tally

