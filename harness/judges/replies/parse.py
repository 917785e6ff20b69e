"""Read verdicts out of judge replies: strict JSON first, lenient extraction as fallback,
and P(relevant) from token logprobs for soft scoring."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

from harness.core.errors import JudgeParseError

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_POSITIVE = {"1", "yes", "true"}
_NEGATIVE = {"0", "no", "false"}


def extract_json(text: str) -> dict[str, Any]:
    """The JSON object in ``text``: the whole text, a fenced block, or the outermost braces."""
    candidates = [text]
    candidates += _FENCE.findall(text)
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    raise JudgeParseError(f"no JSON object in the reply: {text[:120]!r}")


def coerce_verdict(value: Any) -> int:
    """A pointwise verdict as 0/1: numbers > 0 are 1 (never above 1), yes/no, true/false."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return 1 if value > 0 else 0
    if isinstance(value, str) and value.strip().lower() in _POSITIVE | _NEGATIVE:
        return 1 if value.strip().lower() in _POSITIVE else 0
    raise JudgeParseError(f"verdict must be 0 or 1, got {value!r}")


def pointwise(content: str) -> tuple[int, str]:
    """``(verdict, reason)`` from a ``{"reason", "verdict"}`` reply."""
    data = extract_json(content)
    if "verdict" not in data:
        raise JudgeParseError(f"reply has no 'verdict': {content[:120]!r}")
    return coerce_verdict(data["verdict"]), str(data.get("reason", ""))


def listwise(content: str, expected: int) -> list[tuple[str, str]]:
    """``[(verdict, reason), ...]`` from a ``{"verdicts": [...]}`` reply of ``expected`` items.

    Raises ``JudgeParseError`` when the count differs: deepeval silently scores such a list.
    """
    data = extract_json(content)
    items = data.get("verdicts")
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise JudgeParseError(f"reply has no 'verdicts' list: {content[:120]!r}")
    if len(items) != expected:
        raise JudgeParseError(f"{len(items)} verdicts for {expected} chunks")
    out = []
    for item in items:
        verdict = item.get("verdict")
        if not isinstance(verdict, str):
            raise JudgeParseError(f"verdict must be 'yes' or 'no', got {verdict!r}")
        out.append((verdict, str(item.get("reason", ""))))
    return out


def reason(content: str) -> str:
    """The text of a ``{"reason": ...}`` reply."""
    data = extract_json(content)
    if not isinstance(data.get("reason"), str):
        raise JudgeParseError(f"reply has no 'reason': {content[:120]!r}")
    return str(data["reason"])


_VERDICT_VALUE = re.compile(r'"verdict"\s*:\s*"?\s*(\w+)')
_WORD = re.compile(r"[^\W_]+")


def soft_verdicts(content: str, tokens: Sequence[dict[str, Any]] | None) -> list[float] | None:
    """P(relevant) for each verdict in ``content``, from the tokens' top logprobs.

    The tokens need not spell exactly the content: a server may strip a code fence or
    whitespace from the content that its tokens keep, or the reverse; the content is
    located in the tokens' text by character offsets (``_shift``). At the token that
    carries a verdict value, ``P = p_pos / (p_pos + p_neg)`` where ``p_pos`` sums
    ``exp(logprob)`` over the top candidates reading 1/yes/true (or the start of one, when
    the value is split over tokens: ``"y`` + ``es``) and ``p_neg`` over 0/no/false. Returns
    ``None`` when the endpoint sent no logprobs or a verdict token cannot be located (the
    caller falls back to the hard verdict). ``tokens`` come through
    ``harness.judges.replies.read.clean_logprobs``; candidates without a number for a logprob are
    skipped all the same.
    """
    if not tokens:
        return None
    starts, pos = [], 0
    for token in tokens:
        starts.append(pos)
        pos += len(str(token.get("token", "")))
    stream = "".join(str(token.get("token", "")) for token in tokens)
    shift = _shift(content, stream)
    if shift is None:
        return None
    out = []
    for match in _VERDICT_VALUE.finditer(content):
        offset = match.start(1) + shift
        if offset < 0 or stream[offset : offset + len(match.group(1))] != match.group(1):
            return None  # the texts differ here: no token carries this verdict
        index = next(i for i in range(len(tokens) - 1, -1, -1) if starts[i] <= offset)
        prefix = str(tokens[index].get("token", ""))[: offset - starts[index]]
        p_pos = p_neg = 0.0
        candidates = tokens[index].get("top_logprobs")
        for cand in candidates if isinstance(candidates, list) else []:
            logprob = cand.get("logprob") if isinstance(cand, dict) else None
            if not isinstance(logprob, (int, float)) or math.isnan(logprob):
                continue
            side = _side(str(cand.get("token", "")), prefix)
            if side == 1:
                p_pos += math.exp(min(logprob, 0.0))
            elif side == 0:
                p_neg += math.exp(min(logprob, 0.0))
        if p_pos + p_neg == 0.0:
            return None
        out.append(p_pos / (p_pos + p_neg))
    return out or None


def _shift(content: str, stream: str) -> int | None:
    """Where ``content[i]`` is in the tokens' ``stream``: ``stream[i + shift]``.

    The content (whole, stripped, then its outermost JSON object) is looked for in the
    stream, which may have more (a fence, whitespace); then the stream in the content,
    which may have more. ``None`` when neither holds the other.
    """
    if content == stream:
        return 0
    for part, at in _cores(content):
        if (found := stream.rfind(part)) >= 0:
            return found - at
    for part, at in _cores(stream):
        if (found := content.find(part)) >= 0:
            return at - found
    return None


def _cores(text: str) -> list[tuple[str, int]]:
    """``text``, its stripped text and its outermost ``{...}``, each with its offset."""
    stripped = text.strip()
    first, last = text.find("{"), text.rfind("}")
    out = [(text, 0), (stripped, text.find(stripped))]
    if 0 <= first < last:
        out.append((text[first : last + 1], first))
    return [(part, at) for part, at in out if part]


def _side(token: str, prefix: str) -> int | None:
    """1 when a candidate token reads a positive verdict, 0 a negative one, else ``None``.

    ``prefix``: the chosen token's text before the value (``": "`` of ``": "yes``), skipped
    when the candidate starts with it. A value cut short (``y`` of ``yes``, the rest in the
    next token) reads as the one verdict word it starts.
    """
    body = token[len(prefix) :] if prefix and token.startswith(prefix) else token
    match = _WORD.search(body)
    word = match.group(0).lower() if match else ""
    if not word:
        return None
    if word in _POSITIVE or word in _NEGATIVE:
        return 1 if word in _POSITIVE else 0
    pos = any(w.startswith(word) for w in _POSITIVE)
    neg = any(w.startswith(word) for w in _NEGATIVE)
    return None if pos == neg else int(pos)
