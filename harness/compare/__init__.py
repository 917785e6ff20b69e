"""``python -m harness.compare``: rank the runs of a sweep, with confidence intervals.

Reads the runs from MLflow and each run's ``samples.jsonl``; bootstraps a confidence
interval of the per-query mean; tests the two best runs against each other on the queries
both scored (paired sign-flip randomization test, and Wilcoxon when scipy is installed);
plots; and logs the table and plots under ``compare/`` in the sweep's parent run.

The modules: ``stats`` (intervals, tests, ranking), ``store`` (MLflow), ``render`` (table
and plots), ``core`` (``compare()``), ``cli`` (``main``).
"""

from harness.compare.cli import DEFAULTS, USAGE, main, parse
from harness.compare.core import COSMETIC, compare
from harness.compare.render import TOP_K, plot, render
from harness.compare.stats import bootstrap_ci, paired_test, rank_rows, sign_flip_p, top_two
from harness.compare.store import per_query, select_runs

# The names these had before the package was split into modules.
_per_query = per_query
_test_top_two = top_two

__all__ = [
    "COSMETIC",
    "DEFAULTS",
    "TOP_K",
    "USAGE",
    "bootstrap_ci",
    "compare",
    "main",
    "paired_test",
    "parse",
    "per_query",
    "plot",
    "rank_rows",
    "render",
    "select_runs",
    "sign_flip_p",
    "top_two",
]
