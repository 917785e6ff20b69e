"""The ``harness compare`` command line (also ``python -m harness.compare`` and
``harness-compare`` until 0.3.0)."""

from __future__ import annotations

import os
import sys
from typing import Any

from harness.cli.signals import stops
from harness.compare.core import compare
from harness.core.errors import ConfigError, HarnessError, closest

USAGE = """\
usage: python -m harness.compare experiment=NAME [key=value ...]
       python -m harness.compare baseline=RUN candidate=RUN [fail_if_worse=true] [key=value ...]

Rank the runs of a sweep by a metric, with bootstrap confidence intervals, one table per
dataset and metric, and test the two best runs against each other on the queries both
scored; or test a candidate run against a baseline run (and gate CI on it: exit 4).

keys:
  experiment=NAME    the MLflow experiment (required unless baseline= and candidate= are
                     given; then it narrows where their names are looked up)
  baseline=RUN       a run id, a run name or its overrides (key=value,...): the reference
  candidate=RUN      the run tested against the baseline on the ids both scored
  force=false        pair a baseline and candidate of different datasets or metrics anyway
  fail_if_worse=false  exit 4 when the candidate is worse: a mean paired difference below
                     -min_delta with p < alpha (the decision is printed either way)
  alpha=0.05         the gate's significance level (sign-flip test; the PPI++ test when
                     both runs have human labels on the same samples)
  min_delta=0        the loss the gate tolerates (in units of the metric)
  metric=headline    the MLflow metric to rank by; headline: the runs' headline, ppi_mean
                     (the PPI++ mean, its PPI++ interval) when every run has human labels,
                     else mean (the judge alone); per query: `score` for mean, else the
                     samples.jsonl key of that name (ndcg_at_10 also reads ndcg@10)
  tracking_uri=URI   default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db
  sweep=latest       latest: children of the newest sweep; all: every finished run; or a
                     parent run id
  top=N              rows to print (default: all)
  bootstrap=2000     resamples for the intervals and the randomization test
  confidence=0.95    interval coverage
  seed=0             random seed
  plots=true         metric vs retriever.top_k; per-query wins, ties and losses against
                     #1 or the baseline (matplotlib)
  log=true           log compare/table.md, table.json and plots to the parent run (or a
                     new run named "compare" when there is none)
  pareto=A,-B        the Pareto front of metrics A (maximised) and B (a leading -
                     minimises): its table, compare/pareto.png and pareto.json; default:
                     the sweep's run.objective when it names several, else no front;
                     none: off. On a measured time (retrieval_p95_ms, prepare_s, ...) a
                     gap inside its noise (the run's CI from its logged spread, at least
                     10%) is a tie, not a win
"""
DEFAULTS: dict[str, Any] = {
    "experiment": None, "metric": "headline", "tracking_uri": None, "sweep": "latest", "top": None,
    "bootstrap": 2000, "confidence": 0.95, "seed": 0, "plots": True, "log": True,
    "baseline": None, "candidate": None, "force": False, "fail_if_worse": False,
    "alpha": 0.05, "min_delta": 0.0, "pareto": None,
}
_FLAGS = ("plots", "log", "force", "fail_if_worse")
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
            if key in _FLAGS:
                args[key] = _BOOLEANS[raw.lower()]
            elif key in ("top", "bootstrap", "seed"):
                args[key] = None if key == "top" and raw in ("all", "null") else int(raw)
            else:
                args[key] = float(raw) if key in ("confidence", "alpha", "min_delta") else raw
        except (KeyError, ValueError):
            raise ConfigError(f"{key}: bad value {raw!r}; see --help") from None
    if not args["experiment"] and not (args["baseline"] and args["candidate"]):
        raise ConfigError("experiment=NAME is required (or baseline=RUN candidate=RUN); "
                          "see --help")
    return args


def _run(argv: list[str]) -> dict[str, Any]:
    """Parse and compare; a bad argument, store or run is one ``error:`` line, exit 2."""
    from harness.compare.store import check_named_runs
    from harness.core.redact import redact

    try:
        args = parse(argv)
        uri = args["tracking_uri"] or os.environ.get("MLFLOW_TRACKING_URI") or \
            "sqlite:///mlflow.db"
        check_named_runs(uri, {"baseline": args["baseline"], "candidate": args["candidate"]})
        return compare(args.pop("experiment"), **args)
    except HarnessError as e:
        print(f"error: {redact(str(e))}", file=sys.stderr)
    except OSError as e:  # a file the store or the plots could not write or read
        print(f"error: {redact(str(e))}", file=sys.stderr)
    except Exception as e:  # the store's own errors (MlflowException, its drivers): one line
        lines = str(e).strip().splitlines()
        what = "MLflow" if type(e).__module__.startswith("mlflow") else type(e).__name__
        hint = (" (the store's driver is not installed)"
                if isinstance(e, ModuleNotFoundError) else "")
        print(f"error: {what}: {redact(lines[0] if lines else '')}{hint}", file=sys.stderr)
    sys.exit(2)


def main(argv: list[str] | None = None, prog: str = "python -m harness.compare") -> None:
    """Console entry point: print the table and the test; exit 2 on a usage or store error,
    4 when ``fail_if_worse`` finds the candidate worse."""
    argv = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in argv):
        print(USAGE.replace("python -m harness.compare", prog), end="")
        return
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    with stops("harness.compare", "nothing more was logged to MLflow"):
        result = _run(argv)
    print(result["table"], end="")  # not interrupted: the table and the gate's line
    if result["logged_to"]:
        print(f"logged {', '.join(result['artifacts'])} to run {result['logged_to']}")
    if result["gate"]:
        print(result["gate"]["line"])
        if result["gate"]["failed"]:
            sys.exit(4)
