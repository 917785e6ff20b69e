"""Filling samples with what a retriever found: the one place ``retrieved_*`` are set."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from harness.core.errors import ConfigError
from harness.core.types import Hit, RagSample

#: Searches a list of questions: one list of hits per question, best first.
Search = Callable[[list[str]], Sequence[Sequence[Hit]]]


def fill_samples(
    samples: Sequence[RagSample], search: Search, top_k: int | None = None
) -> list[RagSample]:
    """The samples, in order, with the hits of their question as their retrieval.

    ``search`` runs once, on the questions of the samples that have one. Each sample's
    ``retrieved_contexts`` are its hits' texts and ``retrieved_context_ids`` their ids,
    best first; with ``top_k``, only the first ``top_k`` hits are kept. A sample without
    a question (``user_input`` missing or blank) gets an empty retrieval: nothing was
    retrieved for it. The other fields are kept.
    """
    asked = [i for i, s in enumerate(samples) if s.user_input and s.user_input.strip()]
    results: dict[int, Sequence[Hit]] = {}
    if asked:
        questions = [samples[i].user_input or "" for i in asked]
        for i, hits in zip(asked, search(questions), strict=True):
            results[i] = hits if top_k is None else hits[:top_k]
    out = []
    for i, sample in enumerate(samples):
        hits = results.get(i, ())
        out.append(
            dataclasses.replace(
                sample,
                retrieved_contexts=tuple(h.text for h in hits),
                retrieved_context_ids=tuple(h.id for h in hits),
            )
        )
    return out


def check_optional_top_k(value: int | None) -> int | None:
    """``retriever.top_k`` where ``null`` means all: an int >= 1 or None."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ConfigError(f"retriever.top_k: expected a number >= 1 or null, got {value!r}")
    return value
