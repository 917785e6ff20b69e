"""Counting a request's prompt tokens before it is sent (``run.dry_run``), never downloading.

The model's own tokenizer is used where it is installed and works offline: ``tiktoken``,
for an OpenAI model whose encoding file is already in tiktoken's cache folder (tiktoken
downloads a missing one on first use; that is never triggered here). Elsewhere the count
is a stated approximation: 4 characters a token, rounded up per request.
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Characters a token in the approximation (English prose: about 4 for OpenAI's tokenizers).
CHARS_PER_TOKEN = 4
#: OpenAI's chat format: tokens each message adds around its content, and that prime the
#: reply (the tiktoken cookbook's count for the gpt-4o family).
PER_MESSAGE, PER_REPLY = 3, 3
#: Where tiktoken fetches each encoding from; its cache file is named by this URL's sha1.
_BLOB = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
#: The sha256 tiktoken expects of each encoding file (a file that differs is downloaded
#: again by tiktoken: such a file counts as absent here).
_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}


@dataclass(frozen=True)
class TokenCounter:
    """Counts tokens of texts and of chat requests; ``method`` says how, for outputs."""

    method: str
    _encode: Callable[[str], Sequence[Any]] | None = None

    @property
    def exact(self) -> bool:
        """Whether the model's own tokenizer counts (not the approximation)."""
        return self._encode is not None

    def text(self, text: str) -> int:
        """Tokens of ``text``."""
        if self._encode is None:
            return math.ceil(len(text) / CHARS_PER_TOKEN)
        return len(self._encode(text))

    def request(self, messages: Sequence[dict[str, str]]) -> int:
        """Prompt tokens of one chat request: its messages' contents (with the tokenizer,
        plus the chat format's own tokens)."""
        if self._encode is None:
            return self.text("".join(str(m.get("content") or "") for m in messages))
        inner = sum(self.text(str(m.get("content") or "")) for m in messages)
        return inner + PER_MESSAGE * len(messages) + PER_REPLY


APPROXIMATION = TokenCounter(f"approximation: {CHARS_PER_TOKEN} characters a token, "
                             "rounded up per request (no offline tokenizer for this model)")


def counter_for(model: str) -> TokenCounter:
    """The model's tokenizer where tiktoken knows the model and has its encoding on disk,
    else ``APPROXIMATION``; nothing is downloaded, and a tokenizer that fails to load
    counts as absent."""
    encoding = _offline_encoding(model)
    if encoding is None:
        return APPROXIMATION
    return TokenCounter(f"tiktoken {encoding.name}", encoding.encode_ordinary)


def cache_folder() -> Path | None:
    """tiktoken's cache folder (``None``: its cache is off, so it would always download)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        folder = os.environ["TIKTOKEN_CACHE_DIR"]
        return Path(folder) if folder else None
    if "DATA_GYM_CACHE_DIR" in os.environ:
        return Path(os.environ["DATA_GYM_CACHE_DIR"])
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def cached_file(name: str) -> Path | None:
    """The file tiktoken would read encoding ``name`` from, when it is on disk and whole
    (tiktoken would download a missing or damaged one)."""
    folder = cache_folder()
    if folder is None or name not in _SHA256:
        return None
    path = folder / hashlib.sha1(_BLOB.format(name=name).encode()).hexdigest()  # noqa: S324
    try:
        whole = hashlib.sha256(path.read_bytes()).hexdigest() == _SHA256[name]
    except OSError:
        return None
    return path if whole else None


def _offline_encoding(model: str) -> Any:
    import importlib

    try:  # untyped here: installed or not, it is optional
        tiktoken: Any = importlib.import_module("tiktoken")
        models: Any = importlib.import_module("tiktoken.model")
    except ImportError:
        return None
    try:
        name = models.encoding_name_for_model(model)
    except KeyError:  # not a model tiktoken knows
        return None
    if cached_file(name) is None:  # loading it would download it
        return None
    try:
        return tiktoken.get_encoding(name)
    except Exception:  # noqa: BLE001 - a damaged file, a changed tiktoken: approximate
        return None
