"""One MLflow trace as samples: each RETRIEVER span's ranked documents, the trace's inputs
and outputs as question and response, its expectations as the reference.

MLflow's retriever-span format: ``outputs`` is a list of documents
``{"page_content": str, "metadata": {"doc_uri": ..., "chunk_id": ...}, "id": ...}``.
Credentials in a ``doc_uri`` (``https://user:pass@host``, ``?token=``) are masked as it is
read, in the ids and the metadata alike, so no row, report or artifact holds them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.core.errors import DatasetError
from harness.core.redact import redact, redact_tree
from harness.core.types import RagSample

#: Keys a question or a span's query is read from, in order (a lone string value otherwise).
QUESTION_KEYS = ("question", "query", "user_input", "input", "prompt", "messages")
#: Keys a response is read from, in order.
RESPONSE_KEYS = ("response", "answer", "output", "result", "text", "content", "choices")
#: Where a document's id is read from, in order: ``id`` is the document's own id, the others
#: keys of its metadata.
ID_KEYS = ("doc_uri", "id", "chunk_id")
#: The expectations read as the reference (MLflow's names).
EXPECTED_RESPONSE = ("expected_response", "expected_facts")
EXPECTED_CONTEXT = "expected_retrieved_context"


@dataclass(frozen=True)
class Origin:
    """Where a sample came from: its trace and RETRIEVER span."""

    trace_id: str
    span_id: str


def text_of(value: Any, keys: Sequence[str]) -> str | None:
    """The text ``value`` (a trace's or span's inputs/outputs) holds: a string, the first of
    ``keys`` present, a lone string value, the last user message of a chat, the content of
    an OpenAI reply; ``None`` when it holds none."""
    if isinstance(value, str):
        parsed = _json(value)
        return value if parsed is value else text_of(parsed, keys)
    if isinstance(value, Mapping):
        for key in keys:
            if key in value:
                found = text_of(value[key], keys)
                if found is not None:
                    return found
        strings = [v for v in value.values() if isinstance(v, str)]
        return strings[0] if len(strings) == 1 and len(value) == 1 else None
    if isinstance(value, list) and value:
        chat = [m for m in value if isinstance(m, Mapping) and "content" in m]
        if chat:
            users = [m for m in chat if m.get("role") == "user"] or chat
            return text_of(users[-1]["content"], keys)
        if isinstance(value[0], Mapping) and "message" in value[0]:  # OpenAI choices
            return text_of(value[0]["message"], keys)
    return None


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def documents(where: str, outputs: Any, id_keys: Sequence[str]
              ) -> tuple[tuple[str, ...], tuple[str, ...], tuple[Mapping[str, Any], ...]]:
    """The ranked documents' texts, ids and metadata of a RETRIEVER span's ``outputs``."""
    if isinstance(outputs, str):
        outputs = _json(outputs)
    if not isinstance(outputs, list):
        raise DatasetError(where, "the RETRIEVER span's outputs are not a list of documents "
                                  f"(got {type(outputs).__name__}); return MLflow Documents")
    texts, ids, metadatas = [], [], []
    for rank, doc in enumerate(outputs, 1):
        if not isinstance(doc, Mapping) or not isinstance(doc.get("page_content"), str):
            raise DatasetError(where, f"document {rank} has no page_content text")
        given = doc.get("metadata")
        metadata: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
        found = [doc.get("id") if key == "id" else metadata.get(key) for key in id_keys]
        ident = next((redact(str(v)) for v in found if v not in (None, "")), None)
        texts.append(doc["page_content"])
        ids.append(ident if ident is not None else f"rank-{rank}")
        # a doc_uri's credentials (https://user:pass@host, ?token=) go no further than here
        metadatas.append(redact_tree(dict(metadata)))
    return tuple(texts), tuple(ids), tuple(metadatas)


def expectations(trace: Any) -> dict[str, Any]:
    """The trace's expectations by name (the latest valid one of each)."""
    out: dict[str, Any] = {}
    for assessment in sorted(trace.info.assessments or [],
                             key=lambda a: a.last_update_time_ms or a.create_time_ms or 0):
        if getattr(assessment, "expectation", None) is not None and assessment.valid is not False:
            out[assessment.name] = assessment.expectation.value
    return out


def reference_of(expected: Mapping[str, Any]) -> str | None:
    """The reference answer of the expectations (``expected_response``, else the
    ``expected_facts`` one a line)."""
    for name in EXPECTED_RESPONSE:
        value = expected.get(name)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return "\n".join(value)
    return None


def reference_contexts_of(where: str, expected: Mapping[str, Any], id_keys: Sequence[str]
                        ) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
    """The texts and ids of ``expected_retrieved_context`` (``None`` where absent)."""
    value = expected.get(EXPECTED_CONTEXT)
    if value is None:
        return None, None
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise DatasetError(where, f"expectation {EXPECTED_CONTEXT!r} is not a list of "
                                  "{doc_uri, content} mappings")
    ids = [next((redact(str(v[k])) for k in id_keys if v.get(k) not in (None, "")), None)
           for v in value]  # masked as the retrieved ids are: they still match
    texts = [v.get("content") for v in value]
    return (tuple(str(t) for t in texts) if all(isinstance(t, str) for t in texts) else None,
            tuple(i for i in ids if i is not None) if all(ids) else None)


def trace_samples(trace: Any, id_keys: Sequence[str], question_from: str,
                  span_name: str | None, expected: Mapping[str, Any] | None = None,
                  ) -> list[tuple[RagSample, Origin]]:
    """One sample per RETRIEVER span of ``trace`` (named ``span_name``, when set), in the
    order the spans started; id: the trace id, ``TRACE/SPAN`` when it has several. The
    reference comes from ``expected`` when given, else from the trace's expectations."""
    from mlflow.entities import SpanType

    trace_id = trace.info.trace_id
    spans = sorted(trace.search_spans(span_type=SpanType.RETRIEVER, name=span_name),
                   key=lambda s: s.start_time_ns)
    question = text_of(trace.data.request, QUESTION_KEYS)
    response = text_of(trace.data.response, RESPONSE_KEYS)
    expected = expectations(trace) if expected is None else expected
    where = f"trace {trace_id}"
    reference_contexts, reference_ids = reference_contexts_of(where, expected, id_keys)
    out = []
    for span in spans:
        at = f"{where} span {span.name!r}"
        query = text_of(span.inputs, QUESTION_KEYS)
        texts, ids, metadata = documents(at, span.outputs, id_keys) if (
            span.outputs is not None) else (None, None, None)
        ask = question if question_from == "trace" and question is not None else query
        sample = RagSample(
            id=trace_id if len(spans) == 1 else f"{trace_id}/{span.span_id}",
            user_input=ask or question, reference=reference_of(expected), response=response,
            retrieved_contexts=texts, retrieved_context_ids=ids,
            reference_contexts=reference_contexts, reference_context_ids=reference_ids,
            retrieved_context_metadata=metadata if metadata and any(metadata) else None)
        out.append((sample, Origin(trace_id, span.span_id)))
    return out
