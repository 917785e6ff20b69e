"""The console's lines of a run with human labels (``run.human_labels``): each
variant's PPI++ mean and interval (and, with few labels, that it is the bootstrap's), how
many more labels would halve its width, the note on how the labelled samples were chosen,
and the labels that did not fit the run."""

from __future__ import annotations

from typing import Any

from harness.confidence.plan import MIN_PAIRS
from harness.confidence.ppi import NOT_DRAWN
from harness.core.summary import RunSummary


def confidence_rows(summary: RunSummary) -> list[tuple[str, str]]:
    """With human labels: one row per variant with a ``confidence`` block (``mean 0.527
    [0.48, 0.57] (PPI++, 150 of 600 labelled; judge alone 0.669; kappa 0.55)``), a variant
    the labels cannot score, the note when the labels are not a recorded random draw, and
    the labels for samples or chunks the run does not have."""
    several = bool(summary.variants)
    named = [(n, v.get("confidence")) for n, v in (summary.variants or {}).items()] if (
        several) else [(summary.metric, summary.confidence)]
    if all(block is None for _, block in named):
        return []
    rows: list[tuple[str, str]] = []
    for name, block in named:
        lead = f"{name}: " if several else ""
        if block is None:
            rows.append(("confidence", f"{lead}no interval: it does not score by average "
                                       "precision over the ranked chunks"))
            continue
        low, high = block["ci"]
        kappa = (block.get("judge_agreement") or {}).get("kappa")
        rows.append(("confidence", (
            f"{lead}mean {block['mean']:.3f} [{low:.2f}, {high:.2f}] (PPI++{_how(block)}, "
            f"{block['n_labelled']} of {block['n']} labelled; judge alone "
            f"{block['judge_mean']:.3f}; kappa {'n/a' if kappa is None else f'{kappa:.2f}'})")))
        rows += [("strata", lead + line) for line in strata_lines(block)]
        halve = halving_line(block)
        if halve is not None:
            rows.append(("labels", lead + halve))
    first = next(block for _, block in named if block is not None)
    if first.get("note"):
        note = first["note"]
        rows.append(("note", "the labelled samples are not a recorded random draw: the "
                             "interval assumes they are one" if note == NOT_DRAWN else note))
    rows += [("labels", line) for line in unmatched(first.get("labels") or {})]
    return rows


#: Values of ``run.strata`` the console prints a line for (the rest are counted).
MAX_STRATA_LINES = 12


def _how(block: dict[str, Any]) -> str:
    """What the interval is, when it is not the central-limit one."""
    method = block.get("interval_method")
    if method == "stratified":
        return f", stratified by {(block.get('strata') or {}).get('column')}"
    return ", bootstrap" if method == "bootstrap" else ""


def strata_lines(block: dict[str, Any]) -> list[str]:
    """With ``run.strata``: a line per value (``qtype=list: mean 0.612 [0.48, 0.72]
    (PPI++, bootstrap, 30 of 150 labelled; judge alone 0.701)``), then the note when the
    overall interval could not be stratified."""
    strata = block.get("strata")
    if not isinstance(strata, dict):
        return []
    lines = []
    values = strata.get("values") or []
    for entry in values[:MAX_STRATA_LINES]:
        head = f"{strata.get('column')}={entry['value']}: "
        counts = f"{entry['n_labelled']} of {entry['n']} labelled"
        if entry.get("ci") is None:
            lines.append(f"{head}no interval ({counts}); judge alone {entry['judge_mean']:.3f}")
            continue
        low, high = entry["ci"]
        lines.append(f"{head}mean {entry['mean']:.3f} [{low:.2f}, {high:.2f}] (PPI++{_how(entry)}, "
                     f"{counts}; judge alone {entry['judge_mean']:.3f})")
    if len(values) > MAX_STRATA_LINES:
        lines.append(f"... and {len(values) - MAX_STRATA_LINES:,} more values of "
                     f"{strata.get('column')} (summary.json's confidence.strata has them all)")
    if strata.get("note"):
        lines.append(str(strata["note"]))
    return lines


def unmatched(counts: dict[str, Any]) -> list[str]:
    """The labels that did not fit the run, said aloud with their counts."""
    parts = [f"{counts[key]:,} {what}" for key, what in (
        ("unknown_samples", "for samples this run does not have"),
        ("unknown_chunks", "for chunks their sample did not retrieve"),
        ("partially_labelled_samples", "samples labelled in part (left out)"),
        ("skipped_feedback", "human feedback on the traces that names no chunk (left out)"),
    ) if counts.get(key)]
    if not parts:
        return []
    return [f"{counts.get('label_rows', 0):,} label rows: " + "; ".join(parts)]


def halving_line(block: dict[str, Any]) -> str | None:
    """How many more labels would halve the interval's width, with the command that draws
    them; None when the block does not say (too few labels to tell)."""
    more, (low, high) = block.get("labels_to_halve_width"), block["ci"]
    half = (high - low) / 4
    if isinstance(more, int) and not isinstance(more, bool):
        by = (f" --by {block['strata']['column']}" if block.get("interval_method") == "stratified"
              else "")
        return (f"{more:,} more labelled samples would halve the width (to ±{half:.3f}): "
                f"harness label RUN_DIR --width {half:.3g}{by}")
    if block.get("n_labelled", 0) >= MIN_PAIRS and block.get("n", 0) > block["n_labelled"] + 1:
        return (f"halving the width (to ±{half:.3f}) needs more labelled samples than the "
                f"run's {block['n']:,}")
    return None
