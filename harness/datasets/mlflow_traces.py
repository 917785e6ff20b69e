"""``dataset=mlflow_traces``: the traces an instrumented RAG app logged to MLflow, as samples.

Each RETRIEVER span (``@mlflow.trace(span_type="RETRIEVER")``, LangChain and LlamaIndex
autologging) is one sample: its ranked documents are the retrieved chunks, the trace's
inputs and outputs the question and response, the trace's expectations
(``expected_response``, ``expected_facts``, ``expected_retrieved_context``) the reference.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.core.capabilities import Splittable
from harness.core.errors import ConfigError, DatasetError
from harness.core.redact import redact_uri
from harness.core.types import Corpus, RagSample
from harness.datasets.files import batched
from harness.datasets.mlflow_spans import ID_KEYS, Origin, trace_samples

#: Characters a trace id, tag key or tag value may hold in a filter (quotes cannot be escaped).
_SAFE = re.compile(r"^[^'`\\]+$")
#: Traces asked of the store per page.
PAGE = 200


class MlflowTracesDataset:
    """The RETRIEVER spans of an MLflow experiment's traces.

    Args:
        experiment_name: The experiment the app's traces are in.
        tracking_uri: The MLflow store (``$MLFLOW_TRACKING_URI`` in the config).
        run_id: Only traces logged under this run.
        trace_ids: Only these traces (each must be in the experiment).
        tags: Only traces with these tag values.
        since: Only traces started at or after this time (ISO 8601, UTC when no zone is
            given, or milliseconds since the epoch); ``until``: before it.
        filter_string: Any further MLflow trace filter, ANDed with the others.
        max_traces: Read at most this many traces (the oldest first).
        span_name: Only RETRIEVER spans of this name (a trace may hold several).
        question_from: ``trace`` (its inputs; the span's query when they hold no text) or
            ``span`` (the retriever's query).
        id_keys: Where a document's id is read from, in order (``id``: the document's own
            id; other names: keys of its metadata).
        min_grade: The lowest reference grade that counts as relevant.
        feedback: After the run, write each sample's score and its documents' verdicts back
            onto its trace as MLflow assessments (a rerun replaces them).
    """

    format = "mlflow_traces"
    #: Split by sample index (``run.shards``).
    splittable: Splittable | None = None

    def __init__(
        self, experiment_name: str, tracking_uri: str | None = None, run_id: str | None = None,
        trace_ids: Sequence[str] | None = None, tags: Mapping[str, str] | None = None,
        since: str | int | None = None, until: str | int | None = None,
        filter_string: str | None = None, max_traces: int | None = None,
        span_name: str | None = None, question_from: str = "trace",
        id_keys: Sequence[str] = ID_KEYS, min_grade: float = 1.0, feedback: bool = False,
    ) -> None:
        if not isinstance(experiment_name, str) or not experiment_name:
            raise ConfigError("dataset.experiment_name: the MLflow experiment of your traces; "
                              "set dataset.experiment_name=NAME")
        if not tracking_uri:
            raise ConfigError("dataset.tracking_uri: no MLflow store; set it or "
                              "$MLFLOW_TRACKING_URI")
        if question_from not in ("trace", "span"):
            raise ConfigError(f"dataset.question_from: expected 'trace' or 'span', got "
                              f"{question_from!r}")
        if max_traces is not None and (isinstance(max_traces, bool) or max_traces < 1):
            raise ConfigError(f"dataset.max_traces: expected a whole number >= 1, got "
                              f"{max_traces!r}")
        if not id_keys or not all(isinstance(k, str) and k for k in id_keys):
            raise ConfigError(f"dataset.id_keys: expected a list of names, got {id_keys!r}")
        self.experiment_name, self.tracking_uri, self.run_id = experiment_name, tracking_uri, run_id
        self.trace_ids = [_safe("dataset.trace_ids", t) for t in trace_ids or []]
        self.tags = {_safe("dataset.tags", k): _safe(f"dataset.tags.{k}", str(v))
                     for k, v in (tags or {}).items()}
        self.since, self.until = _millis("dataset.since", since), _millis("dataset.until", until)
        self.filter_string, self.max_traces, self.span_name = filter_string, max_traces, span_name
        self.question_from, self.id_keys, self.min_grade = question_from, list(id_keys), min_grade
        self.feedback = feedback
        self.source = f"mlflow experiment {experiment_name!r} at {redact_uri(tracking_uri)}"
        self._read: list[tuple[RagSample, Origin]] | None = None
        self._traces = 0

    def write_feedback(self, rows: Path, metric: str) -> str | None:
        """With ``dataset.feedback``, the verdicts of ``rows`` (this run's ``samples.jsonl``)
        as assessments on the RETRIEVER spans they were read from (each variant's, in a run of
        several); a note of what was written."""
        if not self.feedback:
            return None
        from harness.datasets.mlflow_feedback import write_feedback

        spans = {sample_id: (o.trace_id, o.span_id) for sample_id, o in self.origins().items()}
        with open(rows, encoding="utf-8") as lines:
            done = write_feedback((json.loads(line) for line in lines if line.strip()),
                                  self.tracking_uri, metric, spans)
        return (f"wrote {done.assessments} assessments ({', '.join(done.metrics) or metric}) "
                f"onto {done.traces} traces of {self.source}"
                + (f", replacing {done.replaced}" if done.replaced else ""))

    def filter(self) -> str:
        """The MLflow filter string of the settings."""
        terms = [f"tags.`{k}` = '{v}'" for k, v in self.tags.items()]
        if self.since is not None:
            terms.append(f"trace.timestamp_ms >= {self.since}")
        if self.until is not None:
            terms.append(f"trace.timestamp_ms < {self.until}")
        if self.trace_ids:
            terms.append("trace.request_id IN (" + ", ".join(f"'{t}'" for t in self.trace_ids)
                         + ")")
        if self.filter_string:
            terms.append(f"({self.filter_string})" if " OR " in self.filter_string.upper()
                         else self.filter_string)
        return " AND ".join(terms)

    def check(self) -> None:
        """Read the traces now: a store, experiment or trace that is not there fails here."""
        self._samples()

    @property
    def traced(self) -> MlflowTracesDataset:
        """Read from MLflow traces: human feedback on them can label the run."""
        return self

    def origins(self) -> dict[str, Origin]:
        """Sample id -> the trace and span it came from."""
        return {sample.id: origin for sample, origin in self._samples()}

    def _samples(self) -> list[tuple[RagSample, Origin]]:
        if self._read is None:
            read: list[tuple[RagSample, Origin]] = []
            found: set[str] = set()
            for trace in self._search():  # one page of traces in memory at a time
                found.add(trace.info.trace_id)
                read += trace_samples(trace, self.id_keys, self.question_from, self.span_name)
            missing = sorted(set(self.trace_ids) - found)
            if missing and self.max_traces is None:
                raise DatasetError(self.source, f"dataset.trace_ids: not in the experiment "
                                   f"(or filtered out): {', '.join(missing)}")
            if found and not read:
                raise DatasetError(self.source, f"none of its {len(found)} traces has a "
                                   "RETRIEVER span" + (f" named {self.span_name!r}"
                                                       if self.span_name else ""))
            self._read, self._traces = read, len(found)
        return self._read

    def _search(self) -> Iterator[Any]:
        """The matching traces, oldest first, read a page at a time."""
        from mlflow.exceptions import MlflowException
        from mlflow.tracking import MlflowClient

        try:
            client = MlflowClient(tracking_uri=self.tracking_uri)
            experiment = client.get_experiment_by_name(self.experiment_name)
            if experiment is None:
                raise DatasetError(self.source, "no such experiment; check "
                                   "dataset.experiment_name and dataset.tracking_uri")
            count, token = 0, None
            while self.max_traces is None or count < self.max_traces:
                want = PAGE if self.max_traces is None else min(PAGE, self.max_traces - count)
                page = client.search_traces(
                    locations=[experiment.experiment_id], filter_string=self.filter() or None,
                    max_results=want, order_by=["timestamp_ms ASC"], page_token=token,
                    run_id=self.run_id)
                count += len(page)
                yield from page
                token = page.token
                if not token:
                    break
        except MlflowException as e:
            raise DatasetError(self.source, f"cannot read the traces "
                               f"({redact_uri(str(e.message).splitlines()[0])})") from None

    def estimate_count(self) -> int:
        """The number of samples (the traces are read once)."""
        return len(self._samples())

    def samples(self, limit: int | None = None) -> Iterator[RagSample]:
        """One sample per RETRIEVER span, oldest trace first."""
        for sample, _ in self._samples()[:limit]:
            yield sample

    def batches(self, batch_size: int, limit: int | None = None) -> Iterator[list[RagSample]]:
        """Lists of at most ``batch_size`` samples."""
        return batched(self.samples(limit), batch_size)

    def corpus(self) -> Corpus | None:
        """None: a trace holds what was retrieved, not a corpus to search."""
        return None

    def sha256(self) -> str:
        """Hash of the samples read (so runs on other traffic are never compared)."""
        text = json.dumps([[s.id, s.user_input, s.response, s.reference, s.retrieved_contexts,
                            s.retrieved_context_ids, s.reference_context_ids]
                           for s, _ in self._samples()], ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def describe(self) -> dict[str, Any]:
        """Where the samples came from (no credentials)."""
        return {"format": self.format, "path": self.source,
                "experiment": self.experiment_name, "tracking_uri": redact_uri(self.tracking_uri),
                "filter": self.filter(), "run_id": self.run_id, "traces": self._traces,
                "records": len(self._read or [])}


def _safe(setting: str, value: str) -> str:
    if not isinstance(value, str) or not value or not _SAFE.match(value):
        raise ConfigError(f"{setting}: {value!r} cannot be filtered on (empty, or a quote, "
                          "backtick or backslash in it)")
    return value


def _millis(setting: str, value: str | int | None) -> int | None:
    """A time setting as milliseconds since the epoch."""
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        raise ConfigError(f"{setting}: expected an ISO 8601 time (2026-01-31T12:00:00Z) or "
                          f"milliseconds since the epoch, got {value!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)
