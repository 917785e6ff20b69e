"""The evaluation loop: batches of samples in, per-sample rows and a summary out.

It knows nothing of Hydra or MLflow, so the CLI, the Python API and tests share it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any

from harness.core.boundary import guarded, quote
from harness.core.errors import ComponentFailed
from harness.core.protocols import Metric, Retriever
from harness.core.redact import redact
from harness.core.text import clip
from harness.core.types import RagSample, SampleResult
from harness.metrics.retrieval import at_cutoffs, cutoff_values, sample_grades
from harness.run.batching import add_in_order, older_objects_frozen
from harness.run.missed import CorpusTexts, explain_low_scores
from harness.run.outputs import OutputError, json_lines
from harness.run.outputs.folder import hint, reason
from harness.run.outputs.rows import IdChunk, plain_chunks
from harness.run.sampling import Evenly
from harness.run.tally import (  # their home was this module: still importable here
    MAP_SAMPLES,
    MAX_RANK,
    MAX_REASONS,
    REPORT_ROWS,
    REPORT_UNSCORED,
    Scores,
    Tally,
    significant,
)

__all__ = ["FLUSH_S", "MAP_SAMPLES", "MAX_RANK", "REPORT_ROWS", "REPORT_UNSCORED", "Scores",
           "Tally", "evaluate", "explained", "retrieval_metrics", "retrieved", "significant"]

#: Seconds of searching after which the samples found so far are scored and their rows
#: written: a slow retriever's rows reach ``samples.jsonl.partial`` about every second, not
#: once per batch of ``run.batch_size`` (1,024) samples, so an interrupted run keeps them.
FLUSH_S = 1.0
#: Rows encoded (one call) and written together: enough to make the call's cost small,
#: few enough that the rows held meanwhile cost the garbage collector little.
ROWS_PER_WRITE = 128


def retrieved(retriever: Retriever, batches: Iterable[list[RagSample]],
              per_call: int | None = None, every: float = FLUSH_S,
              ) -> Iterator[list[RagSample]]:
    """Each batch with its retrieval. A retriever that searches ``per_call`` questions per
    call (``run.retrieval_batch_size``; ``None``: the whole batch in one) hands on what it
    has found whenever ``every`` seconds have passed since the last hand-over, so those
    samples are scored and written as they come (a fast search still hands on whole
    batches), and what it found before a search that failed or was interrupted. What is
    searched, and how, is unchanged."""
    search = retriever.retrieve_batch
    for batch in batches:
        if per_call is None or len(batch) <= per_call:
            yield search(batch)
            continue
        began, found = time.monotonic(), []
        for start in range(0, len(batch), per_call):
            try:
                found.extend(search(batch[start : start + per_call]))
            except BaseException:  # a failed search, a signal: what was found is scored
                if found:
                    yield found  # the loop scores and writes these, then asks again:
                raise  # the search's error (or the signal) goes on from here
            if time.monotonic() - began >= every and start + per_call < len(batch):
                yield found
                began, found = time.monotonic(), []
        yield found


def evaluate(
    batches: Iterable[list[RagSample]],
    metric: Metric,
    sink: IO[str] | None = None,
    progress: Callable[[int], None] | None = None,
    retrieval_ks: Sequence[int] = (),
    min_grade: float = 1,
    row_text_chars: int | None = 300,
    beyond_depth: bool | Sequence[str] = True,
    variants: Sequence[str] = (),
    documents: CorpusTexts | None = None,
    max_reasons: int = MAX_REASONS,
    observe: Callable[[RagSample, dict[str, Any]], None] | None = None,
    report: bool = True,
) -> Tally:
    """Score every batch with ``metric``, writing one JSON row per sample to ``sink``.

    Args:
        batches: Samples, in input order.
        metric: The variant to score with.
        sink: Where ``samples.jsonl`` rows go (``None``: nowhere); flushed per batch.
        progress: Called with the number of samples just finished (a progress bar).
        retrieval_ks: Cut-offs of the retrieval metrics (recall@k, ndcg@k) computed beside
            context precision for samples with reference ids; MRR is always added.
            Empty: no retrieval metrics.
        min_grade: The lowest reference grade that counts as relevant for them.
        row_text_chars: Characters of the question and of each chunk's text kept in a
            row (longer ones end in ``…``); 0: none (chunk ids only); ``None``: all.
        beyond_depth: Which names of cut-offs above the longest retrieved list stay in the
            summary, scored as trec_eval scores them (``True``, the default: all;
            ``False``: none; ``retrieval_cutoffs`` says which).
        variants: The names of the variants ``metric`` scores at once (a ``Panel``'s, whose
            results hold each one's under ``details["variants"]``), each counted on its
            own (``Tally.variants``); empty: one variant.
        documents: The dataset's corpus by id, for the texts of the relevant documents
            a row lists as missed (``harness.run.missed``).
        max_reasons: Distinct unscored reasons counted (per variant); the rest are counted
            as ``(other reasons)``.
        observe: Called with each sample and its row before the row is written (human
            labels: ``harness.run.confidence.HumanLabels.observe`` adds to the row).
        report: Keep rows for the HTML report (``Tally.report_rows``); ``False``: none (a
            run without ``report.html``: kept rows cost memory and the garbage collector's
            time, about a fifth of the loop at 10 ids a row).

    Returns:
        The tally: counts, scores and unscored reasons.
    """
    keep = beyond_depth if isinstance(beyond_depth, bool) else tuple(beyond_depth)
    tally = Tally(metric.name, retrieval_ks=tuple(retrieval_ks), beyond_depth=keep,
                  variants={n: Scores(n, max_reasons=max_reasons) for n in variants},
                  max_reasons=max_reasons)
    if not report:
        tally.report_rows, tally.report_unscored = Evenly(0), Evenly(0)

    ks = tuple(dict.fromkeys(retrieval_ks))  # (a repeated k names the same values)
    # each sample's retrieval values, added to the tally's totals when its row is written
    pending: list[tuple[float, ...]] = []
    names: tuple[str, ...] = ()

    def consume(sample: RagSample, result: SampleResult) -> dict[str, Any]:
        nonlocal names
        ids, grades = sample.retrieved_context_ids, None
        if ks and ids is not None and sample.reference_context_ids is not None:
            grades = sample_grades(sample)
            names, values = cutoff_values(ids, grades, ks, min_grade)
            result.details.update(zip(names, values, strict=True))
            pending.append(values)
            if len(ids) > tally.retrieval_depth:
                tally.retrieval_depth = len(ids)
        tally.note_ids(sample)
        if result.score is None and result.error:
            result.error = redact(result.error)
        row = explain_low_scores(explained(result.to_row(), sample, row_text_chars, True), sample,
                                 row_text_chars, min_grade, documents, grades)
        if observe is not None:
            observe(sample, plain_chunks(row))
        tally.record(result, row)
        return row

    def write(rows: list[dict[str, Any]]) -> None:
        if pending:
            add_in_order(tally.retrieval, names, pending)
            tally.n_retrieval += len(pending)
            pending.clear()
        if sink is not None and rows:
            text = json_lines(rows)  # one encoding call per batch
            try:
                sink.write(text)
                sink.flush()
            except OSError as e:  # named here: inside score_batch it is no metric's fault
                where = getattr(sink, "name", "the rows file")
                raise OutputError(f"cannot write {where} ({reason(e)}){hint(e)}; the rows "
                                  "written so far are kept there") from None

    component = f"metric {metric.name}"
    with older_objects_frozen():
        _score_batches(batches, metric, component, consume, write, progress)
    tally.duration_s = time.perf_counter() - tally.started
    return tally


def _score_batches(batches: Iterable[list[RagSample]], metric: Metric, component: str,
                   consume: Callable[[RagSample, SampleResult], dict[str, Any]],
                   write: Callable[[list[dict[str, Any]]], None],
                   progress: Callable[[int], None] | None) -> None:
    for batch in batches:
        rows = _InOrder(batch, consume, write, progress)
        results = guarded(component, "score_batch()",
                          lambda: metric.score_batch(batch, rows.on_done))  # noqa: B023
        if not isinstance(results, list) or len(results) != len(batch):
            got = f"{len(results)} results" if isinstance(results, list) else quote(results)
            raise ComponentFailed(
                f"{component}: score_batch() returned {got} for {len(batch)} samples"
            )
        rows.finish(results)


class _InOrder:
    """Writes one batch's rows in input order.

    Slow (judged) samples finish out of order and are reported through ``on_done``: each
    row is written as soon as every row before it is, so an interrupted run keeps what it
    finished. Rows not reported that way are written together by ``finish``.
    """

    def __init__(
        self,
        batch: list[RagSample],
        consume: Callable[[RagSample, SampleResult], dict[str, Any]],
        write: Callable[[list[dict[str, Any]]], None],
        progress: Callable[[int], None] | None,
    ) -> None:
        self.batch, self.consume, self.write, self.progress = batch, consume, write, progress
        self.done: dict[int, SampleResult] = {}
        self.cursor = 0

    def on_done(self, index: int, result: SampleResult) -> None:
        """Take one finished sample's result."""
        self.done[index] = result
        while self.cursor in self.done:
            self.write([self.consume(self.batch[self.cursor], self.done.pop(self.cursor))])
            self.cursor += 1
        if self.progress is not None:
            self.progress(1)

    def finish(self, results: list[SampleResult]) -> None:
        """Write the rows ``on_done`` did not."""
        start, rest = self.cursor, len(self.batch) - self.cursor
        for at in range(start, len(self.batch), ROWS_PER_WRITE):
            pairs = zip(self.batch[at:at + ROWS_PER_WRITE], results[at:at + ROWS_PER_WRITE],
                        strict=True)
            self.write([self.consume(s, r) for s, r in pairs])
        self.cursor = len(self.batch)
        if self.progress is not None and rest:
            self.progress(rest)


def retrieval_metrics(sample: RagSample, ks: Sequence[int], min_grade: float) -> dict[str, float]:
    """``recall_at_<k>`` and ``ndcg_at_<k>`` for each k, and ``mrr``, of one sample's
    retrieval (named so that MLflow, which rejects ``@``, takes them as they are)."""
    return at_cutoffs(sample.retrieved_context_ids or (), sample_grades(sample), ks, min_grade)


def explained(row: dict[str, Any], sample: RagSample, chars: int | None,
              compact: bool = False) -> dict[str, Any]:
    """``row`` with the sample's ``question`` and its ranked ``chunks`` added: each chunk's
    ``id``, ``text`` (trimmed to ``chars``), ``verdict``, ``relevance``, ``similarity``,
    ``reason`` and ``metadata``, where the sample or the metric has them (``compact``: an
    id metric's chunks as ``IdChunk``, written the same)."""
    ids, texts = sample.retrieved_context_ids, sample.retrieved_contexts
    metadata = sample.retrieved_context_metadata
    verdicts = row.get("verdicts")
    if (ids is not None and (chars == 0 or (texts is None and metadata is None))
            and type(verdicts) is list and len(verdicts) == len(ids)
            and "relevance" not in row and "similarities" not in row
            and "reasons" not in row):  # the id metrics: nothing to clip
        if chars != 0 and sample.user_input is not None:
            row["question"] = clip(sample.user_input, chars)
        if compact:
            row["chunks"] = list(map(IdChunk, ids, verdicts))
        else:
            row["chunks"] = [{"id": i, "verdict": v} for i, v in zip(ids, verdicts, strict=True)]
        return row
    if chars == 0:
        texts = metadata = None
    elif sample.user_input is not None:
        row["question"] = clip(sample.user_input, chars)
    per_chunk = {
        "id": ids, "text": texts, "verdict": row.get("verdicts"), "relevance": row.get("relevance"),
        "similarity": row.get("similarities"), "reason": row.get("reasons"),
        "metadata": metadata,
    }
    columns = {k: v for k, v in per_chunk.items() if isinstance(v, list | tuple)}
    n = max((len(v) for v in columns.values()), default=0)
    chunks = []
    for i in range(n):
        chunk = {k: v[i] for k, v in columns.items() if i < len(v)}
        if "text" in chunk:
            chunk["text"] = clip(str(chunk["text"]), chars)
        if not chunk.get("metadata", True):
            del chunk["metadata"]  # a chunk without any
        chunks.append(chunk)
    if ids is not None or texts is not None:
        row["chunks"] = chunks
    return row
