"""``report.html`` of one run: summary, plots and the per-sample view, in one file."""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.core.summary import PPI, RunSummary, variants_with_headlines
from harness.core.text import clip
from harness.report import bill, confidence, first_screen
from harness.report.templates import RUN, SCRIPT, STYLE
from harness.run.timing import latency_line

#: The plots a run draws, in the order shown, with what each shows (the image's alt text).
PLOTS = {
    "score_histogram.png": "Histogram of the per-sample scores, with their mean",
    "precision_by_rank.png": "Share of relevant chunks at each rank, and pooled precision@k",
    "verdict_map.png": "Verdict of each ranked chunk for queries spread evenly over the run",
}
NO_PLOTS = (
    "No plots: they are drawn for tracked runs (tracking=mlflow) that scored something. "
    "`python -m harness.report {dir}` draws them for this run."
)
VERDICTS = {  # css class, symbol, label
    1: ("v-rel", "✓", "relevant"),
    0: ("v-not", "✗", "not relevant"),
    None: ("v-none", "–", "no verdict"),
}


def render(template: str, **context: Any) -> str:
    """``template`` rendered with autoescaping on (every value a run holds is untrusted)."""
    from jinja2 import Environment, StrictUndefined

    env = Environment(autoescape=True, undefined=StrictUndefined, keep_trailing_newline=True)
    return env.from_string(template).render(style=STYLE, script=SCRIPT, **context)


def data_uri(path: Path) -> str:
    """A PNG as a ``data:`` URI (the report needs no other file)."""
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def run_html(
    summary: RunSummary, rows: list[tuple[int, dict[str, Any]]], plots: Iterable[Path]
) -> str:
    """The report of one run: ``rows`` are ``(position, samples.jsonl row)`` pairs."""
    by_name = {p.name: p for p in plots}
    shown = [(name, alt, data_uri(by_name[name])) for name, alt in PLOTS.items() if name in by_name]
    n = summary.n_samples
    note = (f"All {n:,} samples." if len(rows) == n else
            f"{len(rows):,} of {n:,} samples: evenly spaced over the run, with up to 200 of "
            f"its unscored ones; samples.jsonl has them all.")
    views = [compact(sample_view(position, row)) for position, row in rows]
    folded = first_screen.settings(summary)  # below the summary table, in <details>
    return render(
        RUN,
        title=f"{summary.metric} on {dataset_name(summary)}",
        subtitle=(f"harness {summary.harness_version or '?'} · {summary.output_dir}"
                  f" · report written {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC"),
        first=render(first_screen.TEMPLATE, h=first_screen.headline(summary, rows)),
        facts=[row for row in facts(summary) if row not in folded],
        settings=folded,
        variants=variant_sections(summary),
        confidence=confidence_html(summary),
        cost=cost_html(summary),
        plots=shown,
        no_plots=NO_PLOTS.format(dir=summary.output_dir or "RUN_DIR"),
        rows_note=note,
        n_rows=len(views),
        rows_json=script_json(views),
        page_size=PAGE_SIZE,
    )


def cost_html(summary: RunSummary) -> str:
    """The "What it cost" section (``harness.report.bill``); ``""`` for a run without a judge."""
    judge = None if summary.judge is None else {**summary.judge, **summary.judge_stats}
    shown = bill.cost_section(judge, summary.variants)
    return render(bill.TEMPLATE, **shown) if shown else ""


def confidence_html(summary: RunSummary) -> str:
    """The "How sure is this number?" section: one part per variant with a ``confidence``
    block, rendered (escaped) on its own; ``""`` when the summary has none."""
    shown = confidence.sections(summary)
    return render(confidence.TEMPLATE, sections=shown) if shown else ""


#: Samples drawn per page of the report (the rest wait in the page's data, not the DOM).
PAGE_SIZE = 50


def compact(view: dict[str, Any]) -> dict[str, Any]:
    """A sample's view without what the page's script derives or defaults (empty values,
    each chunk's colour and symbol): about half the bytes of a large report."""
    out = {k: v for k, v in view.items() if not _empty(v)}
    out["chunks"] = [{k: v for k, v in c.items() if k not in ("css", "icon") and not _empty(v)}
                     for c in view["chunks"]]
    return out


def _empty(value: Any) -> bool:
    return value is None or value is False or (isinstance(value, str | list) and not value)


