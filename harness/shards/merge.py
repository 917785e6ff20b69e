"""Merging the shards of one run (``run.shards``) into what one process would have counted.

Exactly, where ``summary.json`` reads it: scores in order (their mean is ``math.fsum``'s,
order-free anyway), counts, unscored reasons (capped as one process caps them: the
workers count every reason), and the retrieval metrics, whose sums are the same
left-to-right additions in sample order (``fold``: each shard adds its values to the sums
of the shards before it). The rows the report and plots sample evenly are merged evenly,
not item for item.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from typing import TypeVar

import numpy as np

from harness.run.loop import Scores, Tally
from harness.run.sampling import Evenly

T = TypeVar("T")


def fold(values: Mapping[str, array[float]], starts: Mapping[str, float]) -> dict[str, float]:
    """``starts`` plus each name's ``values``, added one at a time from the left (as the
    evaluation loop adds them: ``numpy.add.accumulate`` is that sequence of additions)."""
    sums = dict(starts)
    for name, column in values.items():
        if len(column):
            seq = np.concatenate(([sums.get(name, 0.0)], np.frombuffer(column, np.float64)))
            sums[name] = float(np.add.accumulate(seq)[-1])
    return sums


def merge(tallies: Sequence[Tally], into: Tally, sums: Mapping[str, float]) -> Tally:
    """Add the shards' ``tallies`` (in sample order) to the empty tally ``into``;
    ``sums``: the retrieval sums of the whole run (``fold``)."""
    if tallies:
        into.retrieval_ks, into.beyond_depth = tallies[0].retrieval_ks, tallies[0].beyond_depth
    for tally in tallies:
        add_scores(into, tally)
        for name, scores in into.variants.items():  # several variants: each one's own
            add_scores(scores, tally.variants[name])
        into.n_retrieval += tally.n_retrieval
        into.retrieval_depth = max(into.retrieval_depth, tally.retrieval_depth)
        into.id_queries += tally.id_queries  # retrieved ids meeting reference ids
        into.id_matched += tally.id_matched
        into.id_example = into.id_example or tally.id_example
    names = next((list(t.retrieval) for t in tallies if t.retrieval), [])
    into.retrieval = {name: sums[name] for name in names}
    into.verdict_map = evenly([t.verdict_map for t in tallies])
    into.report_rows = evenly([t.report_rows for t in tallies])
    # an unscored row's position is its sample's
    counts = [t.n_samples for t in tallies]
    into.report_unscored = evenly([t.report_unscored for t in tallies], counts)
    return into


def add_scores(into: Scores, part: Scores) -> None:
    """Add one shard's counts of a variant to ``into`` (the shards in sample order)."""
    into.scores.extend(part.scores)
    for reason, count in part.reasons.items():  # in the order first seen
        into.add_reason(reason)  # kept, or counted under the capped reasons' key,
        key = reason if reason in into.reasons else list(into.reasons)[-1]  # added last
        into.reasons[key] += count - 1
    if part.successes is not None:
        into.successes = (into.successes or 0) + part.successes
    for rank in range(len(into.rank_totals)):
        into.rank_totals[rank] += part.rank_totals[rank]
        into.rank_relevant[rank] += part.rank_relevant[rank]
    into.n_samples += part.n_samples


def evenly(parts: Sequence[Evenly[T]], sizes: Sequence[int] | None = None) -> Evenly[T]:
    """One ``Evenly`` of consecutive streams: their items at their positions in the whole
    (``sizes``: the length of each stream in the positions its items carry; by default
    the items each saw), thinned the way ``Evenly`` thins its own."""
    out: Evenly[T] = Evenly(parts[0].n if parts else 0)
    offset = 0
    for i, part in enumerate(parts):
        out.items += [(offset + at, item) for at, item in part.items]
        out.stride = max(out.stride, part.stride)
        out.seen += part.seen
        offset += part.seen if sizes is None else sizes[i]
    while out.n and len(out.items) >= 2 * out.n:
        out.items = out.items[::2]
        out.stride *= 2
    return out
