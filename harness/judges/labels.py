"""The fixture judge's labels file (``judge.labels``): JSON lines, one verdict a line.

A row names the chunk and its question either way, and ``relevant`` (0 or 1, or
true/false):

- by ids, where the dataset has them: ``{"id": SAMPLE_ID, "context_id": DOC_ID, ...}``
  (``question`` may stand for ``id``);
- by text: ``{"question": ..., "context": ...}``, the chunk's text as the dataset gives it,
  or as ``samples.jsonl`` shows it: a text cut at ``run.row_text_chars`` (ending in ``…``)
  labels the chunk it starts.

A judgement looks its chunk up by ids first (sample id and document id, then question and
document id), then by text. The file is read as the dataset readers read JSON lines:
UTF-8 with or without a BOM, lines split at ``\\n`` only (a U+2028 inside a string is
text). A bad row is one line naming the file, the line and the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.core.errors import DatasetError
from harness.core.types import JudgeSubject

#: What ``harness.core.text.clip`` ends a cut text with (samples.jsonl's texts).
CUT = "…"

Key = tuple[str, str]


@dataclass
class Labels:
    """The verdicts of a labels file, by ids and by text."""

    by_ids: dict[Key, int] = field(default_factory=dict)  # (sample id, document id)
    by_question_id: dict[Key, int] = field(default_factory=dict)  # (question, document id)
    by_text: dict[Key, int] = field(default_factory=dict)  # (question, chunk text)
    cut: dict[Key, int] = field(default_factory=dict)  # texts as samples.jsonl cuts them
    cut_question_id: dict[Key, int] = field(default_factory=dict)  # a cut question, an id
    lines: dict[tuple[str, Key], int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.lines)

    def add(self, kind: str, key: Key, value: int, path: Path, line: int) -> None:
        """Record one verdict; a label contradicting an earlier one is an error."""
        table = self._table(kind)
        seen = self.lines.get((kind, key))
        if seen is not None and table[key] != value:
            raise DatasetError(str(path), f"contradicts the label on line {seen}",
                               line=line, field="relevant")
        self.lines.setdefault((kind, key), line)
        table.setdefault(key, value)

    def _table(self, kind: str) -> dict[Key, int]:
        return {"ids": self.by_ids, "question_id": self.by_question_id, "text": self.by_text,
                "cut": self.cut, "cut_question_id": self.cut_question_id}[kind]

    def find(self, subject: JudgeSubject, index: int) -> int | None:
        """The label of chunk ``index`` of ``subject``, or ``None``."""
        question = subject.question.strip()
        context = subject.contexts[index].strip()
        ids = subject.context_ids
        doc = ids[index] if ids is not None and index < len(ids) else None
        if doc is not None:
            if subject.sample_id is not None and (subject.sample_id, doc) in self.by_ids:
                return self.by_ids[subject.sample_id, doc]
            if (question, doc) in self.by_question_id:
                return self.by_question_id[question, doc]
            found = next((v for (q, d), v in self.cut_question_id.items()
                          if d == doc and _matches(q, question)), None)
            if found is not None:
                return found
        found = self.by_text.get((question, context))
        if found is not None:
            return found
        return next((value for (q, c), value in self.cut.items()
                     if _matches(q, question) and _matches(c, context)), None)


def _matches(label: str, text: str) -> bool:
    """Whether a label's text (whole, or cut: its prefix before ``…``) is ``text``'s."""
    return text.startswith(label[:-1].rstrip()) if label.endswith(CUT) else label == text


def _text(path: Path, record: dict[str, Any], name: str, line: int,
          required: bool = True) -> str | None:
    value = record.get(name)
    if value is None and not required:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and name in ("id", "context_id"):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise DatasetError(str(path), f"expected a non-empty string, got {value!r}",
                           line=line, field=name)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise DatasetError(str(path), "contains a lone surrogate, which is not valid Unicode",
                           line=line, field=name) from None
    return value.strip()


def _lines(path: Path) -> list[tuple[int, str]]:
    """``(line number, text)`` of each line, as the dataset readers split JSON lines."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DatasetError(str(path), "file not found (judge.labels)") from None
    except OSError as e:
        raise DatasetError(str(path), f"cannot read ({e.strerror or e})") from None
    out = []
    for number, raw in enumerate(data.split(b"\n"), 1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise DatasetError(str(path), f"not valid UTF-8 (byte 0x{raw[e.start]:02x} at "
                               f"column {e.start + 1})", line=number) from None
        out.append((number, text.removeprefix("\ufeff") if number == 1 else text))
    return out


def load_labels(path: Path) -> Labels:
    """The labels of ``path``; a one-line error naming the line and field of the first bad
    row, or a label contradicting an earlier one."""
    labels = Labels()
    for line, raw in _lines(path):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except ValueError as e:
            raise DatasetError(str(path), f"not valid JSON ({e})", line=line) from None
        if not isinstance(record, dict):
            raise DatasetError(str(path), "expected a JSON object", line=line)
        value = record.get("relevant")
        if value not in (0, 1) or value is None:  # True and False are 1 and 0
            raise DatasetError(str(path), f"expected 0 or 1 (or true/false), got {value!r}",
                               line=line, field="relevant")
        _add(labels, path, record, line, int(value))
    if not len(labels):
        raise DatasetError(str(path), "contains no labels (judge.labels)")
    return labels


def _add(labels: Labels, path: Path, record: dict[str, Any], line: int, value: int) -> None:
    """Register one row under each key it gives."""
    doc = _text(path, record, "context_id", line, required=False)
    context = _text(path, record, "context", line, required=False)
    sample = _text(path, record, "id", line, required=False)
    question = _text(path, record, "question", line, required=False)
    if doc is None and context is None:
        raise DatasetError(str(path), "missing: a row names its chunk by context_id (its "
                           "document id) or context (its text)", line=line, field="context")
    if sample is None and question is None:
        raise DatasetError(str(path), "missing: a row names its sample by id (with "
                           "context_id) or question", line=line, field="id")
    if doc is not None:
        if sample is not None:
            labels.add("ids", (sample, doc), value, path, line)
        if question is not None:
            kind = "cut_question_id" if question.endswith(CUT) else "question_id"
            labels.add(kind, (question, doc), value, path, line)
    if context is not None:
        if question is None:
            raise DatasetError(str(path), "missing: a row with context (a chunk's text) "
                               "needs its question", line=line, field="question")
        kind = "cut" if context.endswith(CUT) or question.endswith(CUT) else "text"
        labels.add(kind, (question, context), value, path, line)
