"""Top-k selection over an index's scores, and the check of count settings."""

from __future__ import annotations

from typing import Annotated

import numpy as np

from harness.core.errors import ConfigError
from harness.core.validation import Range

#: A ranked result list: (chunk index into the retriever's chunks, score), best first.
Scored = list[tuple[int, float]]

#: A count setting (``top_k``, ``candidates``, ``batch_size``): an int >= 1.
Count = Annotated[int, Range(ge=1)]


def top_k(scores: np.ndarray, k: int, *, positive_only: bool = False) -> Scored:
    """The ``k`` best entries of ``scores`` as ``(index, score)``, best first.

    Ties are broken by the lower index (corpus order), so results are deterministic.
    With ``positive_only``, entries scoring <= 0 are dropped (BM25: a document that shares
    no term with the query is not a match, as in Lucene).
    """
    n = int(scores.shape[0])
    k = min(int(k), n)
    if k <= 0:
        return []
    if k < n:
        part = np.argpartition(-scores, k - 1)[:k]
        kth = scores[part].min()
        candidates = np.flatnonzero(scores >= kth)
    else:
        candidates = np.arange(n)
    order = candidates[np.lexsort((candidates, -scores[candidates]))][:k]
    values = scores[order]
    if positive_only:
        keep = values > 0
        order, values = order[keep], values[keep]
    return list(zip(order.tolist(), values.astype(float).tolist(), strict=True))


def check_top_k(where: str, name: str, value: int) -> int:
    """Validate a positive count setting (``top_k``, ``candidates``)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where}.{name}: expected a number >= 1, got {value!r}")
    return value

