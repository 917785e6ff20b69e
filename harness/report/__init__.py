"""What a run says about itself: the console summary table and the MLflow description."""

from __future__ import annotations

from typing import Any

from harness.core.types import TrackedRun
from harness.run.timing import latency_line


def describe_run(summary: dict[str, Any]) -> str:
    """The MLflow run description: what was evaluated, how, and the headline numbers."""
    options = summary["options"]
    lines = [
        f"Context precision `{summary['metric']}` of `{options.get('dataset', '?')}` "
        f"({summary['dataset'].get('path')}) with retriever `{options.get('retriever', '?')}`.",
    ]
    if "judge" in summary:
        judge, prompt = summary["judge"]["model"], summary["prompt"]["version"]
        served = summary["judge"].get("served_model")
        if served and served != judge:
            judge = f"{judge}` (served: `{served}"
        lines.append(f"Judge `{judge}`, prompt `{prompt}`.")
    mean = summary["mean"]
    lines.append(
        f"Mean {'n/a' if mean is None else f'{mean:.4f}'} over {summary['n_scored']} scored of "
        f"{summary['n_samples']} samples ({summary['n_unscored']} unscored)."
    )
    return "\n\n".join(lines)


def per_second(rate: float) -> str:
    """A rate with 3 significant figures (all the digits of a whole number above 100)."""
    return f"{rate:,.0f}" if abs(rate) >= 100 else f"{rate:.3g}"


def render_summary(summary: dict[str, Any], tracked: TrackedRun | None) -> str:
    """The table printed at the end of a run."""
    mean = summary["mean"]
    rows = [
        ("metric", summary["metric"]),
        ("dataset", f"{summary['options'].get('dataset', '?')} ({summary['dataset']['path']})"),
        ("mean", "n/a (nothing scored)" if mean is None else f"{mean:.4f}"),
        ("scored", f"{summary['n_scored']} / {summary['n_samples']}"),
    ]
    for reason, count in summary["unscored_reasons"].items():
        rows.append(("unscored", f"{count} × {reason}"))
    if summary.get("success_rate") is not None:
        rows.append(("success rate", f"{summary['success_rate']:.1%}"))
    retrieval = summary.get("retrieval")
    if retrieval:
        rows.append((
            "retrieval",
            "  ".join(f"{k} {v:.4f}" for k, v in retrieval.items() if k != "n_queries")
            + f"  ({retrieval['n_queries']} queries)",
        ))
    cut = summary.get("retrieval_cutoffs") or {}
    if cut.get("dropped"):
        rows.append(("cut-offs", f"{', '.join(cut['dropped'])} not logged: above the "
                                 f"retrieval depth {cut['depth']} "
                                 "(run.retrieval_beyond_depth=true logs them)"))
    if cut.get("logged"):
        rows.append(("cut-offs", f"{', '.join(cut['logged'])} above the retrieval depth "
                                 f"{cut['depth']}: scored as if padded with non-relevant chunks"))
    gate = summary.get("gate")
    if gate:
        rows.append(("gate", f"run.fail_under={gate['fail_under']}: "
                             f"{'passed' if gate['passed'] else 'FAILED'}"))
    judge = summary.get("judge")
    if judge:
        cost = f", ~${judge['cost_usd']:.4f}" if judge.get("cost_usd") else ""
        if "cost_usd" in judge and judge["cost_usd"] is None:
            why = judge.get("cost_unknown")
            cost = ", cost unknown" + (f" ({why})" if why else "")
        served = judge.get("served_model")
        shown = judge["model"] if not served or served == judge["model"] else (
            f"{judge['model']} (served: {served})")
        rows.append(("judge", f"{shown}: {judge_line(judge)}{cost}"))
    rate = summary["samples_per_s"]
    per_s = f" ({per_second(rate)} samples/s)" if rate else ""
    rows.append(("time", f"{summary['duration_s']:.3f} s" + per_s))
    latency = latency_line(summary.get("timing") or {})
    if latency:
        rows.append(("latency", latency))
    rows.append(("outputs", summary["output_dir"]))
    if tracked is not None:
        rows.append(("mlflow run", f"{tracked.run_id} (experiment {tracked.experiment_id})"))
        rows.append(("mlflow store", summary["tracking"]["tracking_uri"]))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"  {k:<{width}}  {v}" for k, v in rows)


def judge_line(judge: dict[str, Any]) -> str:
    """What the judge did: requests sent and answers taken from the verdict cache (a fully
    cached run says "15 answers from the cache", never "0 requests")."""
    hits = judge.get("cache_hits") or 0
    cached = f"{hits:,} answers from the cache"
    if not judge["requests"] and hits:
        saved = judge.get("saved_prompt_tokens", 0) + judge.get("saved_completion_tokens", 0)
        return f"{cached}, no requests sent ({saved:,} tokens saved)"
    return (
        f"{judge['requests']:,} requests ({judge['retries']} retried, "
        f"{judge['parse_failures']} unusable, {judge['failures']} failed)"
        + (f", {cached}" if hits else "")
        + f", {judge['prompt_tokens']:,} prompt tokens ({judge['cached_prompt_tokens']:,} "
        f"cached), {judge['completion_tokens']:,} completion tokens"
    )
