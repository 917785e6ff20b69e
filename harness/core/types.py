"""Plain data passed between the stages of a run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

#: Sample fields, named as ragas names them. A dataset may provide any subset.
#: The key of ``dataset.fields`` that holds the column ``run.strata`` names (set by the run).
STRATUM = "stratum"

SAMPLE_FIELDS: tuple[str, ...] = (
    "user_input",
    "reference",
    "response",
    "retrieved_contexts",
    "retrieved_context_ids",
    "reference_contexts",
    "reference_context_ids",
    "reference_context_grades",
)


@dataclass(frozen=True, slots=True)
class RagSample:
    """One evaluation record. ``None`` means the field is absent; ``()`` means empty.

    Context ids are normalised to ``str`` when loaded (ragas compares ``str(id)``).
    ``reference_context_grades`` (graded relevance, e.g. BEIR qrels) is parallel to
    ``reference_context_ids``. ``retrieved_context_metadata`` is each retrieved chunk's
    metadata (JSON values), parallel to ``retrieved_contexts``, where the source records it
    (a RETRIEVER span of an MLflow trace); it is shown beside each chunk, never scored.
    ``stratum`` is the value of the dataset column ``run.strata`` names, when it is set.
    """

    id: str
    user_input: str | None = None
    reference: str | None = None
    response: str | None = None
    retrieved_contexts: tuple[str, ...] | None = None
    retrieved_context_ids: tuple[str, ...] | None = None
    reference_contexts: tuple[str, ...] | None = None
    reference_context_ids: tuple[str, ...] | None = None
    reference_context_grades: tuple[float, ...] | None = None
    retrieved_context_metadata: tuple[Mapping[str, Any], ...] | None = None
    stratum: str | None = None


@dataclass(slots=True)
class SampleResult:
    """The outcome for one sample: a score, or ``score=None`` with the reason in ``error``.

    ``details`` holds the extra per-sample columns a reader needs (for example the
    per-chunk similarities of ``non_llm``); they are written after the fixed columns.
    """

    id: str
    score: float | None
    verdicts: list[int] | list[float] | None = None
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def to_row(self) -> dict[str, Any]:
        """The ``samples.jsonl`` row: ``id, score, verdicts, error`` then the details."""
        row: dict[str, Any] = {
            "id": self.id,
            "score": self.score,
            "verdicts": self.verdicts,
            "error": self.error,
        }
        row.update(self.details)
        return row


def unscored(sample_id: str, reason: str, **details: Any) -> SampleResult:
    """A result that carries no score, only why."""
    return SampleResult(sample_id, None, None, reason, dict(details))


@dataclass(frozen=True, slots=True)
class Document:
    """One corpus document (a BEIR ``corpus.jsonl`` record).

    Attributes:
        id: The document id, as written in the corpus and the qrels (an opaque string).
        title: The title; ``""`` when the corpus has none.
        text: The body text.
    """

    id: str
    title: str
    text: str

    @property
    def content(self) -> str:
        """The text a retriever indexes and a reader sees: ``"title\\n\\ntext"``, or just
        ``text`` when the title is empty."""
        return f"{self.title}\n\n{self.text}" if self.title else self.text


@dataclass(frozen=True, slots=True)
class Chunk:
    """A retrievable unit: a whole document, or a window of its words.

    Attributes:
        id: ``"<doc_id>#<n>"``, n counting the document's chunks from 0 (a document that
            is not split is its own chunk ``"<doc_id>#0"``).
        doc_id: The document the chunk comes from (what ``retrieved_context_ids`` holds).
        text: The chunk text.
    """

    id: str
    doc_id: str
    text: str


@dataclass(frozen=True, slots=True)
class Corpus:
    """The documents a corpus retriever indexes, with a key naming their content.

    Attributes:
        documents: The documents, in corpus order.
        key: Changes whenever the documents change (a content hash); with the settings
            that shape an index it names the cached index.
    """

    documents: Sequence[Document]
    key: str


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved item, as a user's retriever returns it (best first).

    Attributes:
        id: The id metrics compare with the reference ids (a document id).
        text: The text a judge or the string metric reads.
        score: The retriever's own score, if it has one.
    """

    id: str
    text: str
    score: float | None = None


@dataclass
class Completion:
    """What a judge replied: the text, token logprobs when asked for, usage, the model the
    server says answered and why it stopped (``stop``, ``length``; ``None``: not said)."""

    content: str
    logprobs: list[dict[str, Any]] | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    finish_reason: str | None = None