def dataset_name(summary: RunSummary) -> str:
    """What the title calls the data: the file or folder's name, else the dataset option."""
    path = summary.dataset.get("path")
    option = str(summary.options.get("dataset", "?"))
    if isinstance(path, str) and path and path != "records":
        return Path(path).name or option
    return option


def script_json(value: Any) -> str:
    """``value`` as JSON that is safe inside an HTML ``<script>`` element: ``<``, ``>`` and
    ``&`` escaped, so no text a run holds can close the element or open a comment."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _number(value: Any, digits: int = 4) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "n/a"
    return f"{value:,}" if isinstance(value, int) else f"{value:.{digits}f}"


def facts(summary: RunSummary) -> list[tuple[str, str]]:
    """The summary table: what ran, on what, the numbers; then the settings
    (``first_screen.settings``, which the report folds below the table)."""
    dataset, options = summary.dataset, summary.options
    out = [
        ("metric", str(summary.metric)),
        ("dataset", f"{options.get('dataset', '?')} ({dataset.get('path')})"),
        *mean_facts(summary.mean, summary.headline(),
                    f" ({next(iter(summary.variants))}, the first variant)"
                    if summary.variants else ""),
        ("scored", f"{summary.n_scored:,} of {summary.n_samples:,}"),
    ]
    for reason, count in summary.unscored_reasons.items():
        out.append(("unscored", f"{count:,} × {reason}"))
    if summary.success is not None:
        out.append(("success rate", f"{summary.success:.1%}"))
    retrieval = summary.retrieval or {}
    if retrieval:
        out.append(("retrieval", "  ".join(
            f"{k} {_number(v)}" for k, v in retrieval.items() if k != "n_queries"
        ) + f"  ({retrieval.get('n_queries', 0):,} queries)"))
    judge = None if summary.judge is None else {**summary.judge, **summary.judge_stats}
    if judge:
        out.append(("judge", f"{judge.get('model')} ({judge.get('requests', 0):,} requests)"))
    if summary.prompt is not None:
        out.append(("prompt", str(summary.prompt.get("version"))))
    out.append(("time", f"{summary.duration_s:.3f} s"))
    latency = latency_line(summary.timing)
    if latency:
        out.append(("latency", latency))
    return out + first_screen.settings(summary)


def mean_facts(mean: float | None, head: dict[str, Any], suffix: str = ""
               ) -> list[tuple[str, str]]:
    """The ``mean`` rows of a summary table: the headline ``head`` (``summary.json``'s
    ``headline``, or a variant's). With human labels, the PPI++ mean and its interval, then
    the judge's own ``mean`` as ``judge alone``; else ``mean`` (``suffix`` after it)."""
    value, ci, level = head.get("value"), head.get("interval"), head.get("level")
    alone = "n/a (nothing scored)" if mean is None else _number(mean)
    if head.get("method") == PPI and isinstance(value, int | float) and ci:
        pct = f" at {level:.0%}" if isinstance(level, int | float) else ""
        return [("mean", f"{_number(value)} [{_number(ci[0])}, {_number(ci[1])}] "
                         f"(PPI++{pct}: corrected by human labels){suffix}"),
                ("judge alone", f"{alone} (the judge's own mean, its verdicts taken as right)")]
    return [("mean", alone + suffix)]


def variant_sections(summary: RunSummary) -> list[dict[str, Any]]:
    """A section per variant of a run of several: its mean, scored and unscored counts, its
    commonest unscored reasons, and its precision at each rank."""
    out = []
    for name, v in variants_with_headlines(summary.variants or {}).items():
        rows = [*mean_facts(v.get("mean"), v.get("headline") or {}),
                ("scored", f"{v.get('n_scored', 0):,} of {summary.n_samples:,}"),
                ("unscored", f"{v.get('n_unscored', 0):,}")]
        reasons = list((v.get("unscored_reasons") or {}).items())[:5]
        rows += [("unscored reason", f"{count:,} × {reason}") for reason, count in reasons]
        if v.get("success_rate") is not None:
            rows.append(("success rate", f"{v['success_rate']:.1%}"))
        if isinstance(v.get("prompt"), dict):
            rows.append(("prompt", str(v["prompt"].get("version"))))
        by_rank = [(i + 1, _number(p, 3)) for i, p in enumerate(v.get("precision_by_rank") or [])]
        out.append({"name": name, "facts": rows, "by_rank": by_rank})
    return out


def _variant_scores(row: dict[str, Any]) -> list[tuple[str, str]]:
    """Each variant's score in a row of a run of several (``unscored`` where it has none)."""
    variants = row.get("variants")
    if not isinstance(variants, dict):
        return []
    return [(str(name), "unscored" if not isinstance(v, dict) or v.get("score") is None
             else _number(v["score"])) for name, v in variants.items()]


def _verdict(value: Any) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float) and math.isfinite(value):
        return 1 if value >= 0.5 else 0
    return None


