"""Human labels from MLflow traces (``run.human_labels=mlflow`` with ``dataset=mlflow_traces``):
the HUMAN feedback on the dataset's traces, as the labels a labels file would give.

Read: valid ``Feedback`` assessments whose source type is ``HUMAN``, named, by default, one
of ``NAMES`` (case, ``-`` and spaces aside: ``relevance``, ``is_relevant``,
``context_relevance``, ``retrieval_relevance``, ...), or exactly ``name`` when given.
Never read: expectations, any other source (the harness's own verdicts, which
``mlflow_feedback`` writes as ``LLM_JUDGE``/``CODE`` under ``harness/<metric>``, and any
judge's), and assessments an override replaced (``valid`` false). An override keeps the
span and, when it has none of its own, the metadata of the assessment it replaces.

Where a feedback is: on the RETRIEVER span a sample was read from, or on the trace (no
span) when the trace has one sample. The shapes:

- **one chunk**: a single value, with metadata naming the chunk: ``context_id`` (or
  ``doc_id``: the document's id as the dataset reads it, ``dataset.id_keys``), ``doc_uri``
  (every document whose ``metadata.doc_uri`` it is), ``rank`` (1-based) or ``chunk_index``
  (0-based, as MLflow's ``RetrievalRelevance`` and the harness's own feedback write it),
  tried in that order;
- **every chunk**: a list value, one verdict per document, rank 1 first.

A verdict is a bool, a word (yes/no, true/false, relevant/irrelevant) or a number: a grade,
relevant from ``min_grade`` (the dataset's, 1 by default, so 0/1 read as they are).

A HUMAN feedback of such a name that fits no shape (one value and no chunk named, a dict
value, an error instead of a value, on another span, on a trace of several RETRIEVER spans)
is counted in ``LabelFile.skipped``, not read. A bad value or chunk key in a shape that
fits is one ``DatasetError`` naming the trace and the assessment.

The labels name their chunk by rank, as the trace's span ranked it (a sample's documents
may share an id); one naming a chunk the sample lacks is passed on as given, for ``match``
to count. One annotator's latest feedback on a chunk stands; two annotators who give a
chunk different verdicts are an error (override one). ``Label.line`` is the label's place.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from harness.confidence.labels import Label, LabelFile
from harness.confidence.match import RunSample, chunks_of
from harness.core.capabilities import Traced
from harness.core.errors import ConfigError, DatasetError
from harness.core.protocols import Dataset
from harness.core.redact import redact, redact_uri

#: The feedback names read by default (compared lower-case, ``-`` and spaces as ``_``).
NAMES = ("relevance", "relevant", "is_relevant", "context_relevance", "retrieval_relevance",
         "chunk_relevance", "document_relevance")
#: The metadata keys that name a chunk, in the order they are tried.
CHUNK_KEYS = ("context_id", "doc_id", "doc_uri", "rank", "chunk_index")
_YES = {"true", "yes", "y", "relevant"}
_NO = {"false", "no", "n", "irrelevant", "not relevant"}
#: Trace ids asked of the store per query.
BATCH = 100


@dataclass(frozen=True)
class _Given:
    """One verdict read from one assessment."""

    label: Label
    trace_id: str
    assessment: str
    source: str
    time: int


def trace_labels(built: Dataset, name: str | None = None,
                 min_grade: float | None = None) -> LabelFile:
    """The HUMAN feedback on ``dataset``'s traces as labels of its samples.

    Args:
        built: The run's dataset: ``dataset=mlflow_traces`` (its ``traced``).
        name: Read only feedback of exactly this name (default: any of ``NAMES``).
        min_grade: The lowest grade that counts as relevant (default: the dataset's).

    Returns:
        The labels (``path``: where they came from), ``blank`` 0, and ``skipped``: the
        HUMAN feedback of the name that fits no shape.
    """
    dataset = built.traced
    if dataset is None:
        raise ConfigError("run.human_labels=mlflow reads human feedback on MLflow traces: "
                          "use it with dataset=mlflow_traces, or set it to a labels file")
    grade = dataset.min_grade if min_grade is None else min_grade
    samples = {s.id: s for s in dataset.samples()}
    origins = dataset.origins()
    by_span = {(o.trace_id, o.span_id): sid for sid, o in origins.items()}
    by_trace: dict[str, list[str]] = {}
    for sid, o in origins.items():
        by_trace.setdefault(o.trace_id, []).append(sid)
    given: list[_Given] = []
    skipped = seen = 0
    for trace in _traces(dataset, list(by_trace)):
        trace_id = trace.info.trace_id
        everything = {a.assessment_id: a for a in trace.info.assessments or []}
        for a in everything.values():
            if not _human_feedback(a, name):
                continue
            seen += 1
            span = a.span_id
            target = by_span.get((trace_id, span)) if span else (
                by_trace[trace_id][0] if len(by_trace.get(trace_id, [])) == 1 else None)
            labels = None if target is None else _labels(
                a, _metadata(a, everything), samples[target], grade, trace_id)
            if labels is None:
                skipped += 1
                continue
            source = str(a.source.source_id)
            time = int(a.last_update_time_ms or a.create_time_ms or 0)
            given += [_Given(label, trace_id, str(a.assessment_id), source, time)
                      for label in labels]
    where = f"human feedback on the traces of {dataset.source}"
    if not given:
        wanted = repr(name) if name else "/".join(NAMES[:4]) + "/..."
        raise DatasetError(where, f"none names a chunk ({seen} HUMAN feedback named {wanted}, "
                           f"{skipped} of them fitting no shape); log it on the RETRIEVER span "
                           "with metadata rank or context_id, or a list of 0/1 per rank")
    labels = _resolve(given, samples, list(origins))
    return LabelFile(where, tuple(replace(label, line=n) for n, label in enumerate(labels, 1)),
                     0, skipped=skipped)


def _traces(dataset: Traced, trace_ids: Sequence[str]) -> Iterator[Any]:
    """The traces (without spans) of ``trace_ids``, a batch of ids per query."""
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    try:
        client = MlflowClient(tracking_uri=dataset.tracking_uri)
        experiment = client.get_experiment_by_name(dataset.experiment_name)
        if experiment is None:
            raise DatasetError(dataset.source, "no such experiment; check "
                               "dataset.experiment_name and dataset.tracking_uri")
        for start in range(0, len(trace_ids), BATCH):
            batch = trace_ids[start:start + BATCH]
            where = "trace.request_id IN (" + ", ".join(f"'{t}'" for t in batch) + ")"
            token = None
            while True:
                page = client.search_traces(
                    locations=[experiment.experiment_id], filter_string=where,
                    max_results=BATCH, page_token=token, include_spans=False)
                yield from page
                token = page.token
                if not token:
                    break
    except MlflowException as e:
        raise DatasetError(dataset.source, "cannot read the traces' feedback "
                           f"({redact_uri(str(e.message).splitlines()[0])})") from None


def _human_feedback(assessment: Any, name: str | None) -> bool:
    from mlflow.entities import AssessmentSourceType

    source = assessment.source
    if getattr(assessment, "feedback", None) is None or assessment.valid is False:
        return False
    if source is None or source.source_type != AssessmentSourceType.HUMAN:
        return False
    if str(source.source_id or "").startswith("harness/"):  # ours, whatever its type
        return False
    if name is not None:
        return bool(assessment.name == name)
    return str(assessment.name).lower().replace("-", "_").replace(" ", "_") in NAMES


def _metadata(assessment: Any, everything: dict[str, Any]) -> dict[str, Any]:
    """The assessment's metadata; an override without chunk keys inherits those it replaced."""
    seen: set[str] = set()
    while assessment is not None and assessment.assessment_id not in seen:
        metadata = dict(assessment.metadata or {})
        if any(metadata.get(k) not in (None, "") for k in CHUNK_KEYS):
            return metadata
        seen.add(assessment.assessment_id)
        assessment = everything.get(assessment.overrides) if assessment.overrides else None
    return {}


def _labels(assessment: Any, metadata: dict[str, Any], sample: Any, min_grade: float,
            trace_id: str) -> list[Label] | None:
    """The labels one feedback gives ``sample``; None when it fits no shape."""
    def bad(message: str) -> DatasetError:
        return DatasetError(f"trace {trace_id}", f"feedback {assessment.name!r} "
                            f"({assessment.assessment_id}): {message}")

    value = assessment.feedback.value
    keys = {k: metadata[k] for k in CHUNK_KEYS if metadata.get(k) not in (None, "")}
    sid = sample.id
    if isinstance(value, list):
        if keys:
            raise bad(f"a list of verdicts names its chunks by position; drop metadata "
                      f"{next(iter(keys))!r} or give one verdict")
        out = []
        for rank, item in enumerate(value, 1):
            verdict = _verdict(item, min_grade)
            if verdict is None:
                raise bad(f"value[{rank - 1}]: expected a verdict (true/false, 0/1 or a "
                          f"grade), got {item!r}")
            out.append(Label(sid, verdict[0], 0, rank=rank, grade=verdict[1]))
        return out
    if value is None or isinstance(value, dict) or not keys:
        return None
    verdict = _verdict(value, min_grade)
    if verdict is None:
        raise bad(f"expected a verdict (true/false, 0/1 or a grade), got {value!r}")
    key, named = next(iter(keys.items()))
    one = Label(sid, verdict[0], 0, grade=verdict[1])
    if key in ("context_id", "doc_id"):
        return [replace(one, context_id=redact(str(named)))]
    if key == "doc_uri":
        uri = redact(str(named))
        ranks = [r for r, meta in enumerate(sample.retrieved_context_metadata or (), 1)
                 if isinstance(meta, dict) and meta.get("doc_uri") is not None
                 and redact(str(meta["doc_uri"])) == uri]
        return [replace(one, rank=r) for r in ranks] or [replace(one, context_id=uri)]
    low = 1 if key == "rank" else 0
    number = _whole(named)
    if number is None or number < low:
        raise bad(f"metadata {key!r}: expected a whole number from {low}, got {named!r}")
    return [replace(one, rank=number + 1 - low)]


def _whole(value: Any) -> int | None:
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _verdict(value: Any, min_grade: float) -> tuple[int, float | None] | None:
    """``(relevant, grade)`` of a feedback value; None when it is none."""
    if isinstance(value, bool):
        return int(value), None
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _YES | _NO:
            return int(word in _YES), None
        try:
            value = float(word)
        except ValueError:
            return None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return int(value >= min_grade), float(value)
    return None


def _resolve(given: list[_Given], samples: dict[str, Any], order: list[str]) -> list[Label]:
    """One label per labelled chunk (by rank), an annotator's latest standing; labels naming
    no chunk of their sample as given."""
    chunks: dict[tuple[str, int], dict[str, _Given]] = {}
    unknown: list[Label] = []
    for g in sorted(given, key=lambda g: g.time):
        s = samples[g.label.sample_id]
        run = RunSample(s.id, tuple(s.retrieved_context_ids or ()),
                        tuple(s.retrieved_contexts or ()))
        ranks = chunks_of(g.label, run)
        if not ranks:
            unknown.append(g.label)
        for rank in ranks:
            chunks.setdefault((s.id, rank), {})[g.source] = replace(
                g, label=replace(g.label, rank=rank + 1, context_id=None))
    out = []
    for (sid, rank), by_source in chunks.items():
        first, *others = by_source.values()
        for other in others:
            if other.label.relevant != first.label.relevant:
                raise DatasetError(
                    f"trace {first.trace_id}", f"sample {sid!r}, rank {rank + 1}: "
                    f"{first.source!r} says {first.label.relevant} ({first.assessment}), "
                    f"{other.source!r} {other.label.relevant} ({other.assessment}); override "
                    "one (mlflow.override_feedback) so one verdict stands")
        out.append(first.label)
    place = {sid: n for n, sid in enumerate(order)}
    out.sort(key=lambda label: (place[label.sample_id], label.rank or 0))
    return out + unknown
