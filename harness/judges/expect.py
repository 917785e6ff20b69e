"""What a dry run (``harness.judges.dry``) expects of the replies it does not get: a
well-formed reply made from the reply schema, and the completion tokens of the real ones,
from the verdict cache's earlier replies of the same variant and prompt where it has any."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.core.protocols import Kind
from harness.judges.replies.read import tokens

#: Characters of a made-up reply's reason when the cache knows no earlier reply.
REASON_CHARS = 100
_FILLER = "the context is weighed against the question and the answer; "
#: Earlier replies read from the cache's history of a variant and prompt, at most.
HISTORY_ROWS = 2000
#: Replies stored at most this many seconds apart count as one run (for its throughput).
BURST_GAP_S = 10.0
#: The fewest replies of one run from which its throughput is taken.
MIN_BURST = 10


def synthetic(node: Mapping[str, Any], reason: str) -> Any:
    """A value of JSON schema ``node``: strings are ``reason``, verdicts say relevant (``1``,
    ``"yes"``), arrays hold ``minItems`` items."""
    if "enum" in node:
        values = list(node["enum"])
        return next((v for v in (1, "yes") if v in values), values[0])
    kind = node.get("type")
    if kind == "object":
        return {k: synthetic(v, reason) for k, v in node.get("properties", {}).items()}
    if kind == "array":
        return [synthetic(node.get("items", {}), reason) for _ in range(node.get("minItems", 1))]
    if kind in ("integer", "number"):
        return 1
    return reason


def filler(chars: int) -> str:
    """Prose-like text of ``chars`` characters (a made-up reason)."""
    repeats = _FILLER * (chars // len(_FILLER) + 1)
    return repeats[:chars].rstrip() or "relevant"


@dataclass
class Counts:
    """Requests of one kind and their tokens."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: verdicts asked for (listwise: the chunks of each request)
    items: int = 0


@dataclass
class Seen:
    """What earlier replies of one kind say: completion tokens and reason lengths."""

    replies: int = 0
    completion_tokens: int = 0
    items: int = 0
    reasons: int = 0
    reason_chars: int = 0

    def add(self, content: str, completion_tokens: int) -> None:
        """Count one reply (its reasons read from its JSON, when it parses)."""
        found = reasons(content)
        self.replies += 1
        self.completion_tokens += completion_tokens
        self.items += max(1, found[0])
        self.reasons += len(found[1])
        self.reason_chars += sum(found[1])


def reasons(content: str) -> tuple[int, list[int]]:
    """``(verdicts, lengths of the reasons)`` in a reply's JSON (``(0, [])``: unreadable)."""
    start, end = content.find("{"), content.rfind("}")
    try:
        value = json.loads(content[start : end + 1]) if 0 <= start < end else None
    except ValueError:
        value = None
    if not isinstance(value, dict):
        return 0, []
    listed = value.get("verdicts")
    items: list[Any] = listed if isinstance(listed, list) else [value]
    lengths = [len(i["reason"]) for i in items
               if isinstance(i, dict) and isinstance(i.get("reason"), str)]
    return len(items), lengths


def kind_of(content: str) -> Kind:
    """What a stored reply answered: a listwise or pointwise verdict, or an explanation."""
    if '"verdicts"' in content:
        return "listwise"
    return "pointwise" if '"verdict"' in content else "reason"



@dataclass
class History:
    """Earlier replies by kind, and the throughput of the latest run that stored them."""

    by_kind: dict[str, Seen] = field(default_factory=dict)
    #: (replies, seconds) of the latest burst of stored replies
    rate: tuple[int, float] | None = None

    def read(self, cache: Any, variant: str, prompt_sha: str, model: str) -> None:
        """The replies a SQLite ``VerdictCache`` holds of this variant, prompt and model."""
        rows, _ = cache.query(
            "SELECT created, completion_tokens, value FROM replies WHERE variant = ? AND "
            "prompt_sha = ? AND model = ? ORDER BY created DESC LIMIT ?",
            (variant, prompt_sha, model, HISTORY_ROWS))
        for _, completion, value in rows:
            try:
                content = json.loads(value).get("content")
            except (ValueError, AttributeError):
                continue
            if isinstance(content, str):
                self.by_kind.setdefault(kind_of(content), Seen()).add(content, int(completion))
        burst = [float(r[0]) for r in rows]
        n = 1
        while n < len(burst) and burst[n - 1] - burst[n] <= BURST_GAP_S:
            n += 1
        if n >= MIN_BURST and burst[0] > burst[n - 1]:
            self.rate = (n - 1, burst[0] - burst[n - 1])

    def take(self, replies: Sequence[Mapping[str, Any]]) -> None:
        """Count stored replies the run took (when the cache's history cannot be read)."""
        for reply in replies:
            content = reply.get("content")
            if isinstance(content, str):
                done = tokens((reply.get("usage") or {}).get("completion_tokens"))
                self.by_kind.setdefault(kind_of(content), Seen()).add(content, done)

    def reason_chars(self, kind: str) -> int:
        """How long a made-up reply's reasons are: as the earlier replies', else
        ``REASON_CHARS``."""
        seen = self.by_kind.get(kind)
        if seen is None or not seen.reasons:
            return REASON_CHARS
        return max(1, round(seen.reason_chars / seen.reasons))

    def expected(self, kind: str, counts: Counts) -> tuple[int, str]:
        """Expected completion tokens of the requests of ``kind`` sent, and where from."""
        seen = self.by_kind.get(kind)
        if seen is None or not seen.replies or not seen.completion_tokens:
            return counts.completion_tokens, (
                f"the reply schema, {self.reason_chars(kind)}-character reasons")
        if kind == "listwise":  # replies grow with the verdicts they hold
            expected = math.ceil(seen.completion_tokens / max(1, seen.items) * counts.items)
        else:
            expected = math.ceil(seen.completion_tokens / seen.replies * counts.requests)
        return expected, f"the verdict cache, {seen.replies} earlier replies"

    def observed(self) -> dict[str, Any] | None:
        """The latest burst of stored replies (``None``: no history of one)."""
        if self.rate is None:
            return None
        return {"requests": self.rate[0], "seconds": round(self.rate[1], 3)}
