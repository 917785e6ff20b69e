"""``compare()``: rank the runs of a sweep per dataset and metric and test the two best, or
test a candidate against a baseline (the steps in order)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.compare import bill, ppi_pair
from harness.compare import pareto as pareto_front
from harness.compare.pairing import (
    check_pair,
    gate,
    identity,
    judged_metric,
    logged,
    resolve,
    variant_metric,
)
from harness.compare.render import plot, render
from harness.compare.stats import paired_test, rank_rows, top_two
from harness.compare.store import finished, log_outputs, open_experiment, per_query, select_runs
from harness.compare.variants import per_variant
from harness.core.errors import ConfigError, TrackingError, closest
from harness.core.metric_names import HEADLINE
from harness.run.outputs.files import json_text

#: Params that never change a score; never shown as "what varied".
COSMETIC = {"run.progress", "run.quiet", "run.fail_under"}


def compare(
    experiment: str | None = None, metric: str = HEADLINE, *, tracking_uri: str | None = None,
    sweep: str = "latest", top: int | None = None, bootstrap: int = 2000,
    confidence: float = 0.95, seed: int = 0, plots: bool = True, log: bool = True,
    baseline: str | None = None, candidate: str | None = None, force: bool = False,
    fail_if_worse: bool = False, alpha: float = 0.05, min_delta: float = 0.0,
    pareto: str | Sequence[str] | None = None,
) -> dict[str, Any]:
    """Rank the runs of ``experiment`` by ``metric`` and test the two best, one table per
    dataset (``dataset.sha256``) and metric; or test ``candidate`` against ``baseline``.

    Args:
        experiment: The MLflow experiment name (optional with ``baseline``/``candidate``:
            then names are looked up in every experiment).
        metric: The MLflow metric to rank by. Per query: ``score`` for ``mean``, else the
            ``samples.jsonl`` key of that name; rows without a number are left out.
            ``headline`` (the default): the runs' headline, ``ppi_mean`` when every run
            has human labels (its interval the PPI++ one, the paired verdict PPI++'s
            where both runs are labelled on the same samples), else ``mean``.
        tracking_uri: The store; default ``$MLFLOW_TRACKING_URI`` or ``sqlite:///mlflow.db``.
        sweep: ``latest`` (children of the newest parent run), ``all`` (every finished run
            but parents and compare runs) or a parent run id.
        top: Rows in each table (default all); the plots and the test use every run.
        bootstrap: Resamples for the intervals and the randomization test.
        confidence: Coverage of the intervals.
        seed: Seed of every resampling (each starts from it, so results do not depend on
            the order of the runs).
        plots: Draw the plots (needs matplotlib).
        log: Log ``compare/`` artifacts to the parent run, or to a new run named
            ``compare`` (tag ``harness.compare=true``) when there is no parent.
        baseline: A run id, run name or override string (``a=1,b=2``); with ``candidate``.
        candidate: The run tested against ``baseline`` on the ids both scored.
        force: Pair a baseline and candidate of different datasets or metrics anyway.
        fail_if_worse: Decide the gate: ``gate`` says whether the candidate is worse.
        alpha: The gate's significance level.
        min_delta: How much worse (mean paired difference) the gate tolerates.
        pareto: The objectives of a Pareto front (``ndcg_at_10,-retrieval_p95_ms``; a
            leading ``-`` minimises); by default the sweep's ``run.objective`` when it
            names several, else no front; ``none`` for none. On a measured time a gap
            inside the noise is a tie (``harness.compare.noise``).

    Returns:
        ``groups`` (one per dataset and metric: ``label``, ``rows``, ``all_rows``,
        ``varying``, ``test``, ``notes``), ``rows`` (every group's printed rows: rank,
        run_id, run_name, value, ci, n, n_unscored, params, dataset_sha256), ``all_rows``,
        ``varying`` and ``test`` (of the first group), ``notes``, ``table`` (the Markdown
        printed), ``parent_run_id``, ``gate`` (``{"failed", "line"}`` or ``None``),
        ``logged_to`` (a run id or ``None``), ``artifacts`` (the logged paths) and
        ``pareto`` (per group: ``objectives``, ``front``, ``dominated``, ``skipped``; or
        ``None``), ``variants`` (a baseline and candidate of several variants,
        ``metric=mean``: the paired test of each variant both scored; else ``None``).

    A run of several variants (``metric=[a,b]``) is paired on its headline, the first
    listed: ``metric=id_ranked`` against ``metric=[id_ranked,non_llm]`` pairs their
    ``id_ranked`` scores; ``<variant>/mean`` pairs that variant of each (a run of it
    alone included).

    Raises:
        ConfigError: A bad argument, a metric no run has, or a baseline and candidate
            that differ in dataset or metric (without ``force``).
        TrackingError: No such experiment, sweep or runs.
    """
    _check(confidence, bootstrap, top, alpha, min_delta, baseline, candidate, fail_if_worse,
           experiment)
    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or "sqlite:///mlflow.db"
    c, exp = open_experiment(uri, experiment)
    notes: list[str] = []
    if baseline is not None and candidate is not None:
        exp_ids = [exp.experiment_id] if exp else [e.experiment_id for e in c.search_experiments()]
        pool = finished(c, exp_ids)
        base, n1 = resolve(pool, c.get_run, baseline, "baseline")
        cand, n2 = resolve(pool, c.get_run, candidate, "candidate")
        if base.info.run_id == cand.info.run_id:
            raise ConfigError(f"baseline and candidate are the same run ({base.info.run_id})")
        runs, parent, exp_id = [base, cand], None, base.info.experiment_id
        notes += [n for n in (n1, n2) if n]
    else:
        runs, parent = select_runs(c, exp.experiment_id, sweep)
        exp_id = exp.experiment_id
    if not runs:
        raise TrackingError(f"no finished runs in experiment {experiment!r} (sweep={sweep})")
    if metric == HEADLINE:
        metric = ppi_pair.headline_metric(runs, notes)
    known = set.intersection(*({*logged(r)} for r in runs)) if baseline else {
        k for r in runs for k in logged(r)}
    if metric not in known:
        raise ConfigError(f"metric: {'baseline or candidate lacks' if baseline else 'no run has'}"
                          f" {metric!r}{closest(metric, known)}; choose one of "
                          f"{', '.join(sorted(known))}")
    if baseline:
        notes += check_pair(runs[0], runs[1], metric, force)
    front_notes: list[str] = []
    objectives = pareto_front.choose(pareto, metric, runs,
                                     c.get_run(parent) if parent else None, front_notes)
    run_groups = [runs] if baseline else _grouped(runs, metric)
    out = Path(tempfile.mkdtemp(prefix="harness-compare-"))
    try:
        values = {r.info.run_id: _values(c, r, metric, out) for r in runs}
        stats = (bootstrap, confidence, seed)
        groups = ([_pair_group(runs, values, metric, stats, notes)] if baseline else
                  [_rank_group(g, values, metric, stats, top) for g in run_groups])
        for g, rg in zip(groups, run_groups, strict=True):
            bill.attach(g["all_rows"], rg)  # each run's judge cost (a column, table.json)
        for g in groups:  # a PPI++ mean: its rows' intervals are PPI++'s, centred on it
            ppi_pair.ppi_intervals(g["all_rows"], c, runs, values, metric, out, confidence,
                                   g["notes"])
        for g in groups:  # human labels in both runs: the PPI++ difference decides
            if g["test"] is not None:
                ppi_pair.attach(g["test"], c, runs, values, metric, out, confidence, g["notes"],
                                seed)
        if baseline and judged_metric(metric) == "mean":
            groups[0]["variants"] = per_variant(c, runs, out, stats, groups[0]["notes"])
        if not baseline:  # what the ranking's metric is (the headline's note)
            groups[0]["notes"][:0] = notes
        groups[0]["notes"] += front_notes
        result: dict[str, Any] = {
            "experiment": experiment, "metric": metric, "sweep": sweep,
            "parent_run_id": parent, "confidence": confidence, "bootstrap": bootstrap,
            "seed": seed, "groups": groups, "rows": [r for g in groups for r in g["rows"]],
            "all_rows": groups[0]["all_rows"], "varying": groups[0]["varying"],
            "test": groups[0]["test"], "notes": [n for g in groups for n in g["notes"]],
            "gate": None, "logged_to": None, "artifacts": [], "pareto": None,
            "variants": groups[0].get("variants") or None}
        if objectives:
            result["pareto"] = [
                pareto_front.front_of(rg, objectives, g["varying"],
                                      g["label"] if len(groups) > 1 else "", confidence)
                for rg, g in zip(run_groups, groups, strict=True)]
        if fail_if_worse:
            result["gate"] = _gate(groups[0]["test"], alpha, min_delta)
        files = []
        if plots:
            try:
                for i, g in enumerate(groups):
                    files += plot({**result, **g}, values, out, "" if len(groups) == 1
                                  else f"g{i + 1}_")
            except ImportError:
                result["notes"].append("plots skipped: matplotlib is not installed")
        if result["pareto"]:
            files += pareto_front.write(result["pareto"], out, plots, result["notes"])
        table = result["table"] = render(result) + pareto_front.render(result["pareto"] or [])
        files += [out / "table.md", out / "table.json"]
        files[-2].write_text(table, "utf-8")
        saved = {k: v for k, v in result.items() if k not in ("table", "all_rows")}
        saved["groups"] = [{k: v for k, v in g.items() if k != "all_rows"} for g in groups]
        files[-1].write_text(json_text(saved), "utf-8")
        if log:
            target = log_outputs(c, exp_id, parent, files)
            result.update(logged_to=target, artifacts=[f"compare/{f.name}" for f in files])
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return result


def _check(confidence: float, bootstrap: int, top: int | None, alpha: float, min_delta: float,
           baseline: str | None, candidate: str | None, fail_if_worse: bool,
           experiment: str | None) -> None:
    for bad, message in (
        (not 0 < confidence < 1, f"confidence: expected (0, 1), got {confidence}"),
        (bootstrap < 1, f"bootstrap: expected >= 1, got {bootstrap}"),
        (top is not None and top < 1, f"top: expected >= 1, got {top}"),
        (not 0 < alpha < 1, f"alpha: expected (0, 1), got {alpha}"),
        (not min_delta >= 0, f"min_delta: expected >= 0, got {min_delta}"),
        ((baseline is None) != (candidate is None),
         "baseline= and candidate= go together: name both runs, or neither to rank a sweep"),
        (fail_if_worse and baseline is None,
         "fail_if_worse=true needs baseline=RUN and candidate=RUN"),
        (baseline is None and not experiment, "experiment=NAME is required; see --help"),
    ):
        if bad:
            raise ConfigError(message)


def _values(c: Any, run: Any, metric: str, out: Path) -> dict[str, float] | None:
    """The run's per-query values of ``metric`` (``<variant>/mean``: that variant's scores;
    a PPI++ mean: the judge's scores it corrects)."""
    metric = judged_metric(metric)
    named = variant_metric(run, metric)
    if named is not None:
        return per_query(c, run.info.run_id, named[1], out, named[0])
    return per_query(c, run.info.run_id, metric, out)


