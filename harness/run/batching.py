"""What the evaluation loop does once per group of rows rather than once per row."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


def add_in_order(totals: dict[str, float], names: tuple[str, ...],
                 rows: list[tuple[float, ...]]) -> None:
    """Add each of ``rows`` (values in the order of ``names``) to ``totals``, one after the
    other: the same additions, in the same order, as adding each sample's on its own."""
    for name, column in zip(names, zip(*rows, strict=True), strict=True):
        total = totals.get(name, 0.0)
        for value in column:
            total += value
        totals[name] = total


#: Allocations between the collector's youngest collections while the loop runs (Python's
#: default is 700): a batch's rows then mostly die before a collection looks at them.
YOUNG_THRESHOLD = 10_000


@contextlib.contextmanager
def older_objects_frozen() -> Iterator[None]:
    """The objects made before the loop (modules, the config, a corpus's index) left out
    of the garbage collector's full collections while it runs, and its youngest collections
    made less often: without it, the full collections rescan those objects about every
    6,000 samples, about a seventh of a 200,000-sample run, and the young ones cost about
    3 % more. Left as it is where the process froze objects itself (a server before it
    forks) or turned the collector off; restored after."""
    own = gc.isenabled() and gc.get_freeze_count() == 0
    thresholds = gc.get_threshold()
    if own:
        gc.freeze()
        gc.set_threshold(max(thresholds[0], YOUNG_THRESHOLD), *thresholds[1:])
    try:
        yield
    finally:
        if own:
            gc.unfreeze()
            gc.set_threshold(*thresholds)
