"""The context-precision variants as MLflow GenAI scorers::

    from harness.testing.mlflow_scorers import ContextPrecision

    mlflow.genai.evaluate(data=traces, scorers=[
        ContextPrecision("llm_with_reference", overrides=["judge=local", "judge.base_url=URL"]),
        ContextPrecision("id_ranked"),
    ])

A row with a trace is scored per RETRIEVER span (its ranked documents, the trace's question
and response; the reference from the row's ``expectations``, else the trace's); a row
without one is read from ``inputs`` as a harness record (ragas or deepeval field names),
``outputs`` as the response. Each sample is scored by ``harness.evaluate``: the same code,
the same scores as a harness run on the same data, and the same verdict cache.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from mlflow.entities import AssessmentError, AssessmentSource, Feedback
from mlflow.genai.scorers import Scorer

from harness.datasets.mlflow_spans import (
    EXPECTED_CONTEXT,
    ID_KEYS,
    reference_contexts_of,
    reference_of,
    trace_samples,
)
from harness.testing.asserts import merged

__all__ = ["ContextPrecision", "context_precision_scorers"]

#: The record fields (ragas, ragas legacy, deepeval) that hold a row's retrieved chunks.
CHUNK_KEYS = frozenset({"retrieved_contexts", "contexts", "retrieval_context"})
#: Settings every scorer run starts from: a sample left unscored is reported, not raised.
BASE = ("run.max_unscored_frac=1", "run.retrieval_ks=[]")


class NoChunks(ValueError):
    """A row holds nothing retrieved to score."""


class ContextPrecision(Scorer):
    """One variant as an MLflow scorer (feedback ``context_precision/<metric>``).

    Args:
        metric: ``id_based``, ``id_ranked``, ``non_llm``, ``llm_with_reference``,
            ``llm_without_reference`` or ``contextual_precision``.
        overrides: Settings in CLI syntax (the judge: ``judge=local``,
            ``judge.base_url=URL``, ``judge.model=M``; ``metric.soft=true``, ...).
        name: The feedback's name (default ``context_precision/<metric>``).
    """

    metric: str = "llm_with_reference"
    overrides: list[str] = []

    def __init__(self, metric: str = "llm_with_reference", *, overrides: Sequence[str] = (),
                 name: str | None = None, **kwargs: Any) -> None:
        fields: dict[str, Any] = {"name": name or f"context_precision/{metric}",
                                  "metric": metric, "overrides": list(overrides), **kwargs}
        super().__init__(**fields)

    def __call__(self, *, inputs: Any = None, outputs: Any = None,
                 expectations: dict[str, Any] | None = None, trace: Any = None,
                 session: Any = None) -> Feedback | list[Feedback]:
        """Score the row: one feedback per sample (per RETRIEVER span of a trace)."""
        from harness.api import evaluate

        try:
            records, spans = self.records(inputs, outputs, expectations, trace)
        except NoChunks as e:
            return Feedback(name=self.name, error=AssessmentError(
                error_code="NO_RETRIEVED_CHUNKS", error_message=str(e)))
        result = evaluate(records, self.metric, overrides=merged(BASE, self.overrides))
        source = AssessmentSource(source_type="CODE", source_id=f"harness/{self.metric}")
        out = [self._feedback(row, source, span)
               for row, span in zip(result.rows, spans, strict=True)]
        return out[0] if len(out) == 1 else out

    def records(self, inputs: Any, outputs: Any, expectations: Mapping[str, Any] | None,
                trace: Any) -> tuple[list[dict[str, Any]], list[str | None]]:
        """The harness records of a row, and the span each came from (``None``: no trace)."""
        if trace is not None:
            expected = dict(expectations) if expectations else None
            pairs = trace_samples(trace, ID_KEYS, "trace", None, expected)
            if pairs:
                return ([{k: list(v) if isinstance(v, tuple) else v
                          for k, v in dataclasses.asdict(s).items() if v is not None}
                         for s, _ in pairs], [o.span_id for _, o in pairs])
        if not isinstance(inputs, Mapping) or not CHUNK_KEYS & set(inputs):
            raise NoChunks(f"{self.name}: the row's trace has no RETRIEVER span and its inputs "
                           f"no retrieved chunks (one of {', '.join(sorted(CHUNK_KEYS))})")
        record = {"id": "row", **inputs}
        if isinstance(outputs, str):
            record.setdefault("response", outputs)
        expected = dict(expectations or {})
        if reference_of(expected) is not None:
            record.setdefault("reference", reference_of(expected))
        if EXPECTED_CONTEXT in expected:
            texts, ids = reference_contexts_of("expectations", expected, ID_KEYS)
            if ids is not None:
                record.setdefault("reference_context_ids", list(ids))
            if texts is not None:
                record.setdefault("reference_contexts", list(texts))
        return [record], [None]

    def _feedback(self, row: Mapping[str, Any], source: AssessmentSource, span: str | None
                  ) -> Feedback:
        if row.get("score") is None:
            return Feedback(name=self.name, source=source, span_id=span, error=AssessmentError(
                error_code="UNSCORED", error_message=str(row.get("error"))),
                metadata=self._where(span, row))
        chunks = row.get("chunks") or []
        said = "; ".join(f"{k}. {c.get('id')}: {c.get('verdict')}"
                         + (f" ({c['reason']})" if c.get("reason") else "")
                         for k, c in enumerate(chunks, 1))
        return Feedback(name=self.name, value=float(row["score"]), source=source, span_id=span,
                        rationale=said or None, metadata=self._where(span, row))


    @staticmethod
    def _where(span: str | None, row: Mapping[str, Any]) -> dict[str, str]:
        # mlflow.genai.evaluate moves every feedback onto the root span: keep the retriever's
        where = {"verdicts": str(row.get("verdicts"))}
        return where if span is None else {**where, "retriever_span_id": span}


def context_precision_scorers(metrics: Sequence[str], overrides: Sequence[str] = ()
                              ) -> list[ContextPrecision]:
    """A scorer per variant, with the same settings."""
    return [ContextPrecision(m, overrides=overrides) for m in metrics]