def _grouped(runs: list[Any], metric: str) -> list[list[Any]]:
    """``runs`` split by dataset and metric kind, biggest group first."""
    groups: dict[tuple[str, str], list[Any]] = {}
    for r in runs:
        groups.setdefault(identity(r, metric), []).append(r)
    return sorted(groups.values(), key=lambda g: -len(g))


def _varying(runs: list[Any]) -> list[str]:
    """The columns that tell the runs apart: the options chosen (``choice.retriever``)
    that differ, then each param whose value differs among the runs that have it (a
    hybrid's own settings do not make columns beside dense runs that lack them)."""
    choices = sorted({k for r in runs for k in r.data.tags if k.startswith("choice.")})
    out = [k for k in choices if len({r.data.tags.get(k) for r in runs}) > 1]
    params = {k for r in runs for k in r.data.params}
    # run.fail_under as a mapping is logged as run.fail_under.<metric>
    for k in sorted(k for k in params if ".".join(k.split(".")[:2]) not in COSMETIC):
        if len({r.data.params[k] for r in runs if k in r.data.params}) > 1:
            out.append(k)
    return out


def _label(run: Any, metric: str) -> str:
    sha, kind = identity(run, metric)
    path = run.data.params.get("dataset.path") or run.data.tags.get("choice.dataset", "")
    return f"dataset {sha[:12]} ({path}), metric {kind}"