#: What a judge call asks for; selects the reply's JSON schema: a verdict and its reason for
#: one chunk, one of each per chunk of a sample, the same bare of reasons (``_bare``: the
#: prompt asks for verdicts only), or an explanation of a score.
Kind = Literal["pointwise", "listwise", "reason", "pointwise_bare", "listwise_bare"]


@dataclass(frozen=True)
class JudgeRequest:
    """One judgement asked of a judge (``Judge.ask``).

    Attributes:
        messages: The rendered prompt.
        kind: ``pointwise``, ``listwise`` (``_bare``: verdicts without reasons) or ``reason``
            (selects the JSON schema).
        logprobs: Ask for token logprobs (soft verdicts).
        draw: Which of the judge's ``samples`` independent verdicts this is.
        prompt_sha: The prompt template's hash (part of the cache key; for pruning).
        variant: The metric asking (part of the cache key; for inspection).
        items: The number of verdicts a listwise reply must hold (pinned by the schema).
        subject: What is judged, as the data holds it (the prompt renders it): a judge
            that reads the data rather than the prompt (``judge=fixture``) reads it here.
    """

    messages: list[dict[str, str]]
    kind: Kind
    logprobs: bool = False
    draw: int = 0
    prompt_sha: str = ""
    variant: str = ""
    items: int | None = None
    subject: JudgeSubject | None = None


@dataclass(frozen=True)
class JudgeSubject:
    """What one judgement is about, as the sample holds it.

    Attributes:
        question: The question (``user_input``).
        answer: The answer the chunks are judged against (the reference or the response;
            ``None`` where the prompt has none, as in ``task=judge_agreement``).
        contexts: The chunks judged, in order (one for a pointwise judgement).
        sample_id: The sample's id.
        context_ids: The chunks' document ids, parallel to ``contexts``, where known.
    """

    question: str
    answer: str | None
    contexts: tuple[str, ...]
    sample_id: str | None = None
    context_ids: tuple[str, ...] | None = None


@dataclass
class JudgeStats:
    """Counters of one run's judge traffic."""

    calls: int = 0
    requests: int = 0
    retries: int = 0
    parse_failures: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    soft_fallbacks: int = 0
    output_mode_fallbacks: int = 0
    #: ``None``: the cost is unknown (no price for the model that answered)
    cost_usd: float | None = 0.0
    cache_hits: int = 0
    cache_misses: int = 0
    saved_prompt_tokens: int = 0
    saved_completion_tokens: int = 0
    saved_cost_usd: float | None = 0.0
    #: replies another process was paying for when this one asked (a shared cache_url)
    cache_waits: int = 0
    #: pacing (``harness.judges.transport.pacing``): most requests in flight at once, the
    #: limit at the end, halvings of the limit (overload: 503, time-outs, dropped
    #: connections), time-outs, pauses of every send (``Retry-After``, a spent rate limit)
    peak_in_flight: int = 0
    final_limit: int = 0
    backoffs: int = 0
    timeouts: int = 0
    pauses: int = 0
    #: the Batch API (``judge.batch``): lines answered through it, and the part of the
    #: token totals above billed at the batch price; batch jobs created, and their ids;
    #: the ids of batches an earlier run created that this one waited for (resumed)
    batch_requests: int = 0
    batch_prompt_tokens: int = 0
    batch_cached_prompt_tokens: int = 0
    batch_completion_tokens: int = 0
    batches: int = 0
    batch_ids: list[str] = field(default_factory=list)
    resumed_batch_ids: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, float | None]:
        """The numeric counters (costs rounded to micro-dollars, ``None`` when unknown);
        ``batch_ids`` and ``resumed_batch_ids`` are not among them."""
        data: dict[str, Any] = asdict(self)
        del data["batch_ids"], data["resumed_batch_ids"]
        for name in ("cost_usd", "saved_cost_usd"):
            value = getattr(self, name)
            data[name] = None if value is None else round(value, 6)
        return data


Status = Literal["FINISHED", "FAILED", "KILLED"]


@dataclass
class RunRecord:
    """Everything one run logs: plain strings and numbers, and paths of files to attach."""

    params: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    artifacts: list[str] = field(default_factory=list)
    status: Status = "FINISHED"

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe dict (for the background logging process)."""
        return {
            "params": self.params,
            "metrics": self.metrics,
            "tags": self.tags,
            "artifacts": self.artifacts,
            "status": self.status,
        }


@dataclass(frozen=True)
class TrackedRun:
    """Where a run was recorded; ``lines``: the console's rows that lead to it (label,
    text), in the tracker's own words, printed under the run's summary."""

    run_id: str
    experiment_id: str
    tracking_uri: str
    lines: tuple[tuple[str, str], ...] = ()
