"""Read a chat-completion reply of any shape an OpenAI-compatible server sends.

Servers differ: ``content`` may be a string, a list of parts or null with a ``refusal``;
``usage`` counts may be strings, floats, null or missing; ``logprobs`` may be absent or of
another shape. A reply that carries a usable text gives a ``Completion`` (with the model the
server names and its ``finish_reason``); one that does not raises ``JudgeParseError`` with a
reason that can stand in a row (never a ``TypeError``), or ``JudgeReplyCut`` when the token
limit cut it before any text.
Counts are read as non-negative ints (anything unreadable counts 0), logprobs as the
OpenAI ``content`` token list or ``None``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from harness.core.errors import JudgeParseError, JudgeReplyCut
from harness.core.redact import redact
from harness.core.text import clip
from harness.core.types import Completion

_COUNTS = ("prompt_tokens", "completion_tokens", "total_tokens")
#: Counts above this are not token counts (and would overflow a float cost).
_MAX_TOKENS = 2**53
#: Positive logprobs up to this are rounding errors (some servers send 1e-7); above, garbage.
_ROUNDING = 1e-4
_TEXT_PARTS = ("text", "output_text")


def read_completion(raw: bytes, logprobs: bool) -> Completion:
    """The completion in a 200 reply's body ``raw``; ``logprobs``: keep token logprobs."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        raise JudgeParseError(f"not a chat completion: {_quote(raw)}") from None
    if not isinstance(data, Mapping):
        raise JudgeParseError(f"not a chat completion: {_quote(raw)}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        error = data.get("error")
        if error is not None:  # a proxy's error sent with status 200
            raise JudgeParseError(f"the judge answered an error: {_error_text(error)}")
        raise JudgeParseError(f"not a chat completion (no choices): {_quote(raw)}")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, Mapping):
        raise JudgeParseError(f"not a chat completion (no message): {_quote(raw)}")
    finish = choice.get("finish_reason")
    content = _content_text(message.get("content"))
    if content is None:
        if finish == "length":  # e.g. a reasoning model that spent max_tokens thinking
            raise JudgeReplyCut("the judge hit its token limit before any text")
        raise JudgeParseError(_why_empty(message, choice))
    tokens = clean_logprobs(choice.get("logprobs")) if logprobs else None
    model = data.get("model")
    return Completion(
        content, tokens, clean_usage(data.get("usage")),
        model=model if isinstance(model, str) and model else None,
        finish_reason=finish if isinstance(finish, str) else None,
    )


def reply_cut(max_tokens: int | None, empty: bool = False) -> JudgeReplyCut:
    """The error of a reply that the token limit cut (``empty``: before any text)."""
    where = ("before any text " if empty else "") + "(finish_reason=length)"
    if max_tokens is None:
        return JudgeReplyCut(
            f"reply cut at the endpoint's token limit {where}; set judge.max_tokens higher"
        )
    return JudgeReplyCut(f"reply cut at judge.max_tokens={max_tokens} {where}; "
                         "raise judge.max_tokens")


def _content_text(content: Any) -> str | None:
    """The text of ``content``: a string, the text parts of a list joined, or a JSON object
    written back as text; ``None`` when there is no text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            part["text"]
            for part in content
            if isinstance(part, Mapping)
            and part.get("type", "text") in _TEXT_PARTS
            and isinstance(part.get("text"), str)
        ]
        texts += [part for part in content if isinstance(part, str)]
        return "".join(texts) if texts else None
    if isinstance(content, Mapping):  # a server that decoded the JSON reply for us
        return json.dumps(content, ensure_ascii=False)
    return None


def _why_empty(message: Mapping[str, Any], choice: Mapping[str, Any]) -> str:
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal.strip():
        return f"the judge refused: {_clip(redact(refusal.strip()))}"
    finish = choice.get("finish_reason")
    if finish == "content_filter":
        return "the reply has no text: the endpoint's content filter withheld it"
    if message.get("tool_calls"):
        return "the reply has no text, only tool calls"
    suffix = f" (finish_reason={finish})" if isinstance(finish, str) else ""
    return f"the reply has no text{suffix}"


def tokens(value: Any) -> int:
    """A token count as a non-negative int: ints, floats (truncated) and numeric strings;
    anything else (null, NaN, a word, a bool, an absurd number) counts 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return 0
    if isinstance(value, float):
        if not math.isfinite(value) or abs(value) > _MAX_TOKENS:
            return 0
        value = int(value)
    if isinstance(value, int):
        return value if 0 <= value <= _MAX_TOKENS else 0
    return 0


def clean_usage(usage: Any) -> dict[str, Any]:
    """``usage`` with only the counts the harness reads, each a non-negative int."""
    if not isinstance(usage, Mapping):
        return {}
    out: dict[str, Any] = {k: tokens(usage[k]) for k in _COUNTS if k in usage}
    details = usage.get("prompt_tokens_details")
    if isinstance(details, Mapping) and "cached_tokens" in details:
        out["prompt_tokens_details"] = {"cached_tokens": tokens(details["cached_tokens"])}
    return out


def cached_tokens(usage: Mapping[str, Any]) -> int:
    """Prompt tokens the endpoint served from its prefix cache (0 when not reported)."""
    details = usage.get("prompt_tokens_details")
    return tokens(details.get("cached_tokens")) if isinstance(details, Mapping) else 0


def clean_logprobs(logprobs: Any) -> list[dict[str, Any]] | None:
    """The ``content`` tokens of ``logprobs`` as ``{"token", "logprob", "top_logprobs"}``
    dicts with string tokens and float logprobs; ``None`` for any other shape.

    Entries without a token are dropped, candidates without a readable logprob too.
    """
    if not isinstance(logprobs, Mapping):
        return None
    content = logprobs.get("content")
    if not isinstance(content, list):
        return None
    out = []
    for entry in content:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("token"), str):
            continue
        candidates = entry.get("top_logprobs")
        top = []
        for cand in candidates if isinstance(candidates, list) else []:
            if not isinstance(cand, Mapping) or not isinstance(cand.get("token"), str):
                continue
            value = _logprob(cand.get("logprob"))
            if value is not None:
                top.append({"token": cand["token"], "logprob": value})
        out.append({
            "token": entry["token"], "logprob": _logprob(entry.get("logprob")), "top_logprobs": top
        })
    return out


def _logprob(value: Any) -> float | None:
    """A log probability: a number or numeric string up to 0 (a tiny positive one, from
    rounding, reads 0); ``-inf`` is probability 0; NaN, a positive number or anything else
    is ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if not isinstance(value, (int, float)) or math.isnan(value) or value > _ROUNDING:
        return None
    return min(float(value), 0.0)


def _error_text(error: Any) -> str:
    if isinstance(error, Mapping):
        error = error.get("message", error)
    return _clip(redact(str(error)))


def _quote(raw: bytes) -> str:
    return redact(repr(raw[:120]))


def _clip(text: str, limit: int = 200) -> str:
    return clip(" ".join(text.split()), limit)
