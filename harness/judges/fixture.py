"""An offline judge (``judge=fixture``): verdicts from a labels file or a simple rule, with
no model, no key and no network, so every LLM variant runs in a CI or on a laptop.

It reads what a model would read: the ``<question>``, ``<answer>`` and ``<context>`` (or
numbered ``<contexts>``) sections of the last user message of the harness's prompts, and
answers in the JSON the variants parse.

- ``labels=FILE``: JSON lines ``{"question": ..., "context": ..., "relevant": 0|1}`` (the
  chunk's text as the dataset gives it); a chunk with no label leaves its sample unscored,
  naming the question (``unlabelled=irrelevant`` counts it as not relevant instead).
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

from harness.core.errors import ConfigError, DatasetError, JudgeError
from harness.core.types import Completion, JudgeRequest, JudgeStats
from harness.core.validation import Range, check_value

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


def _text(path: Path, record: dict[str, Any], field: str, line: int) -> str:
    value = record.get(field)
    if not isinstance(value, str) or not value.strip():
        raise DatasetError(str(path), f"expected a non-empty string, got {value!r}",
                           line=line, field=field)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise DatasetError(str(path), "contains a lone surrogate, which is not valid Unicode",
                           line=line, field=field) from None
    return value.strip()


def load_labels(path: Path) -> dict[tuple[str, str], int]:
    """``{(question, context): 0 or 1}`` from a JSON-lines file; a one-line error naming the
    line and field of the first bad record, or a label contradicting an earlier one."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise DatasetError(str(path), "file not found (judge.labels)") from None
    except UnicodeDecodeError as e:
        raise DatasetError(str(path), f"not valid UTF-8 ({e.reason})") from None
    except OSError as e:
        raise DatasetError(str(path), f"cannot read ({e.strerror or e})") from None
    labels: dict[tuple[str, str], tuple[int, int]] = {}
    for line, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except ValueError as e:
            raise DatasetError(str(path), f"not valid JSON ({e})", line=line) from None
        if not isinstance(record, dict):
            raise DatasetError(str(path), "expected a JSON object", line=line)
        key = (_text(path, record, "question", line), _text(path, record, "context", line))
        value = record.get("relevant")
        if value not in (0, 1) or value is None:  # True and False are 1 and 0
            raise DatasetError(str(path), f"expected 0 or 1 (or true/false), got {value!r}",
                               line=line, field="relevant")
        if key in labels and labels[key][0] != int(value):
            raise DatasetError(str(path), f"contradicts the label on line {labels[key][1]}",
                               line=line, field="relevant")
        labels.setdefault(key, (int(value), line))
    if not labels:
        raise DatasetError(str(path), "contains no labels (judge.labels)")
    return {k: v for k, (v, _) in labels.items()}


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
        self.labels = {} if self.path is None else load_labels(self.path)
        self.sha256 = "" if self.path is None else hashlib.sha256(
            self.path.read_bytes()).hexdigest()
        self.rule = "labels" if self.path is not None else rule
        self.min_overlap, self.unlabelled = float(min_overlap), unlabelled
        self.model = model
        self.stats = JudgeStats()

    async def ask(self, request: JudgeRequest, parse: Callable[[Completion], T]) -> T:
        """The verdict(s) the labels or the rule give, as the JSON a model would reply."""
        self.stats.calls += 1
        self.stats.requests += 1
        user = next((m["content"] for m in reversed(request.messages)
                     if m.get("role") == "user"), "")
        if request.kind == "reason":
            reply: dict[str, Any] = {"reason": "judged offline by judge=fixture"}
        elif request.kind == "pointwise":
            found = _POINTWISE.search(user)
            if found is None:
                raise self._unreadable()
            question, answer, context = found.groups()
            reply = {"reason": f"judge=fixture ({self.rule})",
                     "verdict": self._verdict(question, answer or question, context)}
        else:
            question, answer, contexts = self._listwise(user, request.items)
            reply = {"verdicts": [
                {"reason": f"judge=fixture ({self.rule})",
                 "verdict": "yes" if self._verdict(question, answer, c) else "no"}
                for c in contexts]}
        return parse(Completion(json.dumps(reply), model=self.model, finish_reason="stop"))

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

    def _verdict(self, question: str, answer: str, context: str) -> int:
        if self.rule == "overlap":
            wanted = words(answer)
            return int(bool(wanted) and len(wanted & words(context)) / len(wanted)
                       >= self.min_overlap)
        label = self.labels.get((question.strip(), context.strip()))
        if label is None:
            if self.unlabelled == "irrelevant":
                return 0
            raise JudgeError(
                f"judge=fixture: no label in {self.path} for question "
                f"{question.strip()[:60]!r} and context {context.strip()[:60]!r}; add a "
                "line for it, or set judge.unlabelled=irrelevant"
            )
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
