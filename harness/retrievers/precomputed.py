"""The chunks already in the dataset, optionally cut to the top k."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Annotated, Any

from harness.core.types import Corpus, RagSample
from harness.core.validation import Range
from harness.retrievers.fill import check_optional_top_k


class Precomputed:
    """Use each sample's own ``retrieved_contexts`` / ``retrieved_context_ids``.

    Args:
        top_k: Keep only the first k retrieved chunks (``null``: all). Sweeping it over one
            retrieval (``-m retriever.top_k=3,5,10``) re-judges nothing: the chunks of
            top 3 are the first chunks of top 5, and the verdict cache has them.
    """

    needs_corpus: bool = False
    searches: bool = False  # the dataset's own chunks pass through: nothing to time
    label = "precomputed"

    def __init__(self, top_k: Annotated[int, Range(ge=1)] | None = None) -> None:
        self.top_k = check_optional_top_k(top_k)

    def prepare(self, corpus: Corpus | None) -> None:
        """Nothing to prepare: the retrieval is in the samples."""

    def retrieve_batch(self, samples: Sequence[RagSample]) -> list[RagSample]:
        """The samples with their retrieval cut to ``top_k``."""
        if self.top_k is None:
            return list(samples)
        k = self.top_k
        return [
            dataclasses.replace(
                s,
                retrieved_contexts=(
                    None if s.retrieved_contexts is None else s.retrieved_contexts[:k]
                ),
                retrieved_context_ids=(
                    None if s.retrieved_context_ids is None else s.retrieved_context_ids[:k]
                ),
            )
            for s in samples
        ]

    def describe(self) -> dict[str, Any]:
        """Settings, for outputs."""
        return {"kind": "precomputed", "top_k": self.top_k}
