"""The JSON schemas of the judge's replies, by what a call asks for (``Kind``).

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
    if kind != "listwise" or items is None or model.startswith("ft:"):
        return SCHEMAS[kind]
    out = copy.deepcopy(SCHEMAS[kind])
    out["properties"]["verdicts"].update(minItems=items, maxItems=items)
    return out
