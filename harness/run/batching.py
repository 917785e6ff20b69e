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


@contextlib.contextmanager
def older_objects_frozen() -> Iterator[None]:
    """The objects made before the loop (modules, the config, a corpus's index) left out
    of the garbage collector's full collections while it runs: without it, those
    collections rescan them about every 6,000 samples, about a seventh of a 200,000-sample
    run. Left as it is where the process froze objects itself (a server before it forks)."""
    own = gc.isenabled() and gc.get_freeze_count() == 0
    if own:
        gc.freeze()
    try:
        yield
    finally:
        if own:
            gc.unfreeze()
