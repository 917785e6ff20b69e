"""The outputs of ``compare``: the Markdown table and the plots (matplotlib, no pyplot)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.compare import bill
from harness.compare.pairing import PPI, judged_metric
from harness.compare.ppi_pair import ppi_lines

TOP_K = "retriever.top_k"


def _fmt(v: float | None, sign: bool = False) -> str:
    return "n/a" if v is None else f"{v:+.4f}" if sign else f"{v:.4f}"


def render(result: dict[str, Any]) -> str:
    """The comparison as Markdown: the gate's verdict first (with ``fail_if_worse``), then
    per group (dataset and metric) the table, the paired test and its notes."""
    groups = result["groups"]
    verdict = f"{result['gate']['line']}\n\n" if result.get("gate") else ""
    return verdict + "\n".join(
        (f"### {g['label']}\n\n" if len(groups) > 1 else "") + _group(result, g) for g in groups
    )


def _group(result: dict[str, Any], group: dict[str, Any]) -> str:
    rows, varying, m = group["rows"], group["varying"], result["metric"]
    pct = f"{result['confidence']:.0%} CI"
    head = ["role" if group["pair"] else "rank", "run", m, pct, "n scored", *varying]
    body = [[str(r["rank"]), r["run_name"].replace("|", "\\|"), _fmt(r["value"]),
             f"[{_fmt(r['ci'][0])}, {_fmt(r['ci'][1])}]" if r["ci"] else "",
             "" if r["n"] is None else str(r["n"]), *(r["params"].get(k, "") for k in varying)]
            for r in rows]
    costs = bill.column(rows)  # what each run's judge cost, when any asked one
    if costs is not None:
        head, body = [*head, "judge cost"], [[*b, c] for b, c in zip(body, costs, strict=True)]
    width = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
    lines = ["| " + " | ".join(x.ljust(w) for x, w in zip(line, width, strict=True)) + " |"
             for line in [head, ["-" * w for w in width], *body]]
    t = group["test"]
    if t is not None:
        a, b = t.get("labels", ["#1", "#2"])
        lines += ["", f"paired test: {a} {t['run_a']['name']} vs {b} {t['run_b']['name']}",
                  f"  n pairs          {t['n_pairs']} (queries scored in both; dropped "
                  f"{t['dropped_a']} scored only by {a}, {t['dropped_b']} only by {b})"]
        if t["mean_diff"] is not None:
            w = "n/a" if t["p_wilcoxon"] is None else f"{t['p_wilcoxon']:.4f}"
            lines += [f"  mean difference  {_fmt(t['mean_diff'], True)} ({a} - {b})  {pct} "
                      f"[{_fmt(t['ci'][0], True)}, {_fmt(t['ci'][1], True)}]",
                      f"  p (sign-flip, {t['p_method']})  {t['p_value']:.4f}    p (Wilcoxon)  {w}",
                      "  the sign-flip test tests the mean difference (the gate's test"
                      f"{' without human labels' if t.get('interval_used') == PPI else ''}); "
                      "Wilcoxon tests signed ranks, for reference", *ppi_lines(t, pct)]
    if group["notes"]:
        lines += ["", *(f"note: {n}" for n in group["notes"])]
    return "\n".join(lines) + "\n"


def plot(result: dict[str, Any], values: dict[str, Any], out: Path, prefix: str = "") -> list[Path]:
    """Write ``metric_vs_top_k.png`` (when top_k varies) and ``per_query.png`` (per-query
    wins, ties and losses) of one group into ``out``, names starting with ``prefix``."""
    paths = []
    if TOP_K in result["varying"] and not result["pair"]:
        paths.append(out / f"{prefix}metric_vs_top_k.png")
        _plot_top_k(result, paths[-1])
    if _plot_wtl(result, values, out / f"{prefix}per_query.png"):
        paths.append(out / f"{prefix}per_query.png")
    return paths


def _figure(width: float, height: float) -> tuple[Any, Any]:
    """A figure on the Agg canvas (no pyplot: no global state, no display needed)."""
    import logging

    # its font cache is built on first use, announced at INFO: not the user's concern
    logging.getLogger("matplotlib").setLevel(logging.WARNING)
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
    for combo, group in sorted(lines.items(), key=lambda kv: [_natural(v) for v in kv[0]]):
        # label: what tells this line apart (choice.retriever=dense -> retriever=dense)
        label = ", ".join(f"{_short(k)}={v}" for k, v in zip(others, combo, strict=True)
                          if v != "") or m
        pts = sorted((int(k) if (k := r["params"][TOP_K]).isdigit() else top, r["value"], r["ci"])
                     for r in group)
        err = [[max(0.0, v - ci[0]) if ci else 0.0 for _, v, ci in pts],
               [max(0.0, ci[1] - v) if ci else 0.0 for _, v, ci in pts]]
        ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=err, marker="o", capsize=3,
                    label=label)
    ticks = numeric + ([top] if any(not r["params"][TOP_K].isdigit() for r in rows) else [])
    ax.set_xticks(ticks, [str(t) if t != top else "all" for t in ticks])
    ax.set(xlabel=TOP_K, ylabel=m, title=f"{m} vs {TOP_K} ({result['confidence']:.0%} CI)")
    if len(lines) > 4:  # beside the axes, where it covers no line
        fig.set_size_inches(11, 4.5)
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1))
    elif len(lines) > 1:
        ax.legend(fontsize="small")
    fig.savefig(path, dpi=120)


def _natural(value: str) -> tuple[int, float, str]:
    """Numbers in numeric order (10 before 128), then words."""
    try:
        return (0, float(value), "")
    except ValueError:
        return (1, 0.0, value)


def _short(key: str) -> str:
    """A param or choice key as a legend shows it: ``retriever.ef_search`` -> ``ef_search``."""
    return key.removeprefix("choice.").removeprefix("retriever.")


#: Okabe-Ito colours (safe for colour-blind readers): better, tie, worse.
_WTL = (("better", "#0072B2"), ("tie", "#BBBBBB"), ("worse", "#E69F00"))


def _plot_wtl(result: dict[str, Any], values: dict[str, Any], path: Path) -> bool:
    """Per run, on the queries both scored: how many it scores above, equal to and below
    the reference (the baseline, or the group's #1); False when there is nothing to draw."""
    rows = result["all_rows"]
    ref, others = rows[0], rows[1:]
    ref_values = values.get(ref["run_id"]) or {}
    bars = []
    for r in others:
        mine = values.get(r["run_id"]) or {}
        ids = ref_values.keys() & mine.keys()
        diffs = [mine[i] - ref_values[i] for i in ids]
        if ids:
            bars.append((r, [sum(d > 0 for d in diffs), sum(d == 0 for d in diffs),
                             sum(d < 0 for d in diffs)]))
    if not bars:
        return False
    labels = [f"{r['rank']} {r['run_name']}" for r, _ in bars][::-1]
    counts = [c for _, c in bars][::-1]
    fig, ax = _figure(max(8.0, 3 + 0.075 * max(map(len, labels))), 1.4 + 0.45 * len(bars))
    left = [0] * len(bars)
    for j, (name, colour) in enumerate(_WTL):
        widths = [c[j] for c in counts]
        ax.barh(range(len(bars)), widths, left=left, color=colour, label=name)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.set_yticks(range(len(bars)), labels)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    per = "score" if judged_metric(result["metric"]) == "mean" else result["metric"]
    vs = f"baseline {ref['run_name']}" if result["pair"] else f"#1 {ref['run_name']}"
    ax.set(xlabel=f"queries (scored by both): per-query {per} better / equal / worse",
           title=f"per-query {per} against {vs}")
    ax.legend(fontsize="small", loc="lower right")
    fig.savefig(path, dpi=120)
    return True
