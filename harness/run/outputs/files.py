"""Output files written whole: a temporary name first, then an atomic rename, without
credentials."""

from __future__ import annotations

import contextlib
import json
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



def write_json(path: Path, data: Any) -> Path:
    """Write ``data`` as indented UTF-8 JSON, whole, without credentials."""
    return write_text(path, json.dumps(redact_tree(data), indent=2, ensure_ascii=False) + "\n")
