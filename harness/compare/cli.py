"""The ``python -m harness.compare`` / ``harness-compare`` command line."""

from __future__ import annotations

import os
import sys
from typing import Any

from harness.compare.core import compare
from harness.errors import ConfigError, HarnessError, closest

USAGE = """\
usage: python -m harness.compare experiment=NAME [key=value ...]

Rank the runs of a sweep by a metric, with bootstrap confidence intervals, and test the
two best runs against each other on the queries both scored.

keys:
  experiment=NAME    the MLflow experiment (required)
  metric=mean        the MLflow metric to rank by; per query: `score` for mean, else the
                     samples.jsonl key of that name (ndcg_at_10 also reads ndcg@10)
  tracking_uri=URI   default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db
  sweep=latest       latest: children of the newest sweep; all: every finished run; or a
                     parent run id
  top=N              rows to print (default: all)
  bootstrap=2000     resamples for the intervals and the randomization test
  confidence=0.95    interval coverage
  seed=0             random seed
  plots=true         metric vs retriever.top_k, per-query box plot (matplotlib)
  log=true           log compare/table.md, table.json and plots to the parent run (or a
                     new run named "compare" when there is none)
"""
DEFAULTS: dict[str, Any] = {
    "experiment": None, "metric": "mean", "tracking_uri": None, "sweep": "latest", "top": None,
    "bootstrap": 2000, "confidence": 0.95, "seed": 0, "plots": True, "log": True,
}
_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def parse(argv: list[str]) -> dict[str, Any]:
    """``key=value`` tokens to ``compare`` keyword arguments (``ConfigError`` when bad)."""
    args = dict(DEFAULTS)
    for token in argv:
        key, eq, raw = token.partition("=")
        if not eq:
            raise ConfigError(f"expected key=value, got {token!r}; see --help")
        if key not in DEFAULTS:
            hint = closest(key, list(DEFAULTS))
            raise ConfigError(f"unknown key {key!r}{hint}; keys: {', '.join(DEFAULTS)}")
        try:
            if key in ("plots", "log"):
                args[key] = _BOOLEANS[raw.lower()]
            elif key in ("top", "bootstrap", "seed"):
                args[key] = None if key == "top" and raw in ("all", "null") else int(raw)
            else:
                args[key] = float(raw) if key == "confidence" else raw
        except (KeyError, ValueError):
            raise ConfigError(f"{key}: bad value {raw!r}; see --help") from None
    if not args["experiment"]:
        raise ConfigError("experiment=NAME is required; see --help")
    return args


def main(argv: list[str] | None = None) -> None:
    """Console entry point: print the table and the test; exit 2 on a usage or store error."""
    argv = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in argv):
        print(USAGE, end="")
        return
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    try:
        args = parse(argv)
        result = compare(args.pop("experiment"), **args)
    except HarnessError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except Exception as e:  # the store's own errors (MlflowException and kin): one line
        if not type(e).__module__.startswith("mlflow"):
            raise
        print(f"error: MLflow: {str(e).strip().splitlines()[0]}", file=sys.stderr)
        sys.exit(2)
    print(result["table"], end="")
    if result["logged_to"]:
        print(f"logged {', '.join(result['artifacts'])} to run {result['logged_to']}")