def _rank_group(runs: list[Any], values: dict[str, Any], metric: str,
                stats: tuple[int, float, int], top: int | None) -> dict[str, Any]:
    varying, notes = _varying(runs), []
    rows = rank_rows(runs, values, metric, varying, *stats, logged)
    missing = [r["run_name"] for r in rows if r["ci"] is None]
    if missing:
        notes.append(f"no per-query {metric} in samples.jsonl of "
                     f"{'any run' if len(missing) == len(rows) else ', '.join(missing)}: no CI")
    test = top_two(rows, values, notes, *stats)
    return {"label": _label(runs[0], metric), "rows": rows[:top], "all_rows": rows,
            "varying": varying, "test": test, "notes": notes, "pair": False}


def _pair_group(runs: list[Any], values: dict[str, Any], metric: str,
                stats: tuple[int, float, int], notes: list[str]) -> dict[str, Any]:
    base, cand = runs
    varying = _varying(runs)
    rows = rank_rows(runs, values, metric, varying, *stats, logged)
    by_id = {r["run_id"]: r for r in rows}
    rows = [by_id[base.info.run_id], by_id[cand.info.run_id]]
    rows[0]["rank"], rows[1]["rank"] = "baseline", "candidate"
    vb, vc = values[base.info.run_id], values[cand.info.run_id]
    if not (vb and vc):
        raise ConfigError(f"no per-query {metric} in samples.jsonl of the "
                          f"{'baseline' if not vb else 'candidate'}: nothing to pair")
    test = {"run_a": {"id": cand.info.run_id, "name": rows[1]["run_name"]},
            "run_b": {"id": base.info.run_id, "name": rows[0]["run_name"]},
            "labels": ["candidate", "baseline"], **paired_test(vc, vb, *stats),
            "same_dataset": rows[0]["dataset_sha256"] == rows[1]["dataset_sha256"]}
    if not test["n_pairs"]:
        raise ConfigError("baseline and candidate share no scored id: nothing to pair")
    return {"label": _label(base, metric), "rows": rows, "all_rows": rows,
            "varying": varying, "test": test, "notes": notes, "pair": True}


def _gate(test: dict[str, Any], alpha: float, min_delta: float) -> dict[str, Any]:
    failed, line = gate(test, alpha, min_delta)
    return {"failed": failed, "line": line, "alpha": alpha, "min_delta": min_delta}

