"""The Pareto front of a sweep's runs, when asked for (``pareto=`` or a sweep whose
``run.objective`` names several objectives): quality against cost (``ndcg_at_10`` vs
``-retrieval_p95_ms``), as a table, ``pareto.json`` and a scatter plot with the front.
Differences inside a measured time's noise are ties (``harness.compare.noise``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.compare import noise
from harness.core.errors import ConfigError, closest
from harness.core.metric_names import headline_of
from harness.core.objectives import Objective, known, parse, sort_key, with_headline
from harness.core.text import clip

_OFF = ("none", "null", "false", "off", "no", "0")
#: The tag of a sweep's parent run that holds its ``run.objective`` (``tracking.sweep``).
SWEEP_OBJECTIVE = "sweep.objective"


def asked(parent: Any | None, runs: Sequence[Any]) -> str | None:
    """The objectives a sweep asked for, when it named several: its parent's
    ``sweep.objective`` tag, else the ``run.objective`` every run logged (``None``: one
    objective, or none recorded)."""
    spec = parent.data.tags.get(SWEEP_OBJECTIVE) if parent is not None else None
    if spec is None:
        logged = {r.data.params.get("run.objective") for r in runs}
        spec = logged.pop() if len(logged) == 1 else None
    if not spec:
        return None
    try:
        value = json.loads(spec)
    except ValueError:
        value = spec
    names = value if isinstance(value, list) else str(value).split(",")
    return ",".join(map(str, names)) if len(names) > 1 else None


def choose(pareto: str | Sequence[str] | None, metric: str, runs: Sequence[Any],
           parent: Any | None = None, notes: list[str] | None = None
           ) -> list[Objective] | None:
    """The objectives of the front: ``pareto`` as given (``ndcg_at_10,-retrieval_p95_ms``),
    else the several objectives the sweep asked for (``run.objective``, see ``asked``);
    ``None`` for no front (``pareto=none``, or nothing asked: a quality metric alone is a
    ranking, not a trade-off).

    Raises:
        ConfigError: A bad spec, fewer than two objectives, or a name no run logged.
    """
    logged = {k for r in runs for k in r.data.metrics}
    heads = [headline_of(r.data.metrics, r.data.tags) for r in runs]
    if pareto is None:
        spec = asked(parent, runs)
        if spec is None:
            return None
        spec = with_headline(spec, heads)  # ``headline``: the runs' headline metric
        objectives = parse(spec, "pareto")
        missing = [o.name for o in objectives if o.name not in logged]
        if missing and notes is not None:
            notes.append(f"no Pareto front: the sweep's run.objective={spec} names "
                         f"{', '.join(missing)}, which no run logged")
        return None if missing else objectives
    if isinstance(pareto, str) and pareto.strip().lower() in _OFF:
        return None
    parse(pareto, "pareto")  # a bad spec is refused naming pareto
    objectives = parse(with_headline(pareto, heads), "pareto")
    if len(objectives) < 2:
        raise ConfigError(f"pareto: a front needs two or more objectives, got {pareto!r}; "
                          f"e.g. pareto={metric},-retrieval_p95_ms")
    for o in objectives:
        if o.name not in logged:
            raise ConfigError(f"pareto: no run has {o.name!r}{closest(o.name, logged)}; "
                              f"choose among {', '.join(sorted(logged))}")
    return objectives


def front_of(runs: Sequence[Any], objectives: Sequence[Objective], varying: Sequence[str],
             label: str = "", confidence: float = 0.95, drift: float = noise.DRIFT
             ) -> dict[str, Any]:
    """The runs split into ``front`` (non-dominated, best first by the first objective),
    ``dominated`` (same order) and ``skipped`` (missing or NaN values: ``missing`` names
    them); ties keep the order of the sweep's jobs. On a measured time, differences
    within the noise band are ties (``harness.compare.noise``); each row's ``noise``
    gives its own band on each such objective (its value's ± at ``confidence``)."""
    from harness.compare.stats import job_order

    order = job_order(runs)
    runs = [runs[i] for i in sorted(range(len(runs)), key=lambda i: order[i])]
    points = [[r.data.metrics.get(o.name) for o in objectives] for r in runs]
    facts = [(r.data.metrics, r.data.params) for r in runs]
    timed = [noise.is_measured(o.name) for o in objectives]
    bands = [[[noise.band(o.name, a, b, confidence, drift) if t else 0.0
               for o, t in zip(objectives, timed, strict=True)] for b in facts] for a in facts]
    on_front = noise.front(points, objectives, bands)

    def row(i: int) -> dict[str, Any]:
        r = runs[i]
        return {"run_id": r.info.run_id, "run_name": r.info.run_name or r.info.run_id,
                "values": {o.name: points[i][j] for j, o in enumerate(objectives)},
                "noise": {o.name: noise.half_width(o.name, facts[i], confidence, drift)
                          for o, t in zip(objectives, timed, strict=True)
                          if t and known(points[i][objectives.index(o)])},
                "params": {k: r.data.params.get(k, r.data.tags.get(k, "")) for k in varying}}

    complete = [i for i, p in enumerate(points) if all(known(x) for x in p)]
    dominated = sorted(set(complete) - set(on_front),
                       key=lambda i: sort_key(points[i], objectives) + (i,))
    skipped = [{**row(i), "missing": [o.name for o, x in zip(objectives, points[i], strict=True)
                                      if not known(x)]}
               for i in range(len(runs)) if i not in complete]
    return {"label": label, "objectives": [str(o) for o in objectives],
            "directions": [o.direction for o in objectives], "varying": list(varying),
            "noisy": [o.name for o, t in zip(objectives, timed, strict=True) if t],
            "confidence": confidence, "drift": drift,
            "front": [row(i) for i in on_front], "dominated": [row(i) for i in dominated],
            "skipped": skipped}


def _fmt(x: float) -> str:
    return f"{x:.4f}" if abs(x) < 1e4 else f"{x:.0f}"


def render(groups: Sequence[dict[str, Any]]) -> str:
    """The fronts as Markdown: per group, its non-dominated runs, and the skipped ones."""
    out = []
    for g in groups:
        objectives = parse(g["objectives"], "pareto")
        words = " vs ".join(f"{o.name} ({'max' if o.maximize else 'min'})" for o in objectives)
        n = len(g["front"]) + len(g["dominated"])
        lines = ["", f"Pareto front{(' of ' + g['label']) if g['label'] else ''}: {words}: "
                 f"{len(g['front'])} of {n} run(s) non-dominated", ""]
        head = ["#", "run", *(o.name for o in objectives), *g["varying"]]
        body = [[str(i), r["run_name"].replace("|", "\\|"),
                 *(_fmt(r["values"][o.name]) + (f" ±{_fmt(r['noise'][o.name])}"
                                                if o.name in r.get("noise", {}) else "")
                   for o in objectives),
                 *(r["params"].get(k, "") for k in g["varying"])]
                for i, r in enumerate(g["front"], 1)]
        width = [max(len(x) for x in col) for col in zip(head, *body, strict=True)]
        lines += ["| " + " | ".join(x.ljust(w) for x, w in zip(line, width, strict=True)) + " |"
                  for line in [head, ["-" * w for w in width], *body]]
        if g.get("noisy"):
            lines.append(f"ties: on {', '.join(g['noisy'])} a gap inside the noise (± the "
                         f"{g['confidence']:.0%} interval of each run's figure from its logged "
                         f"spread, at least {g['drift']:.0%}) dominates nothing")
        for r in g["skipped"]:
            lines.append(f"skipped: {r['run_name']} (no {', '.join(r['missing'])})")
        out.append("\n".join(lines) + "\n")
    return "".join(out)


def write(groups: Sequence[dict[str, Any]], out: Path, plots: bool,
          notes: list[str]) -> list[Path]:
    """Write ``pareto.json`` and (with ``plots``) ``pareto.png`` per group
    (``g<i>_pareto.png`` when there are several) into ``out``; return the paths."""
    path = out / "pareto.json"
    from harness.run.outputs.files import json_text

    path.write_text(json_text({"groups": list(groups)}), "utf-8")
    files = [path]
    if plots:
        try:
            for i, g in enumerate(groups):
                if g["front"]:
                    files.append(out / ("pareto.png" if len(groups) == 1
                                        else f"g{i + 1}_pareto.png"))
                    plot(g, files[-1])
        except ImportError:
            notes.append("pareto plot skipped: matplotlib is not installed")
    return files


#: Okabe-Ito colours (safe for colour-blind readers): the front, the dominated runs.
_FRONT, _REST = "#D55E00", "#999999"


def plot(group: dict[str, Any], path: Path) -> None:
    """The second objective (x) against the first (y): dominated runs as grey circles,
    the front as labelled diamonds joined by its staircase (with two objectives)."""
    from harness.compare.render import _figure

    objectives = parse(group["objectives"], "pareto")
    ya, xa = objectives[0], objectives[1]

    def xy(rows: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
        return [r["values"][xa.name] for r in rows], [r["values"][ya.name] for r in rows]

    fig, ax = _figure(7.5, 5)
    if group["dominated"]:
        xs, ys = xy(group["dominated"])
        ax.scatter(xs, ys, marker="o", facecolors="none", edgecolors=_REST, s=36,
                   label=f"dominated ({len(xs)})")
    front = sorted(group["front"], key=lambda r: (r["values"][xa.name], r["values"][ya.name]))
    xs, ys = xy(front)
    if len(objectives) == 2 and len(front) > 1:
        # the boundary of what the front dominates: flat towards the worse x first
        ax.step(xs, ys, where="post" if not xa.maximize else "pre", color=_FRONT,
                linewidth=1.5, alpha=0.8)
    ax.scatter(xs, ys, marker="D", color=_FRONT, s=48, zorder=3,
               label=f"Pareto front ({len(xs)})")
    for r, x, y in zip(front, xs, ys, strict=True):
        ax.annotate(clip(r["run_name"], 40), (x, y), textcoords="offset points",
                    xytext=(5, 5), fontsize="x-small")
    ax.margins(x=0.15, y=0.08)  # room for the labels right of the points
    every = [*xs, *xy(group["dominated"])[0]]
    if min(every) > 0 and max(every) / min(every) > 100:
        ax.set_xscale("log")
    more = f"; front over all {len(objectives)} objectives" if len(objectives) > 2 else ""
    ax.set(xlabel=f"{xa.name} ({'higher' if xa.maximize else 'lower'} is better)",
           ylabel=f"{ya.name} ({'higher' if ya.maximize else 'lower'} is better)",
           title=f"{ya.name} vs {xa.name}: Pareto front{more}")
    ax.legend(fontsize="small", loc="best")
    fig.savefig(path, dpi=120)

