"""The "How sure is this number?" section of ``report.html``: for each variant with a
``confidence`` block, its three intervals side by side (PPI++, the human labels
alone, the judge alone) as a table and a small drawing, how many samples people labelled,
which interval it is (central limit, or the bootstrap with few labels), how many more labels
would halve its width, the block's note, and the judge's confusion matrix against the human
verdicts.

The drawing is inline SVG built by the template from the numbers here (escaped as every
value is); the table beside it holds the same numbers, so nothing is told by the drawing
alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from harness.report.confidence_lines import halving_line

#: The three intervals, in the order shown: block keys of the mean and the interval, the
#: row's name, what it says, and its Okabe–Ito colour.
ROWS = (
    ("mean", "ci", "PPI++", "human labels correct the judge: valid whatever its errors",
     "#0072B2"),
    ("labels_only_mean", "labels_only_ci", "labels only",
     "the labelled samples alone, the judge unused", "#009E73"),
    ("judge_mean", "judge_only_ci", "judge only",
     "every sample, the judge taken as right: sampling noise only", "#D55E00"),
)
#: How the strata table names each interval's method.
METHODS = {"clt": "central limit", "bootstrap": "bootstrap (under 50 labelled)"}
#: What the block's ``labels`` counts are called, in the order shown.
LABEL_COUNTS = {
    "label_rows": "label rows read", "matched_rows": "matched to the run's chunks",
    "blank_rows": "blank", "unknown_samples": "for samples the run does not have",
    "unknown_chunks": "for chunks the run did not retrieve",
    "partially_labelled_samples": "partially labelled samples (left out)",
}
#: Size of the drawing (SVG user units): width, left margin for the names, right margin,
#: height of a row, height of the axis.
WIDTH, LEFT, RIGHT, ROW, AXIS = 600, 96, 20, 32, 46


def blocks(summary: Any) -> list[tuple[str, Mapping[str, Any]]]:
    """``(name, block)`` for each variant whose summary has a ``confidence`` block: the
    variants' own (``variants.<name>.confidence``), else the run's (``confidence``)."""
    out: list[tuple[str, Mapping[str, Any]]] = [
        (str(name), v["confidence"]) for name, v in (summary.variants or {}).items()
        if isinstance(v, Mapping) and isinstance(v.get("confidence"), Mapping)]
    if out:
        return out
    block = getattr(summary, "confidence", None)
    if block is None:
        block = summary.described.get("confidence")
    return [(str(summary.metric), block)] if isinstance(block, Mapping) else []


def num(value: Any, digits: int = 4) -> str:
    """A number as the section shows it (``n/a`` when there is none)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "n/a"
    if isinstance(value, float) and not math.isfinite(value):
        return "n/a"
    return f"{value:,}" if isinstance(value, int) else f"{value:.{digits}f}"


def _interval(ci: Any) -> tuple[float, float] | None:
    if isinstance(ci, list | tuple) and len(ci) == 2 and all(
            isinstance(x, int | float) and math.isfinite(x) for x in ci):
        return float(ci[0]), float(ci[1])
    return None


