"""``python -m harness.compare``: rank the runs of a sweep, with confidence intervals.

Reads the runs from MLflow and each run's ``samples.jsonl``; bootstraps a confidence
interval of the per-query mean; tests the two best runs against each other on the queries
both scored (paired sign-flip randomization test, and Wilcoxon when scipy is installed);
plots; and logs the table and plots under ``compare/`` in the sweep's parent run.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from harness.errors import ConfigError, HarnessError, TrackingError, closest

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
#: Params that never change a score; never shown as "what varied".
COSMETIC = {"run.progress", "run.quiet"}
TOP_K = "retriever.top_k"


def bootstrap_ci(values: Any, resamples: int, confidence: float, seed: int) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean, resampling ``values`` with replacement."""
    import numpy as np

    x = np.asarray(values, dtype=float)
    rng, means, chunk = np.random.default_rng(seed), [], max(1, 2**22 // len(x))
    for start in range(0, resamples, chunk):
        idx = rng.integers(0, len(x), size=(min(chunk, resamples - start), len(x)))
        means.append(x[idx].mean(axis=1))
    alpha = (1.0 - confidence) / 2
    lo, hi = np.quantile(np.concatenate(means), [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def sign_flip_p(diffs: Any, resamples: int, seed: int) -> tuple[float, str]:
    """Two-sided p-value of a paired sign-flip test of mean(diffs) == 0.

    Exact (all ``2**m`` sign patterns of the ``m`` non-zero differences) when that is no
    more than ``resamples``; otherwise ``(1 + hits) / (1 + resamples)`` over random flips.

    Returns:
        ``(p, "exact" | "randomization")``.
    """
    import numpy as np

    d = np.asarray(diffs, dtype=float)
    d = d[d != 0]
    obs, tol = abs(d.sum()), 1e-9 * (float(np.abs(d).sum()) + 1e-300)
    if 2 ** len(d) <= resamples:
        signs = ((np.arange(2 ** len(d))[:, None] >> np.arange(len(d))) & 1) * 2 - 1
        return float(np.mean(np.abs(signs @ d) >= obs - tol)), "exact"
    rng, hits, chunk = np.random.default_rng(seed), 0, max(1, 2**22 // len(d))
    for start in range(0, resamples, chunk):
        signs = rng.integers(0, 2, size=(min(chunk, resamples - start), len(d))) * 2 - 1
        hits += int(np.sum(np.abs(signs @ d) >= obs - tol))
    return (1 + hits) / (1 + resamples), "randomization"


def paired_test(
    a: dict[str, float], b: dict[str, float], resamples: int = 2000,
    confidence: float = 0.95, seed: int = 0,
) -> dict[str, Any]:
    """Compare per-query values ``a`` and ``b`` (``{query id: value}``) on their shared ids."""
    import numpy as np

    ids = sorted(a.keys() & b.keys())
    out: dict[str, Any] = {"n_pairs": len(ids), "n_a": len(a), "n_b": len(b),
                           "same_queries": a.keys() == b.keys()}
    if not ids:
        return {**out, "mean_diff": None, "ci": None, "p_value": None, "p_method": None,
                "p_wilcoxon": None}
    d = np.array([a[i] - b[i] for i in ids])
    p, method = sign_flip_p(d, resamples, seed)
    out.update(mean_diff=float(d.mean()), ci=list(bootstrap_ci(d, resamples, confidence, seed)),
               p_value=p, p_method=method, p_wilcoxon=None)
    try:
        import warnings

        from scipy.stats import wilcoxon
    except ImportError:
        return out
    if not d.any():
        out["p_wilcoxon"] = 1.0  # identical values: no evidence of a difference
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out["p_wilcoxon"] = float(wilcoxon(d).pvalue)
        except ValueError:
            pass
    return out


def _search(c: Any, exp_id: str, filter_string: str) -> list[Any]:
    """Every run of the experiment matching ``filter_string`` (all result pages)."""
    runs, token = [], None
    while True:
        page = c.search_runs([exp_id], filter_string, max_results=1000, page_token=token)
        runs += list(page)
        token = page.token
        if not token:
            return runs


def _select(c: Any, exp_id: str, sweep: str) -> tuple[list[Any], str | None]:
    """The runs to compare and the parent run id (``None`` for ``sweep=all``)."""
    if sweep == "all":
        runs = _search(c, exp_id, "attributes.status = 'FINISHED'")
        return [r for r in runs if r.data.tags.get("harness.sweep") != "parent"
                and r.data.tags.get("harness.compare") != "true"], None
    if sweep == "latest":
        found = c.search_runs([exp_id], "tags.`harness.sweep` = 'parent'", max_results=1,
                              order_by=["attributes.start_time DESC"])
        if not found:
            raise TrackingError("no sweep in this experiment; use sweep=all to compare single runs")
        parent = found[0].info.run_id
    else:
        try:
            run = c.get_run(sweep)
        except Exception:
            raise ConfigError(
                f"sweep: no run with id {sweep!r}; use latest, all or a parent run id"
            ) from None
        if run.data.tags.get("harness.sweep") != "parent":
            raise ConfigError(f"sweep: run {sweep} is not a sweep's parent run")
        parent, exp_id = sweep, run.info.experiment_id
    children = _search(c, exp_id, f"tags.`mlflow.parentRunId` = '{parent}' "
                       "and attributes.status = 'FINISHED'")
    return children, parent


def _per_query(c: Any, run_id: str, metric: str, tmp: Path) -> dict[str, float] | None:
    """``{id: value}`` from the run's samples.jsonl; ``None`` when it has no such values."""
    try:
        path = c.download_artifacts(run_id, "samples.jsonl", str(tmp / run_id))
    except Exception:
        return None
    # MLflow forbids "@" in metric names: ndcg_at_10, ndcg:10 or ndcg/10 may log row key ndcg@10
    keys = ["score"] if metric == "mean" else [metric] + [
        metric.replace(sep, "@") for sep in ("_at_", ":", "/") if sep in metric]
    values: dict[str, float] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            v = next((row[k] for k in keys if k in row), None)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                values[str(row["id"])] = float(v)
    return values or None


def _fmt(v: float | None, sign: bool = False) -> str:
    return "n/a" if v is None else f"{v:+.4f}" if sign else f"{v:.4f}"


def render(result: dict[str, Any]) -> str:
    """The comparison as Markdown: the table, then the paired test and notes."""
    rows, varying, m = result["rows"], result["varying"], result["metric"]
    pct = f"{result['confidence']:.0%} CI"
    head = ["rank", "run", m, pct, "n scored", *varying]
    body = [[str(r["rank"]), r["run_name"].replace("|", "\\|"), _fmt(r["value"]),
             f"[{_fmt(r['ci'][0])}, {_fmt(r['ci'][1])}]" if r["ci"] else "",
             "" if r["n"] is None else str(r["n"]), *(r["params"].get(k, "") for k in varying)]
            for r in rows]
    width = [max(len(x) for x in col) for col in zip(head, *body)]
    lines = ["| " + " | ".join(x.ljust(w) for x, w in zip(line, width)) + " |"
             for line in [head, ["-" * w for w in width], *body]]
    t = result["test"]
    if t is not None:
        lines += ["", f"paired test: #1 {t['run_a']['name']} vs #2 {t['run_b']['name']}",
                  f"  n pairs          {t['n_pairs']} (queries scored in both)"]
        if t["mean_diff"] is not None:
            w = "n/a" if t["p_wilcoxon"] is None else f"{t['p_wilcoxon']:.4f}"
            lines += [f"  mean difference  {_fmt(t['mean_diff'], True)} (#1 - #2)  {pct} "
                      f"[{_fmt(t['ci'][0], True)}, {_fmt(t['ci'][1], True)}]",
                      f"  p (sign-flip, {t['p_method']})  {t['p_value']:.4f}    p (Wilcoxon)  {w}"]
    if result["notes"]:
        lines += ["", *(f"note: {n}" for n in result["notes"])]
    return "\n".join(lines) + "\n"


def _figure(width: float, height: float) -> tuple[Any, Any]:
    """A figure on the Agg canvas (no pyplot: no global state, no display needed)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.subplots()


def _plot_top_k(result: dict[str, Any], path: Path) -> None:
    """The metric vs retriever.top_k, one line per combination of the other varying params."""
    rows, m = result["all_rows"], result["metric"]
    others = [k for k in result["varying"] if k != TOP_K]
    fig, ax = _figure(7, 4.5)
    numeric = sorted({int(r["params"][TOP_K]) for r in rows if r["params"][TOP_K].isdigit()})
    top = max(numeric, default=0) + 1  # top_k=null (all chunks) sits right of the rest
    lines: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for r in rows:
        if r["value"] is not None:
            lines.setdefault(tuple(r["params"][k] for k in others), []).append(r)
    for combo, group in sorted(lines.items()):
        # label: the run names (Hydra overrides) without top_k, when the group agrees on it
        names = {",".join(t for t in r["run_name"].split(",") if not t.startswith(f"{TOP_K}="))
                 for r in group}
        label = names.pop() if len(names) == 1 and "" not in names and others else ", ".join(
            f"{k}={v}" for k, v in zip(others, combo)) or m
        pts = sorted((int(k) if (k := r["params"][TOP_K]).isdigit() else top, r["value"], r["ci"])
                     for r in group)
        err = [[max(0.0, v - ci[0]) if ci else 0.0 for _, v, ci in pts],
               [max(0.0, ci[1] - v) if ci else 0.0 for _, v, ci in pts]]
        ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=err, marker="o", capsize=3,
                    label=label)
    ticks = numeric + ([top] if any(not r["params"][TOP_K].isdigit() for r in rows) else [])
    ax.set_xticks(ticks, [str(t) if t != top else "all" for t in ticks])
    ax.set(xlabel=TOP_K, ylabel=m, title=f"{m} vs {TOP_K} ({result['confidence']:.0%} CI)")
    if len(lines) > 1:
        ax.legend(fontsize="small")
    fig.savefig(path, dpi=120)


def _plot_box(result: dict[str, Any], values: dict[str, Any], path: Path) -> bool:
    """Box plots of the per-query values, one per run in rank order; False if none has any."""
    import matplotlib

    scored = [r for r in result["all_rows"] if values.get(r["run_id"])][::-1]
    if not scored:
        return False
    labels = [f"#{r['rank']} {r['run_name']}" for r in scored]
    fig, ax = _figure(max(8.0, 3 + 0.075 * max(map(len, labels))), 1.2 + 0.45 * len(scored))
    horizontal = ({"orientation": "horizontal"} if matplotlib.__version_info__ >= (3, 10)
                  else {"vert": False})
    ax.boxplot([list(values[r["run_id"]].values()) for r in scored], showmeans=True, **horizontal)
    ax.set_yticks(range(1, len(scored) + 1), labels)
    per = "score" if result["metric"] == "mean" else result["metric"]
    ax.set(xlabel=f"per-query {per} (triangle: mean)", title=f"per-query {per} by config")
    fig.savefig(path, dpi=120)
    return True


def plot(result: dict[str, Any], values: dict[str, Any], out: Path) -> list[Path]:
    """Write ``metric_vs_top_k.png`` (when top_k varies) and ``per_query.png`` into ``out``."""
    paths = []
    if TOP_K in result["varying"]:
        paths.append(out / "metric_vs_top_k.png")
        _plot_top_k(result, paths[-1])
    if _plot_box(result, values, out / "per_query.png"):
        paths.append(out / "per_query.png")
    return paths


def _rows(runs: list[Any], values: dict[str, Any], metric: str, varying: list[str],
          resamples: int, confidence: float, seed: int) -> list[dict[str, Any]]:
    """One row per run, ranked by ``metric`` (descending; runs without it last)."""
    rows = []
    for r in runs:
        v, m = values[r.info.run_id], r.data.metrics
        rows.append({
            "run_id": r.info.run_id, "run_name": r.info.run_name or r.info.run_id,
            "value": m.get(metric),
            "ci": list(bootstrap_ci(list(v.values()), resamples, confidence, seed)) if v else None,
            "n": len(v) if v else (int(m["n_scored"]) if metric == "mean" and "n_scored" in m
                                   else None),
            "params": {k: r.data.params.get(k, "") for k in varying},
            "dataset_sha256": r.data.tags.get("dataset.sha256"),
        })
    rows.sort(key=lambda r: (r["value"] is None, -(r["value"] or 0.0), r["run_name"]))
    for i, row in enumerate(rows, 1):
        row["rank"] = i
    return rows


def _test_top_two(rows: list[dict[str, Any]], values: dict[str, Any], notes: list[str],
                  resamples: int, confidence: float, seed: int) -> dict[str, Any] | None:
    """The paired test of rows #1 and #2; warnings about what they differ in go to ``notes``."""
    if len(rows) < 2 or rows[1]["value"] is None:
        return None
    a, b = rows[0], rows[1]
    va, vb = values[a["run_id"]], values[b["run_id"]]
    if not (va and vb):
        notes.append("no paired test: #1 or #2 has no per-query values")
        return None
    test = {"run_a": {"id": a["run_id"], "name": a["run_name"]},
            "run_b": {"id": b["run_id"], "name": b["run_name"]},
            **paired_test(va, vb, resamples, confidence, seed),
            "same_dataset": a["dataset_sha256"] == b["dataset_sha256"]}
    if not test["same_queries"]:
        notes.append(f"#1 and #2 were scored on different query sets ({test['n_a']} and "
                     f"{test['n_b']} queries); the test uses the {test['n_pairs']} in both")
    if not test["same_dataset"]:
        notes.append(f"#1 and #2 ran on different datasets (dataset.sha256 "
                     f"{str(a['dataset_sha256'])[:12]} vs {str(b['dataset_sha256'])[:12]})")
    return test


def compare(
    experiment: str, metric: str = "mean", *, tracking_uri: str | None = None,
    sweep: str = "latest", top: int | None = None, bootstrap: int = 2000,
    confidence: float = 0.95, seed: int = 0, plots: bool = True, log: bool = True,
) -> dict[str, Any]:
    """Rank the runs of ``experiment`` by ``metric`` and test the two best.

    Args:
        experiment: The MLflow experiment name.
        metric: The MLflow metric to rank by. Per query: ``score`` for ``mean``, else the
            ``samples.jsonl`` key of that name; rows without a number are left out.
        tracking_uri: The store; default ``$MLFLOW_TRACKING_URI`` or ``sqlite:///mlflow.db``.
        sweep: ``latest`` (children of the newest parent run), ``all`` (every finished run
            but parents and compare runs) or a parent run id.
        top: Rows in the table (default all); the plots and the test use every run.
        bootstrap: Resamples for the intervals and the randomization test.
        confidence: Coverage of the intervals.
        seed: Seed of every resampling (each starts from it, so results do not depend on
            the order of the runs).
        plots: Draw the plots (needs matplotlib).
        log: Log ``compare/`` artifacts to the parent run, or to a new run named
            ``compare`` (tag ``harness.compare=true``) when there is no parent.

    Returns:
        ``rows`` (the printed rows: rank, run_id, run_name, value, ci, n, params,
        dataset_sha256), ``all_rows``, ``varying`` (the param keys that differ), ``test``
        (the paired test of the two best runs, or ``None``), ``notes``, ``table`` (the
        Markdown printed), ``parent_run_id``, ``logged_to`` (a run id or ``None``) and
        ``artifacts`` (the logged paths).

    Raises:
        ConfigError: A bad argument, or a metric no run has.
        TrackingError: No such experiment, sweep or runs.
    """
    for bad, message in ((not 0 < confidence < 1, f"confidence: expected (0, 1), got {confidence}"),
                         (bootstrap < 1, f"bootstrap: expected >= 1, got {bootstrap}"),
                         (top is not None and top < 1, f"top: expected >= 1, got {top}")):
        if bad:
            raise ConfigError(message)
    from harness.tracking.mlflow import client, redact_uri

    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or "sqlite:///mlflow.db"
    if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///"):]).is_file():
        raise TrackingError(f"no MLflow store at {uri} (set tracking_uri= or $MLFLOW_TRACKING_URI)")
    c = client(uri)
    exp = c.get_experiment_by_name(experiment)
    if exp is None:
        names = [e.name for e in c.search_experiments()]
        hint = closest(experiment, names)
        raise TrackingError(f"no experiment {experiment!r} in {redact_uri(uri)}{hint}")
    runs, parent = _select(c, exp.experiment_id, sweep)
    if not runs:
        raise TrackingError(f"no finished runs in experiment {experiment!r} (sweep={sweep})")
    known = {k for r in runs for k in r.data.metrics}
    if metric not in known:
        raise ConfigError(f"metric: no run has {metric!r}{closest(metric, known)}; "
                          f"choose one of {', '.join(sorted(known))}")
    keys = sorted({k for r in runs for k in r.data.params} - COSMETIC)
    varying = [k for k in keys if len({r.data.params.get(k) for r in runs}) > 1]
    out = Path(tempfile.mkdtemp(prefix="harness-compare-"))
    try:
        values = {r.info.run_id: _per_query(c, r.info.run_id, metric, out) for r in runs}
        rows = _rows(runs, values, metric, varying, bootstrap, confidence, seed)
        missing = [r["run_name"] for r in rows if r["ci"] is None]
        notes = [f"no per-query {metric} in samples.jsonl of "
                 f"{'any run' if len(missing) == len(rows) else ', '.join(missing)}: no CI"
                 ] if missing else []
        test = _test_top_two(rows, values, notes, bootstrap, confidence, seed)
        result = {"experiment": experiment, "metric": metric, "sweep": sweep,
                  "parent_run_id": parent, "confidence": confidence, "bootstrap": bootstrap,
                  "seed": seed, "varying": varying, "all_rows": rows, "rows": rows[:top],
                  "test": test, "notes": notes, "logged_to": None, "artifacts": []}
        files = []
        if plots:
            try:
                files += plot(result, values, out)
            except ImportError:
                notes.append("plots skipped: matplotlib is not installed")
        result["table"] = render(result)
        files += [out / "table.md", out / "table.json"]
        files[-2].write_text(result["table"], "utf-8")
        saved = {k: v for k, v in result.items() if k not in ("table", "all_rows")}
        files[-1].write_text(json.dumps(saved, indent=2) + "\n", "utf-8")
        if log:
            from harness import __version__

            tags = {"harness.compare": "true", "harness.version": __version__}
            target = parent or c.create_run(exp.experiment_id, run_name="compare",
                                            tags=tags).info.run_id
            for f in files:
                c.log_artifact(target, str(f), artifact_path="compare")
            if not parent:
                c.set_terminated(target, "FINISHED")
            result.update(logged_to=target, artifacts=[f"compare/{f.name}" for f in files])
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return result


def parse(argv: list[str]) -> dict[str, Any]:
    """``key=value`` tokens to ``compare`` keyword arguments (``ConfigError`` when bad)."""
    args = dict(DEFAULTS)
    for token in argv:
        key, eq, raw = token.partition("=")
        if not eq:
            raise ConfigError(f"expected key=value, got {token!r}; see --help")
        if key not in DEFAULTS:
            hint = closest(key, DEFAULTS)
            raise ConfigError(f"unknown key {key!r}{hint}; keys: {', '.join(DEFAULTS)}")
        try:
            if key in ("plots", "log"):
                args[key] = {"true": True, "1": True, "yes": True,
                             "false": False, "0": False, "no": False}[raw.lower()]
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


if __name__ == "__main__":
    main()
