"""The outputs of ``compare``: the Markdown table and the plots (matplotlib, no pyplot)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

TOP_K = "retriever.top_k"


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
    width = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
    lines = ["| " + " | ".join(x.ljust(w) for x, w in zip(line, width, strict=True)) + " |"
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


def plot(result: dict[str, Any], values: dict[str, Any], out: Path) -> list[Path]:
    """Write ``metric_vs_top_k.png`` (when top_k varies) and ``per_query.png`` into ``out``."""
    paths = []
    if TOP_K in result["varying"]:
        paths.append(out / "metric_vs_top_k.png")
        _plot_top_k(result, paths[-1])
    if _plot_box(result, values, out / "per_query.png"):
        paths.append(out / "per_query.png")
    return paths


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
            f"{k}={v}" for k, v in zip(others, combo, strict=True)) or m
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
