"""The verdicts of a run over ``dataset=mlflow_traces`` written back onto the traces, as
MLflow feedback assessments on the RETRIEVER span each sample came from, so the trace view of
the MLflow UI shows which retrieved documents were judged relevant.

Per sample: ``context_precision/<metric>`` (the score, or an error when unscored) and one
``context_precision/<metric>/chunk`` per retrieved document (its verdict and the judge's
reason; ``metadata.chunk_index`` its rank from 0, as MLflow's ``RetrievalRelevance`` does).
A rerun replaces what an earlier run of the same metric wrote (same source id), so the
trace holds one set of them; assessments from any other source are left alone. A run of
several variants (``metric=[a,b]``) writes each variant's set, named and sourced as a run of
that variant alone writes it, so either replaces the other.

It lives beside the reader (``harness.datasets.mlflow_traces``), which owns the sample-id
convention (``TRACE`` or ``TRACE/SPAN``) and the store setting.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.core.errors import DatasetError, TrackingError
from harness.core.redact import redact_uri

#: The source id of what the harness writes, per metric.
SOURCE_ID = "harness/{metric}"
#: Variants whose verdicts come from an LLM judge.
JUDGED = ("llm_with_reference", "llm_without_reference", "contextual_precision")


@dataclass
class Written:
    """What ``write_feedback`` did (``metrics``: the variants written, in order)."""

    traces: int = 0
    assessments: int = 0
    replaced: int = 0
    metrics: list[str] = field(default_factory=list)


def names(metric: str) -> tuple[str, str]:
    """The assessment names of the sample score and of a chunk's verdict."""
    return f"context_precision/{metric}", f"context_precision/{metric}/chunk"


def variant_rows(row: Mapping[str, Any], metric: str) -> list[tuple[str, Mapping[str, Any]]]:
    """``(variant, row)`` for each variant ``row`` holds, each as a run of that variant alone
    writes it (``metric=[a,b]``: its ``score``, ``verdicts``, ``error`` and per-chunk
    ``reasons`` from ``variants``, the chunk ids from ``chunks``); ``[(metric, row)]`` for a
    run of one variant."""
    entries = row.get("variants")
    if not isinstance(entries, Mapping) or not entries:
        return [(metric, row)]
    ids = [c.get("id") if isinstance(c, Mapping) else None for c in row.get("chunks") or []]
    out: list[tuple[str, Mapping[str, Any]]] = []
    for name, entry in entries.items():
        entry = entry if isinstance(entry, Mapping) else {}
        verdicts, reasons = entry.get("verdicts") or [], entry.get("reasons") or []
        chunks = [{"id": ids[i] if i < len(ids) else None,
                   "verdict": verdicts[i] if i < len(verdicts) else None,
                   "reason": reasons[i] if i < len(reasons) else None}
                  for i in range(max(len(ids), len(verdicts)))]
        out.append((str(name), {"id": row["id"], "score": entry.get("score"),
                                "verdicts": entry.get("verdicts"), "error": entry.get("error"),
                                "chunks": chunks}))
    return out


def write_feedback(rows: Iterable[Mapping[str, Any]], tracking_uri: str, metric: str,
                   spans: Mapping[str, tuple[str, str]] | None = None) -> Written:
    """Write each row's score and chunk verdicts onto its trace, replacing this metric's
    earlier ones. ``rows`` are ``samples.jsonl`` rows of a run over ``dataset=mlflow_traces``;
    a run of several variants writes each one's, named as a run of it alone names them.

    Args:
        rows: The run's rows.
        tracking_uri: The store.
        metric: The run's ``metric`` (a row's ``variants`` name each variant instead).
        spans: Sample id -> ``(trace id, span id)`` the dataset read it from; without it
            (or for an id it lacks) the span is ``TRACE/SPAN`` of the id, or the trace's
            only RETRIEVER span.
    """
    from mlflow.entities import SpanType
    from mlflow.exceptions import MlflowException
    from mlflow.tracing.client import TracingClient

    by_trace: dict[str, list[tuple[str | None, Mapping[str, Any]]]] = {}
    done = Written()
    for row in rows:
        trace_id, _, span = str(row["id"]).partition("/")
        if spans is not None and str(row["id"]) in spans:
            trace_id, span = spans[str(row["id"])]
        by_trace.setdefault(trace_id, []).append((span or None, row))
        for name, _ in variant_rows(row, metric):
            if name not in done.metrics:
                done.metrics.append(name)
    sources = {name: _source(name) for name in done.metrics}
    ours = {s.source_id for s in sources.values()}
    client = TracingClient(tracking_uri)
    # a refused write is our one line below, not first MLflow's SQL error and two tracebacks
    # (it logs them, then raises what we report)
    logging.getLogger("mlflow.store.db.utils").setLevel(logging.CRITICAL)
    for trace_id, samples in by_trace.items():
        try:
            trace: Any = client.get_trace(trace_id)
            spans_of = [s.span_id for s in trace.search_spans(span_type=SpanType.RETRIEVER)]
            old = [a for a in trace.info.assessments or []
                   if a.source is not None and a.source.source_id in ours]
            for span_id, row in samples:
                on = span_id or (spans_of[0] if len(spans_of) == 1 else None)
                if on not in spans_of:
                    raise DatasetError(f"trace {trace_id}", f"sample {row['id']}: no such "
                                       "RETRIEVER span to write its verdicts on")
                for name, own in variant_rows(row, metric):
                    for feedback in _feedback(own, name, sources[name], on):
                        client.log_assessment(trace_id, feedback)
                        done.assessments += 1
            for assessment in old:  # after the new ones are in: a failure loses nothing
                client.delete_assessment(trace_id, str(assessment.assessment_id))
                done.replaced += 1
        except MlflowException as e:
            raise TrackingError(f"cannot write feedback on trace {trace_id} at "
                                f"{redact_uri(tracking_uri)} ({e.message.splitlines()[0]})"
                                ) from None
        done.traces += 1
    return done


def _source(metric: str) -> Any:
    from mlflow.entities import AssessmentSource

    return AssessmentSource(source_type="LLM_JUDGE" if metric in JUDGED else "CODE",
                            source_id=SOURCE_ID.format(metric=metric))


def _feedback(row: Mapping[str, Any], metric: str, source: Any, span_id: str | None
              ) -> list[Any]:
    from mlflow.entities import AssessmentError, Feedback

    sample_name, chunk_name = names(metric)
    if row.get("score") is None:
        return [Feedback(name=sample_name, source=source, span_id=span_id,
                         error=AssessmentError(error_code="UNSCORED",
                                               error_message=str(row.get("error"))))]
    chunks = row.get("chunks") or []
    out = [Feedback(name=sample_name, value=float(row["score"]), source=source, span_id=span_id,
                    rationale=f"context precision ({metric}) of {len(chunks)} ranked documents",
                    metadata={"verdicts": str(row.get("verdicts"))})]
    for rank, chunk in enumerate(chunks):
        verdict = chunk.get("verdict")
        if verdict is None:
            continue
        out.append(Feedback(
            name=chunk_name, value=verdict, source=source, span_id=span_id,
            rationale=chunk.get("reason") or None,
            metadata={"chunk_index": str(rank), "doc_id": str(chunk.get("id"))}))
    return out