def chunks_of(row: dict[str, Any]) -> list[dict[str, Any]]:
    """A row's ranked chunks: its ``chunks``, or for rows written before they existed, its
    parallel lists (``verdicts``, ``reasons``, ``similarities``, ``retrieved_context_ids``)."""
    if isinstance(row.get("chunks"), list):
        return [c for c in row["chunks"] if isinstance(c, dict)]
    columns = {"verdict": row.get("verdicts"), "reason": row.get("reasons"),
               "similarity": row.get("similarities"), "relevance": row.get("relevance"),
               "id": row.get("retrieved_context_ids")}
    lists = {k: v for k, v in columns.items() if isinstance(v, list)}
    n = max((len(v) for v in lists.values()), default=0)
    return [{k: v[i] for k, v in lists.items() if i < len(v)} for i in range(n)]


def _metadata(metadata: Any) -> list[tuple[str, str]]:
    """A chunk's metadata as ``(key, value)`` texts for its line (long values clipped)."""
    if not isinstance(metadata, dict):
        return []
    return [(str(k), clip(v if isinstance(v, str) else json.dumps(v), 80))
            for k, v in metadata.items()]


def sample_view(position: int, row: dict[str, Any]) -> dict[str, Any]:
    """What the template shows of one row."""
    scored = row.get("score") is not None
    chunks = []
    for chunk in chunks_of(row):
        verdict = _verdict(chunk.get("verdict")) if scored else None
        css, icon, label = VERDICTS[verdict]
        numbers: list[tuple[str, str]] = [(k, _number(chunk[k], 3))
                                          for k in ("relevance", "similarity") if k in chunk]
        numbers += _metadata(chunk.get("metadata"))
        reason = chunk.get("reason")
        chunks.append({
            "css": css, "icon": icon, "label": label, "extra": numbers,
            "id": None if chunk.get("id") is None else str(chunk["id"]),
            "text": None if chunk.get("text") is None else str(chunk["text"]),
            "reason": None if reason is None else str(reason),
        })
    verdicts = [c["label"] for c in chunks]
    extra: list[tuple[str, str]] = []
    if row.get("success") is not None:
        extra.append(("success", "yes" if row["success"] else "no"))
    score = row.get("score")
    return {
        "id": str(row.get("id")),
        "position": position + 1,
        "status": "scored" if scored else "unscored",
        "score": _number(score),
        "value": score if scored and isinstance(score, int | float) and math.isfinite(score)
        else None,
        "question": _text(row.get("question")),
        "reference": _text(row.get("reference")),
        "response": _text(row.get("response")),
        "error": None if scored or row.get("error") is None else str(row["error"]),
        "reason": _text(row.get("reason")),
        "relevant": verdicts.count("relevant") if scored else None,
        "irrelevant": "not relevant" in verdicts,
        "extra": extra,
        "variants": _variant_scores(row),
        "chunks": chunks,
        "missed": missed_of(row),
    }


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def missed_of(row: dict[str, Any]) -> list[dict[str, str | None]]:
    """The relevant documents the retriever did not return (``missed_relevant`` of a row:
    each with its ``id``, ``grade`` and, when the corpus has it, ``text``)."""
    missed = row.get("missed_relevant")
    if not isinstance(missed, list):
        return []
    out = []
    for doc in missed:
        if isinstance(doc, dict):
            out.append({"id": _text(doc.get("id")),
                        "grade": None if doc.get("grade") is None else _number(doc["grade"], 3),
                        "text": _text(doc.get("text"))})
        else:
            out.append({"id": str(doc), "grade": None, "text": None})
    return out


def read_rows(path: Path) -> Iterator[dict[str, Any]]:
    """The rows of a ``samples.jsonl`` (blank lines skipped)."""
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                yield json.loads(line)
