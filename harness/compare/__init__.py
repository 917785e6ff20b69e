"""``harness compare``: rank the runs of a sweep, with confidence intervals, or
test a candidate run against a baseline (and gate CI on it).

Reads the runs from MLflow and each run's ``samples.jsonl``; ranks them per dataset and
metric (ties as the sweep's best child); bootstraps a confidence interval of the per-query
mean; tests the two best runs, or candidate and baseline, on the queries both scored
(paired sign-flip randomization test, and Wilcoxon when scipy is installed); plots; and
logs the table and plots under ``compare/`` in the sweep's parent run.

With human labels on the same samples of both runs (``human_score`` in ``samples.jsonl``)
the paired difference is also estimated by PPI++, and the verdict uses that interval.

The modules: ``stats`` (intervals, tests, ranking), ``pairing`` (naming runs, what may be
paired, the gate), ``ppi_pair`` (the PPI++ difference), ``store`` (MLflow), ``render``
(table and plots), ``core`` (``compare()``); its command line is ``harness.cli.compare``.
"""

from harness.compare.core import COSMETIC, compare
from harness.compare.render import TOP_K, plot, render
from harness.compare.stats import bootstrap_ci, paired_test, rank_rows, sign_flip_p, top_two
from harness.compare.store import per_query, select_runs

__all__ = [
    "COSMETIC",
    "TOP_K",
    "bootstrap_ci",
    "compare",
    "paired_test",
    "per_query",
    "plot",
    "rank_rows",
    "render",
    "select_runs",
    "sign_flip_p",
    "top_two",
]
