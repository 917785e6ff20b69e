"""Output files written whole: a temporary name first, then an atomic rename, without
credentials."""

from __future__ import annotations

import contextlib
import json
import math
import os
from pathlib import Path
from typing import Any

from harness.core.redact import redact_tree
from harness.run.outputs.folder import OutputError, hint, reason


def write_text(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` whole: a temporary name first, then an atomic rename."""
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(text, "utf-8")
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise OutputError(f"cannot write {path} ({reason(e)}){hint(e)}") from None
    return path



#: The key a JSON output lists where a NaN or infinity was written as ``null`` under.
NON_FINITE = "non_finite_as_null"


def finite(data: Any, where: str = "", found: list[str] | None = None) -> Any:
    """``data`` with every NaN and infinity as ``None`` (JSON has neither); the dotted
    path of each goes to ``found``."""
    if isinstance(data, float) and not math.isfinite(data):
        if found is not None:
            found.append(where or "(the value)")
        return None
    if isinstance(data, dict):
        return {k: finite(v, f"{where}.{k}" if where else str(k), found)
                for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [finite(v, f"{where}[{i}]", found) for i, v in enumerate(data)]
    return data


def json_text(data: Any) -> str:
    """``data`` as indented JSON text without credentials; a NaN or an infinity as
    ``null`` (JSON has neither), and an object's ``non_finite_as_null`` lists where."""
    found: list[str] = []
    data = finite(data, found=found)
    if found and isinstance(data, dict):
        data[NON_FINITE] = found
    return json.dumps(redact_tree(data), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_json(path: Path, data: Any) -> Path:
    """Write ``data`` as indented UTF-8 JSON, whole (``json_text``)."""
    return write_text(path, json_text(data))