def intervals(block: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The three rows of the table: name, what it says, mean, interval, width, samples."""
    n_lab, n = block.get("n_labelled"), block.get("n")
    used = {"PPI++": f"{num(n_lab)} labelled of {num(n)} judged", "labels only": num(n_lab),
            "judge only": num(n)}
    rows = []
    for mean_key, ci_key, name, says, colour in ROWS:
        ci = _interval(block.get(ci_key))
        rows.append({"name": name, "says": says, "colour": colour,
                     "mean": num(block.get(mean_key)), "mean_value": block.get(mean_key),
                     "ci": None if ci is None else f"[{num(ci[0])}, {num(ci[1])}]",
                     "bounds": ci, "width": None if ci is None else num(ci[1] - ci[0]),
                     "samples": used[name]})
    return rows


def _ticks(lo: float, hi: float) -> list[float]:
    """Round tick values over ``[lo, hi]``: about five, at 1, 2 or 5 times a power of 10."""
    raw = (hi - lo) / 5
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    return [round(first + i * step, 10) for i in range(int((hi - first) / step + 1e-9) + 1)]


def drawing(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Where the template draws each interval: an axis zoomed on the intervals (padded by
    a tenth of their span), a line from low to high with a dot at the mean per row."""
    drawn = [r for r in rows if r["bounds"] is not None]
    if not drawn:
        return None
    lo = float(min(r["bounds"][0] for r in drawn))
    hi = float(max(r["bounds"][1] for r in drawn))
    pad = max((hi - lo) * 0.1, 0.005)
    lo, hi = lo - pad, hi + pad

    def x(value: float) -> float:
        return round(LEFT + (value - lo) / (hi - lo) * (WIDTH - LEFT - RIGHT), 1)

    lines = []
    for i, r in enumerate(rows):
        y = ROW * i + ROW / 2 + 4
        line = {"name": r["name"], "colour": r["colour"], "y": y, "text_y": y + 4}
        if r["bounds"] is not None:
            a, b = r["bounds"]
            mean = r["mean_value"]
            line.update(x1=x(a), x2=x(b), label=f"{r['mean']} {r['ci']}",
                        mean=x(mean) if isinstance(mean, int | float) else None)
        lines.append(line)
    axis_y = ROW * len(rows) + 8
    ticks = [{"x": x(t), "label": f"{t:g}"} for t in _ticks(lo, hi)]
    return {"width": WIDTH, "height": axis_y + AXIS - 8, "lines": lines, "axis_y": axis_y,
            "left": LEFT, "right": WIDTH - RIGHT, "ticks": ticks}


def agreement(block: Mapping[str, Any]) -> dict[str, Any] | None:
    """The judge against the human verdicts on the labelled chunks: the confusion counts
    (rows: human, columns: judge) and kappa, accuracy, precision and recall."""
    a = block.get("judge_agreement")
    if not isinstance(a, Mapping):
        return None
    undefined = "n/a (undefined)"
    return {
        "matrix": [("relevant", num(a.get("tp")), num(a.get("fn"))),
                   ("not relevant", num(a.get("fp")), num(a.get("tn")))],
        "stats": [
            ("Cohen's kappa", num(a.get("kappa"), 3) if a.get("kappa") is not None
             else undefined),
            ("accuracy", num(a.get("accuracy"), 3) if a.get("accuracy") is not None
             else undefined),
            ('precision of "relevant"', num(a.get("precision"), 3)
             if a.get("precision") is not None else undefined),
            ('recall of "relevant"', num(a.get("recall"), 3) if a.get("recall") is not None
             else undefined),
            ("labelled chunks", num(a.get("n_chunks"))),
        ],
    }


def labels_line(block: Mapping[str, Any]) -> str | None:
    """Where the labels came from (``labels_source``, the seeded ``draw`` of ``qrels``) and
    the counts of what was read and what did not fit; ``None`` when the block says neither."""
    given = block.get("labels")
    counts: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    said = [f"{num(counts[key])} {word}" for key, word in LABEL_COUNTS.items()
            if isinstance(counts.get(key), int) and counts[key]]
    source, draw = block.get("labels_source"), block.get("draw")
    head = "Human labels" + (f" from {source}" if source else "")
    if isinstance(draw, Mapping):
        head += (f" (a seeded random draw of {num(draw.get('n'))} of "
                 f"{num(draw.get('population'))} samples, seed {draw.get('seed')})")
    if not said and not source:
        return None
    return head + (": " + "; ".join(said) if said else "") + "."


def section(name: str, block: Mapping[str, Any]) -> dict[str, Any]:
    """What the template shows of one variant's block."""
    rows = intervals(block)
    level = block.get("level")
    pct = f"{level:.0%}" if isinstance(level, int | float) else "?"
    n_lab, n = num(block.get("n_labelled")), num(block.get("n"))
    method = str(block.get("method", "ppi++")).upper()
    lead = (f"{rows[0]['mean']} {rows[0]['ci'] or ''} ({method}, {pct}): {n_lab} of {n} "
            f"scored samples labelled by people; the judge alone says {rows[2]['mean']}.")
    boot = None
    if block.get("interval_method") == "bootstrap":
        boot = (f"With {n_lab} labelled samples the PPI++ and labels-only intervals are "
                f"bootstrap intervals: {block.get('interval', '')}.")
    elif block.get("interval_method") == "stratified":
        boot = (f"The PPI++ and labels-only intervals are {block.get('interval', '')}; each "
                "value's own is in the table below.")
    halve = halving_line(dict(block))
    notes = []
    if block.get("note"):
        notes.append(str(block["note"]))
    elif block.get("random_draw"):
        notes.append("The labelled samples are the seeded random draw of `harness label`.")
    unscored = block.get("n_labelled_unscored")
    if isinstance(unscored, int) and unscored:
        notes.append(f"{unscored:,} labelled sample(s) the judge did not score are left out.")
    return {"name": name, "level": pct, "lead": lead, "rows": rows, "plot": drawing(rows),
            "strata": strata_table(block),
            "notes": notes, "method": boot,
            "halve": None if halve is None else halve[0].upper() + halve[1:] + ".",
            "labels": labels_line(block), "agreement": agreement(block),
            "random_draw": bool(block.get("random_draw"))}


def strata_table(block: Mapping[str, Any]) -> dict[str, Any] | None:
    """With ``run.strata``: the column, a row per value (its PPI++ mean and interval, how
    many of its samples were labelled, the judge's mean), and the block's note."""
    strata = block.get("strata")
    if not isinstance(strata, Mapping):
        return None
    rows = []
    for entry in strata.get("values") or []:
        ci = _interval(entry.get("ci"))
        rows.append({"value": entry.get("value"), "mean": num(entry.get("mean")),
                     "ci": "n/a" if ci is None else f"[{num(ci[0])}, {num(ci[1])}]",
                     "labelled": f"{num(entry.get('n_labelled'))} of {num(entry.get('n'))}",
                     "judge": num(entry.get("judge_mean")),
                     "method": METHODS.get(entry.get("interval_method"),
                                           "none: fewer than 2 labelled")})
    return {"column": strata.get("column"), "rows": rows, "note": strata.get("note")}


def sections(summary: Any) -> list[dict[str, Any]]:
    """One section per variant with a ``confidence`` block (none: no section at all)."""
    return [section(name, block) for name, block in blocks(summary)]


#: The section's template (rendered with autoescaping by ``html.render``).
TEMPLATE = """<h2 id="confidence">How sure is this number?</h2>
<p class="muted">The judge's mean counts sampling noise only and takes every verdict as right.
People labelled some samples: PPI++ corrects the judge's mean with them, and its interval
holds whatever the judge's errors (narrower than the labels alone when the judge is good).</p>
{% for s in sections %}<section class="confidence" id="confidence-{{ s.name }}">
{% if sections|length > 1 %}<h3>{{ s.name }}</h3>{% endif %}
<p class="lead"><strong>{{ s.lead }}</strong></p>
{% for note in s.notes %}<p class="conf-note"><strong>Note:</strong> {{ note }}</p>
{% endfor %}{% if s.method %}<p class="conf-method">{{ s.method }}</p>
{% endif %}{% if s.halve %}<p class="conf-halve">{{ s.halve }}</p>
{% endif %}<div class="conf-body">
<table class="intervals"><thead><tr><th>interval</th><th class="num">mean</th>
<th class="num">{{ s.level }} interval</th><th class="num">width</th><th>samples</th></tr>
</thead><tbody>{% for r in s.rows %}<tr data-interval="{{ r.name }}">
<th><span class="swatch" style="background: {{ r.colour }}"></span>{{ r.name }}
<div class="muted says">{{ r.says }}</div></th><td class="num mean">{{ r.mean }}</td>
<td class="num ci">{{ r.ci or 'n/a' }}</td><td class="num width">{{ r.width or 'n/a' }}</td>
<td class="samples">{{ r.samples }}</td></tr>
{% endfor %}</tbody></table>
{% if s.plot %}{% set p = s.plot %}<svg class="conf-plot" role="img" width="{{ p.width }}"
 height="{{ p.height }}" viewBox="0 0 {{ p.width }} {{ p.height }}"
 aria-label="The three {{ s.level }} intervals of the mean on one axis">
<title>The three {{ s.level }} intervals of the mean on one axis</title>
{% for t in p.ticks %}<line x1="{{ t.x }}" x2="{{ t.x }}" y1="0" y2="{{ p.axis_y }}"
 stroke="#e4e4e4"/><text x="{{ t.x }}" y="{{ p.axis_y + 16 }}" text-anchor="middle"
 font-size="11" fill="#5a5a5a">{{ t.label }}</text>
{% endfor %}<line x1="{{ p.left }}" x2="{{ p.right }}" y1="{{ p.axis_y }}" y2="{{ p.axis_y }}"
 stroke="#5a5a5a"/>
{% for l in p.lines %}<text x="{{ p.left - 8 }}" y="{{ l.text_y }}" text-anchor="end"
 font-size="12" fill="#1b1b1b">{{ l.name }}</text>
{% if l.x1 is defined %}<g stroke="{{ l.colour }}" stroke-width="3"><line x1="{{ l.x1 }}"
 x2="{{ l.x2 }}" y1="{{ l.y }}" y2="{{ l.y }}"/><line x1="{{ l.x1 }}" x2="{{ l.x1 }}"
 y1="{{ l.y - 6 }}" y2="{{ l.y + 6 }}"/><line x1="{{ l.x2 }}" x2="{{ l.x2 }}"
 y1="{{ l.y - 6 }}" y2="{{ l.y + 6 }}"/></g>
{% if l.mean is not none %}<circle cx="{{ l.mean }}" cy="{{ l.y }}" r="5" fill="#fff"
 stroke="{{ l.colour }}" stroke-width="2.5"><title>{{ l.name }}: {{ l.label }}</title>
</circle>{% endif %}{% endif %}
{% endfor %}<text x="{{ (p.left + p.right) / 2 }}" y="{{ p.height - 2 }}"
 text-anchor="middle" font-size="11" fill="#5a5a5a">mean, with its interval</text></svg>
{% endif %}</div>
{% if s.strata %}<h4>By {{ s.strata.column }}</h4>
<table class="strata"><thead><tr><th>{{ s.strata.column }}</th><th class="num">PPI++ mean</th>
<th class="num">{{ s.level }} interval</th><th class="num">labelled</th>
<th class="num">judge alone</th><th>interval</th></tr></thead><tbody>
{% for r in s.strata.rows %}<tr data-stratum="{{ r.value }}"><th>{{ r.value }}</th>
<td class="num mean">{{ r.mean }}</td><td class="num ci">{{ r.ci }}</td>
<td class="num">{{ r.labelled }}</td><td class="num">{{ r.judge }}</td>
<td>{{ r.method }}</td></tr>
{% endfor %}</tbody></table>
{% if s.strata.note %}<p class="conf-note"><strong>Note:</strong> {{ s.strata.note }}</p>
{% endif %}{% endif %}
{% if s.agreement %}<h4>The judge against the human verdicts, chunk by chunk</h4>
<div class="conf-body"><table class="confusion">
<thead><tr><th></th><th class="num">judge: relevant</th><th class="num">judge: not relevant</th>
</tr></thead><tbody>{% for human, judged_rel, judged_not in s.agreement.matrix %}
<tr><th>human: {{ human }}</th><td class="num">{{ judged_rel }}</td>
<td class="num">{{ judged_not }}</td></tr>{% endfor %}</tbody></table>
<table class="agreement">{% for key, value in s.agreement.stats %}<tr><th>{{ key }}</th>
<td class="num">{{ value }}</td></tr>{% endfor %}</table></div>
{% else %}<p class="muted">No chunk-level agreement: the block holds none.</p>{% endif %}
{% if s.labels %}<p class="muted labels">{{ s.labels }}</p>{% endif %}
</section>
{% endfor %}"""
