"""Seeded synthetic samples and judges for the PPI coverage tests.

A sample has K ranked chunks with human verdicts; a judge sees each chunk and errs by its
kind: ``lenient`` calls 25 % of the irrelevant chunks relevant, ``strict`` misses 40 % of
the relevant ones, ``useless`` says relevant by a coin toss whatever the chunk. ``graded``
draws a TREC-like grade 0..3 per chunk (relevant from grade 2) and lets the judge's error
depend on the grade: grade 1 ("related") fools a lenient judge most.
"""

from __future__ import annotations

import numpy as np

K = 5
#: P(judge says relevant | human irrelevant), P(judge says relevant | human relevant)
BINARY = {"lenient": (0.25, 0.95), "strict": (0.03, 0.60), "useless": (0.5, 0.5)}
#: P(judge says relevant | grade 0, 1, 2, 3)
GRADED = {"lenient": (0.10, 0.60, 0.95, 0.99), "strict": (0.01, 0.05, 0.55, 0.80),
          "useless": (0.5, 0.5, 0.5, 0.5)}
GRADE_P = (0.45, 0.25, 0.2, 0.1)


def ap(verdicts: np.ndarray) -> np.ndarray:
    """Average precision of each row (eps 0), vectorised: docs/reference/metrics.md 1."""
    prefix = np.cumsum(verdicts, axis=1)
    ranks = np.arange(1, verdicts.shape[1] + 1)
    num = (prefix / ranks * verdicts).sum(axis=1)
    den = prefix[:, -1]
    return np.where(den > 0, num / np.maximum(den, 1), 0.0)


def population(
    rng: np.random.Generator, size: int, judge: str, graded: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """``(human verdicts, judge verdicts)``, each ``size`` x ``K`` of 0/1."""
    if graded:
        grades = rng.choice(4, size=(size, K), p=GRADE_P)
        human = (grades >= 2).astype(float)
        says = np.asarray(GRADED[judge])[grades]
    else:
        rate = rng.beta(1.0, 1.3, size=(size, 1))  # how good each query's retrieval is
        human = (rng.random((size, K)) < rate).astype(float)
        miss, hit = BINARY[judge]
        says = np.where(human == 1, hit, miss)
    return human, (rng.random((size, K)) < says).astype(float)


def true_mean(judge: str, graded: bool, size: int = 1_000_000, seed: int = 12345) -> float:
    """The population mean of the human score, to ~0.0004 (one huge seeded draw)."""
    human, _ = population(np.random.default_rng(seed), size, judge, graded)
    return float(ap(human).mean())
