"""Read verdicts out of judge replies: strict JSON first, lenient extraction as fallback,
and P(relevant) from token logprobs for soft scoring."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

from harness.errors import JudgeParseError

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


def soft_verdicts(content: str, tokens: Sequence[dict[str, Any]] | None) -> list[float] | None:
    """P(relevant) for each verdict in ``content``, from the tokens' top logprobs.

    At the token that carries a verdict value, ``P = p_pos / (p_pos + p_neg)`` where
    ``p_pos`` sums ``exp(logprob)`` over the top candidates reading 1/yes/true and
    ``p_neg`` over 0/no/false. Returns ``None`` when the endpoint sent no logprobs or a
    verdict token cannot be located (the caller falls back to the hard verdict).
    ``tokens`` come through ``harness.judges.reply.clean_logprobs``; candidates without a
    number for a logprob are skipped all the same.
    """
    if not tokens:
        return None
    starts, pos = [], 0
    for token in tokens:
        starts.append(pos)
        pos += len(str(token.get("token", "")))
    if pos != len(content):
        return None
    out = []
    for match in _VERDICT_VALUE.finditer(content):
        offset = match.start(1)
        index = next((i for i in range(len(tokens) - 1, -1, -1) if starts[i] <= offset), None)
        if index is None:
            return None
        p_pos = p_neg = 0.0
        candidates = tokens[index].get("top_logprobs")
        for cand in candidates if isinstance(candidates, list) else []:
            logprob = cand.get("logprob") if isinstance(cand, dict) else None
            if not isinstance(logprob, (int, float)) or math.isnan(logprob):
                continue
            word = str(cand.get("token", "")).strip().strip('"').lower()
            if word in _POSITIVE:
                p_pos += math.exp(min(logprob, 0.0))
            elif word in _NEGATIVE:
                p_neg += math.exp(min(logprob, 0.0))
        if p_pos + p_neg == 0.0:
            return None
        out.append(p_pos / (p_pos + p_neg))
    return out or None
