"""The JSON schemas of the judge's replies, by what a call asks for (``Kind``).

``pointwise_bare`` and ``listwise_bare`` are the verdicts without a reason each, for
prompts with ``reasons: false``: the score reads only the verdicts, and a reason is most of
a reply's output tokens.

Verdicts are enums. A listwise schema sent with a request also pins the number of verdicts
(``minItems`` = ``maxItems`` = the number of chunks), so a grammar-constrained server
(llama.cpp, vLLM, OpenAI's strict mode) cannot miscount. OpenAI documents both keywords as
supported in strict mode except for fine-tuned models (``ft:...``), which get none.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["SCHEMAS", "schema"]

SCHEMAS: dict[str, dict[str, Any]] = {
    "pointwise": {
        "type": "object",
        "properties": {
            "reason": {"type": "string"},
            "verdict": {"type": "integer", "enum": [0, 1]},
        },
        "required": ["reason", "verdict"],
        "additionalProperties": False,
    },
    "listwise": {
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "reason": {"type": "string"},
                        "verdict": {"type": "string", "enum": ["yes", "no"]},
                    },
                    "required": ["reason", "verdict"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["verdicts"],
        "additionalProperties": False,
    },
    "pointwise_bare": {
        "type": "object",
        "properties": {"verdict": {"type": "integer", "enum": [0, 1]}},
        "required": ["verdict"],
        "additionalProperties": False,
    },
    "listwise_bare": {
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}},
                    "required": ["verdict"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["verdicts"],
        "additionalProperties": False,
    },
    "reason": {
        "type": "object",
        "properties": {"reason": {"type": "string"}},
        "required": ["reason"],
        "additionalProperties": False,
    },
}


def schema(kind: str, items: int | None = None, model: str = "") -> dict[str, Any]:
    """The schema of ``kind``, a listwise one holding exactly ``items`` verdicts when given
    (not for OpenAI fine-tuned models, whose strict mode rejects the count)."""
    if kind not in ("listwise", "listwise_bare") or items is None or model.startswith("ft:"):
        return SCHEMAS[kind]
    out = copy.deepcopy(SCHEMAS[kind])
    out["properties"]["verdicts"].update(minItems=items, maxItems=items)
    return out
