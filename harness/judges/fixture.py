"""An offline judge (``judge=fixture``): verdicts from a labels file or a simple rule, with
no model, no key and no network, so every LLM variant runs in a CI or on a laptop.

It judges what the request's ``subject`` holds (the sample's question, answer and chunks,
with their ids), never the prompt re-read; a request without one (another caller's) is
read from the ``<question>``, ``<answer>`` and ``<context>`` (or numbered ``<contexts>``)
sections of the harness's prompts. It answers in the JSON the variants parse.

- ``labels=FILE``: JSON lines naming a chunk by ids (``{"id": ..., "context_id": ...,
  "relevant": 0|1}``) or by text (``{"question": ..., "context": ...}``, whole or cut as
  ``samples.jsonl`` shows it): ``harness.judges.labels``; a chunk with no label leaves its
  sample unscored, naming it (``unlabelled=irrelevant`` counts it as not relevant instead).
- without labels, ``rule=overlap``: relevant iff at least ``min_overlap`` of the answer's
  words (the reference, or the response for ``llm_without_reference``; the question where
  the prompt has no answer, as in ``task=judge_agreement``) are in the chunk.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from harness.core.errors import ConfigError, JudgeError
from harness.core.types import Completion, JudgeRequest, JudgeStats, JudgeSubject
from harness.core.validation import Range, check_value
from harness.judges.labels import Labels, load_labels

T = TypeVar("T")

_SECTION = r"<{tag}>\n(.*)\n</{tag}>"
_POINTWISE = re.compile(  # the answer is absent from query_relevance (judge agreement)
    _SECTION.format(tag="question") + r"\s*(?:" + _SECTION.format(tag="answer") + r"\s*)?"
    + _SECTION.format(tag="context") + r"\s*$", re.S)
_LISTWISE = re.compile(
    _SECTION.format(tag="question") + r"\s*" + _SECTION.format(tag="answer")
    + r"\s*<contexts>\n(.*)</contexts>\s*$", re.S)
_WORDS = re.compile(r"\w\w+")


def words(text: str) -> set[str]:
    """The lower-cased words of two or more letters or digits in ``text``."""
    return set(_WORDS.findall(text.lower()))


class FixtureJudge:
    """A judge that answers from labels or a rule (``judge=fixture``).

    Args:
        labels: A JSON-lines file of ``{question, context, relevant}``, which decides every
            verdict; null: ``rule`` decides.
        rule: Without labels: ``overlap`` (word overlap of the chunk with the answer).
        min_overlap: The share of the answer's words a chunk must hold (``rule=overlap``).
        unlabelled: ``error`` (the sample is unscored, naming the chunk) or ``irrelevant``.
        model: The name outputs give this judge.
    """

    samples = 1
    vote = "majority"
    batch_samples: int | None = None  # no Batch API: the run's batches
    max_concurrency = 64
    top_logprobs = 0

    def __init__(
        self,
        labels: str | os.PathLike[str] | None = None,
        rule: Literal["overlap"] = "overlap",
        min_overlap: Annotated[float, Range(gt=0, le=1)] = 0.5,
        unlabelled: Literal["error", "irrelevant"] = "error",
        model: str = "fixture",
    ) -> None:
        check_value("judge.rule", Literal["overlap"], rule)
        check_value("judge.min_overlap", Annotated[float, Range(gt=0, le=1)], min_overlap)
        check_value("judge.unlabelled", Literal["error", "irrelevant"], unlabelled)
        if labels not in (None, "") and not isinstance(labels, (str, os.PathLike)):
            raise ConfigError(f"judge.labels: expected a file path, got {labels!r}")
        self.path = None if labels in (None, "") else Path(os.fspath(labels)).expanduser()
        self.labels = Labels() if self.path is None else load_labels(self.path)
        self.sha256 = "" if self.path is None else hashlib.sha256(
            self.path.read_bytes()).hexdigest()
        self.rule = "labels" if self.path is not None else rule
        self.min_overlap, self.unlabelled = float(min_overlap), unlabelled
        self.model = model
        self.stats = JudgeStats()

    async def ask(self, request: JudgeRequest, parse: Callable[[Completion], T]) -> T:
        """The verdict(s) the labels or the rule give, as the JSON a model would reply.

        What is judged is the request's ``subject`` (the sample's question, answer and
        chunks, with their ids), never the prompt re-read: a chunk holding ``</context>``
        or a ``<question>`` line is judged on its own text. A request without one (another
        caller's) is read from the harness's prompt sections."""
        self.stats.calls += 1
        self.stats.requests += 1
        if request.kind == "reason":
            reply: dict[str, Any] = {"reason": "judged offline by judge=fixture"}
        else:
            subject = request.subject or self._parsed(request)
            if (request.kind.startswith("listwise")
                    and request.items not in (None, len(subject.contexts))):
                raise self._unreadable()
            verdicts = [self._verdict(subject, i) for i in range(len(subject.contexts))]
            bare = request.kind.endswith("_bare")  # the prompt asks for verdicts only
            why = {} if bare else {"reason": f"judge=fixture ({self.rule})"}
            if request.kind.startswith("pointwise"):
                reply = {**why, "verdict": verdicts[0]}
            else:
                reply = {"verdicts": [{**why, "verdict": "yes" if v else "no"} for v in verdicts]}
        return parse(Completion(json.dumps(reply), model=self.model, finish_reason="stop"))

    def _parsed(self, request: JudgeRequest) -> JudgeSubject:
        """What a request without a ``subject`` is about, read from its last user message."""
        user = next((m["content"] for m in reversed(request.messages)
                     if m.get("role") == "user"), "")
        if request.kind.startswith("pointwise"):
            found = _POINTWISE.search(user)
            if found is None:
                raise self._unreadable()
            question, answer, context = found.groups()
            return JudgeSubject(question, answer, (context,))
        question, answer, contexts = self._listwise(user, request.items)
        return JudgeSubject(question, answer, tuple(contexts))

    def _listwise(self, user: str, items: int | None) -> tuple[str, str, list[str]]:
        found = _LISTWISE.search(user)
        if found is None or items is None:
            raise self._unreadable()
        question, answer, block = found.groups()
        contexts, rest = [], block
        for i in range(1, items + 1):
            head = f'<context index="{i}">\n'
            tail = f'\n</context>\n<context index="{i + 1}">\n' if i < items else "\n</context>\n"
            if not rest.startswith(head):
                raise self._unreadable()
            end = rest.find(tail, len(head)) if i < items else rest.rfind(tail)
            if end < 0:
                raise self._unreadable()
            contexts.append(rest[len(head):end])
            rest = rest[end + len("\n</context>\n"):]
        return question, answer, contexts

    def _verdict(self, subject: JudgeSubject, index: int) -> int:
        context = subject.contexts[index]
        if self.rule == "overlap":
            wanted = words(subject.answer or subject.question)
            return int(bool(wanted) and len(wanted & words(context)) / len(wanted)
                       >= self.min_overlap)
        label = self.labels.find(subject, index)
        if label is None:
            if self.unlabelled == "irrelevant":
                return 0
            raise JudgeError(f"judge=fixture: no label in {self.path} for {_named(subject, index)}"
                             "; add a line for it, or set judge.unlabelled=irrelevant")
        return label

    def _unreadable(self) -> JudgeError:
        return JudgeError("judge=fixture reads the <question>, <answer> and <context> "
                          "sections of the harness's prompts; this prompt has another shape")

    async def preflight(self) -> None:
        """Nothing to reach: the labels were read when the judge was built."""

    async def aclose(self) -> None:
        """Nothing to close."""

    def describe(self) -> dict[str, Any]:
        """The rule and the labels file: everything that decides a verdict."""
        out: dict[str, Any] = {"model": self.model, "rule": self.rule, "samples": self.samples,
                               "vote": self.vote}
        if self.path is not None:
            out.update(labels=str(self.path), labels_sha256=self.sha256,
                       n_labels=len(self.labels), unlabelled=self.unlabelled)
        else:
            out["min_overlap"] = self.min_overlap
        return out


def _named(subject: JudgeSubject, index: int) -> str:
    """A chunk as a label row would name it: by ids where the data has them, and by text."""
    ids = subject.context_ids
    doc = ids[index] if ids is not None and index < len(ids) else None
    text = (f"question {subject.question.strip()[:60]!r} and context "
            f"{subject.contexts[index].strip()[:60]!r}")
    if doc is None or subject.sample_id is None:
        return text
    return f"sample {subject.sample_id!r}, context_id {doc!r} ({text})"
