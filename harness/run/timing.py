"""How long a run's parts took: retrieval latency per call, index build, scoring.

The runner wraps the run's retriever in ``Timed``: ``prepare`` is timed (``prepare_s``), and
each batch of samples is searched ``run.retrieval_batch_size`` questions per call (1 by
default: each query alone, as a user's request is served), each call timed. The first call
(which often loads a model or opens a connection) is ``retrieval_first_ms``, apart from
the percentiles. The index's
own build time and size come from the retriever's ``describe()`` (every ``index`` mapping
in it, e.g. each part of a hybrid: ``build_seconds`` or ``seconds``, and ``bytes``).
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Mapping, Sequence
from typing import Any

from harness.core.boundary import check_samples, guarded, quote
from harness.core.capabilities import conform
from harness.core.described import index_facts
from harness.core.errors import ComponentFailed
from harness.core.protocols import RETRIEVER, Retriever
from harness.core.types import Corpus, RagSample


class Timed:
    """A ``Retriever`` that times its inner retriever (``retrieve_batch`` per call).

    Args:
        inner: The run's retriever.
        per_call: Questions per call to ``inner.retrieve_batch``; ``None``: the batch as
            given, untimed (a retriever that searches nothing: ``precomputed``).
    """

    def __init__(self, inner: Retriever, per_call: int | None) -> None:
        self.inner = inner = conform(inner, RETRIEVER, "retriever")
        self.label = inner.label
        self.component = f"retriever {self.label}"
        self.per_call = per_call
        self.needs_corpus = inner.needs_corpus
        self.searches = inner.searches
        self.prepare_s: float | None = None
        self.latencies = array("d")  # seconds per call
        self.searched = 0.0  # seconds in calls since ``mark``

    def prepare(self, corpus: Corpus | None) -> None:
        start = time.perf_counter()
        guarded(self.component, "prepare()", lambda: self.inner.prepare(corpus))
        self.prepare_s = time.perf_counter() - start

    def retrieve_batch(self, samples: Sequence[RagSample]) -> list[RagSample]:
        if self.per_call is None:
            return self._retrieve(samples)
        out: list[RagSample] = []
        for start in range(0, len(samples), self.per_call):
            part = samples[start : start + self.per_call]
            began = time.perf_counter()
            found = self._retrieve(part)
            took = time.perf_counter() - began
            self.latencies.append(took)
            self.searched += took
            out.extend(found)
        return out

    def _retrieve(self, samples: Sequence[RagSample]) -> list[RagSample]:
        """The inner ``retrieve_batch`` behind the boundary of users' code, its answer
        checked (``harness.core.boundary``)."""
        found = guarded(self.component, "retrieve_batch()",
                        lambda: self.inner.retrieve_batch(samples), mid_run=True)
        return check_samples(self.component, samples, found)

    def describe(self) -> dict[str, Any]:
        described = guarded(self.component, "describe()", self.inner.describe)
        if not isinstance(described, dict):
            raise ComponentFailed(f"{self.component}: describe() returned {quote(described)}; "
                                  "expected a dict")
        return described

    def mark(self) -> None:
        """Start counting retrieval time anew (scoring starts: what is searched from now
        on is searched inside the scoring loop)."""
        self.searched = 0.0

    def timing(self, described: Mapping[str, Any], scoring_s: float,
               judged: bool) -> dict[str, Any]:
        """The run's timing: latency percentiles, index facts, scoring (and judge) time.

        Args:
            described: The retriever's ``describe()``.
            scoring_s: The scoring loop's wall time (retrieval inside it is taken out).
            judged: The metric asks a judge: its time is ``judge_s``.
        """
        out: dict[str, Any] = {}
        if self.per_call is None:
            out["retrieval"] = "not measured: the dataset's own chunks, nothing is searched"
        elif len(self.latencies):
            import numpy as np  # here, not at start-up: most of a run never needs it

            ms = np.frombuffer(self.latencies, dtype=np.float64) * 1000.0
            # the first call often loads a model or opens a connection: it is shown on its
            # own and left out of the percentiles (unless it is the only one)
            first, ms = float(ms[0]), (ms[1:] if len(ms) > 1 else ms)
            out.update(
                retrieval_p50_ms=round(float(np.percentile(ms, 50)), 3),
                retrieval_p95_ms=round(float(np.percentile(ms, 95)), 3),
                retrieval_max_ms=round(float(ms.max()), 3),
                retrieval_mean_ms=round(float(ms.mean()), 3),
                retrieval_first_ms=round(first, 3),
                retrieval_calls=len(self.latencies),
                retrieval_batch_size=self.per_call,
            )
        if self.prepare_s is not None:
            out["prepare_s"] = round(self.prepare_s, 3)
        build, size = index_facts(described)
        if build is not None:
            out["index_build_s"] = round(build, 3)
        if size is not None:
            out["index_bytes"] = size
        out["scoring_s"] = round(max(0.0, scoring_s - self.searched), 3)
        if judged:
            out["judge_s"] = out["scoring_s"]
        return out


def latency_line(timing: Mapping[str, Any]) -> str | None:
    """One line for people: retrieval latency, the index, the judge's time."""
    parts: list[str] = []
    if "retrieval_p50_ms" in timing:
        per = timing.get("retrieval_batch_size", 1)
        calls = timing.get("retrieval_calls", 0)
        parts.append(
            f"retrieval p50 {_ms(timing['retrieval_p50_ms'])}  p95 "
            f"{_ms(timing['retrieval_p95_ms'])}  max {_ms(timing['retrieval_max_ms'])} "
            f"({calls:,} calls of {per} {'query' if per == 1 else 'queries'}; the first "
            f"{_ms(timing['retrieval_first_ms'])})"
        )
    index = []
    if "index_build_s" in timing:
        index.append(f"built in {timing['index_build_s']:.3g} s")
    if "index_bytes" in timing:
        size = timing["index_bytes"]
        index.append(f"{size / 1e6:.3g} MB" if size >= 1e6 else f"{size / 1e3:.3g} kB")
    if index:
        parts.append("index " + ", ".join(index))
    if "judge_s" in timing:
        parts.append(f"judge {timing['judge_s']:.3g} s")
    return "; ".join(parts) or None


def _ms(value: float) -> str:
    return f"{value / 1000:.3g} s" if value >= 1000 else f"{value:.3g} ms"
