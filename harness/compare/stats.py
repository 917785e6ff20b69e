"""The statistics of ``compare``: bootstrap intervals of a mean, paired tests, the ranking.

numpy and scipy load when a function first needs them.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


def bootstrap_ci(
    values: ArrayLike, resamples: int, confidence: float, seed: int
) -> tuple[float, float]:
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


def sign_flip_p(diffs: ArrayLike, resamples: int, seed: int) -> tuple[float, str]:
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


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: the i-th smallest p times
    ``m - i`` (i from 0), made non-decreasing, capped at 1. Rejecting where the adjusted p
    is below alpha keeps the chance of any false "worse" at alpha over ``m`` comparisons."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    adjusted, running = [1.0] * len(pvalues), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def paired_test(
    a: dict[str, float], b: dict[str, float], resamples: int = 2000,
    confidence: float = 0.95, seed: int = 0,
) -> dict[str, Any]:
    """Compare per-query values ``a`` and ``b`` (``{query id: value}``) on their shared ids."""
    import numpy as np

    ids = sorted(a.keys() & b.keys())
    out: dict[str, Any] = {"n_pairs": len(ids), "n_a": len(a), "n_b": len(b),
                           "dropped_a": len(a) - len(ids), "dropped_b": len(b) - len(ids),
                           "same_queries": a.keys() == b.keys()}
    if not ids:
        return {**out, "mean_diff": None, "ci": None, "p_value": None, "p_method": None,
                "p_wilcoxon": None}
    d = np.array([a[i] - b[i] for i in ids])
    p, method = sign_flip_p(d, resamples, seed)
    out.update(mean_diff=float(d.mean()), ci=list(bootstrap_ci(d, resamples, confidence, seed)),
               p_value=p, p_method=method, p_wilcoxon=None)
    try:
        from scipy.stats import wilcoxon
    except ImportError:
        return out
    if not d.any():
        out["p_wilcoxon"] = 1.0  # identical values: no evidence of a difference
        return out
    with warnings.catch_warnings(), contextlib.suppress(ValueError):
        warnings.simplefilter("ignore")
        out["p_wilcoxon"] = float(wilcoxon(d).pvalue)
    return out


def rank_rows(
    runs: Sequence[Any], values: dict[str, dict[str, float] | None], metric: str,
    varying: Sequence[str], resamples: int, confidence: float, seed: int,
    logged: Callable[[Any], Mapping[str, float]] | None = None,
) -> list[dict[str, Any]]:
    """One row per MLflow run, ranked by ``metric`` (descending; runs without it last);
    ``logged``: a run's metrics (default: what it logged)."""
    from harness.core.objectives import rank_key

    rows = []
    # a variant's own counts beside its mean (non_llm/mean: non_llm/n_scored)
    prefix = metric[: -len("mean")] if metric.endswith("/mean") else ""
    for r, order in zip(runs, job_order(runs), strict=True):
        v, m = values[r.info.run_id], (logged or _metrics)(r)
        scored = m.get(f"{prefix}n_scored") if metric.endswith("mean") else None
        rows.append({
            "run_id": r.info.run_id, "run_name": r.info.run_name or r.info.run_id,
            "value": m.get(metric),
            "ci": list(bootstrap_ci(list(v.values()), resamples, confidence, seed)) if v else None,
            "n": len(v) if v else (None if scored is None else int(scored)),
            "n_unscored": m.get(f"{prefix}n_unscored"), "order": order,
            "params": {k: r.data.params.get(k, r.data.tags.get(k, "")) for k in varying},
            "dataset_sha256": r.data.tags.get("dataset.sha256"),
        })
    # the sweep parent's "best child" rule: highest value, fewer unscored, earlier job
    rows.sort(key=lambda r: rank_key(r["value"], r["n_unscored"], r["order"]))
    for i, row in enumerate(rows, 1):
        row["rank"] = i
    return rows


def _metrics(run: Any) -> Mapping[str, float]:
    return dict(run.data.metrics)


def job_order(runs: Sequence[Any]) -> list[int]:
    """Each run's place in time: its ``hydra.job_num`` when all are jobs of one sweep,
    else its rank by start time."""
    tags = [r.data.tags for r in runs]
    if len({t.get("mlflow.parentRunId") for t in tags}) == 1 and all(
            t.get("hydra.job_num", "").isdigit() for t in tags):
        return [int(t["hydra.job_num"]) for t in tags]
    starts = sorted(range(len(runs)), key=lambda i: (runs[i].info.start_time or 0, i))
    return [starts.index(i) for i in range(len(runs))]


def top_two(
    rows: Sequence[dict[str, Any]], values: dict[str, dict[str, float] | None], notes: list[str],
    resamples: int, confidence: float, seed: int,
) -> dict[str, Any] | None:
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
