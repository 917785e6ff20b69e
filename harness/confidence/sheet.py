"""Which samples to label: a seeded uniform draw from a finished run, and the labelling
sheet (CSV and JSON lines) that ``run.human_labels`` reads back as it is.

The sheet has one row per retrieved chunk of each drawn sample: ``id``, ``rank``,
``context_id``, ``question``, ``reference``, ``context`` (the chunk's text as the run's
``samples.jsonl`` holds it: whole when the run had ``run.row_text_chars=null``, else cut
with ``…``, and ``text_cut`` says so), and an empty ``relevant`` column. The judge's
verdicts are left out on purpose: a labeller who sees them leans on them. ``draw.json``
beside the sheet records the seed and the drawn ids.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from harness.confidence.ppi import NOT_DRAWN
from harness.core.errors import ConfigError, DatasetError
from harness.datasets.reading import decode_line, load_json, read_lines, stat_file

CUT = "…"
COLUMNS = ("id", "rank", "context_id", "question", "reference", "context", "text_cut",
           "relevant")
SHEET_CSV, SHEET_JSONL, DRAW = "labels.csv", "labels.jsonl", "draw.json"
_BREAKS = {c: f"\\u{c:04x}" for c in (0x85, 0x2028, 0x2029)}


def run_rows(run_dir: str | Path) -> Iterator[dict[str, Any]]:
    """The rows of a finished run's ``samples.jsonl``."""
    path = Path(run_dir) / "samples.jsonl"
    if not stat_file(path):
        partial = path.with_name(path.name + ".partial")
        why = (" (the run did not finish: only samples.jsonl.partial is there)"
               if partial.exists() else "; name the folder of a finished run")
        raise DatasetError(str(path), f"file not found{why}")
    for number, raw in read_lines(path):
        text = decode_line(raw, path, number)
        if text.strip():
            row = load_json(text, path, number)
            if not isinstance(row, dict) or "id" not in row:
                raise DatasetError(str(path), "expected a row object with an id",
                                   line=number, field="id")
            yield row


def draw(ids: Sequence[str], n: int, seed: int) -> list[str]:
    """A seeded uniform draw of ``n`` of ``ids`` without replacement (``random.Random``)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"label: expected a number of samples from 1, got {n!r}")
    if n > len(ids):
        raise ConfigError(f"label: {n} samples asked for, but the run has {len(ids)} "
                          "samples with retrieved chunks; ask for at most that many")
    return random.Random(seed).sample(list(ids), n)


def sheet_rows(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The sheet's rows for one run row: one per retrieved chunk, rank 1 first."""
    chunks: list[Any] = row["chunks"] if isinstance(row.get("chunks"), list) else [
        {"id": i} for i in row.get("retrieved_context_ids") or []
    ]
    out = []
    for rank, chunk in enumerate(chunks, start=1):
        chunk = chunk if isinstance(chunk, dict) else {}
        text = chunk.get("text")
        out.append({
            "id": str(row["id"]), "rank": rank, "context_id": chunk.get("id"),
            "question": row.get("question"), "reference": row.get("reference"),
            "context": text, "text_cut": int(isinstance(text, str) and text.endswith(CUT)),
            "relevant": None,
        })
    return out


def write_sheet(paths: dict[str, Path], lines: list[dict[str, Any]]) -> None:
    """The sheet's two files (``paths["csv"]``, ``paths["jsonl"]``) from its ``lines``."""
    with open(paths["csv"], "w", encoding="utf-8-sig", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        for line in lines:
            writer.writerow(["" if line[c] is None else line[c] for c in COLUMNS])
    with open(paths["jsonl"], "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False).translate(_BREAKS) + "\n")


def label_sheet(run_dir: str | Path, n: int, seed: int, out: str | Path) -> dict[str, Path]:
    """Draw ``n`` samples of the finished run in ``run_dir`` with ``seed`` and write the
    labelling sheet into the folder ``out``: ``labels.csv``, ``labels.jsonl`` and
    ``draw.json`` (seed, drawn ids, the run and its rows' sha256). Refuses a folder that
    already holds a sheet (it may be filled in). Returns the three paths by kind."""
    folder = Path(out)
    paths = {"csv": folder / SHEET_CSV, "jsonl": folder / SHEET_JSONL, "draw": folder / DRAW}
    taken = [str(p) for p in paths.values() if p.exists()]
    if taken:
        raise ConfigError(f"label: {taken[0]} exists (a sheet may already be filled in); "
                          "name another folder, or move it away")
    rows = {str(r["id"]): r for r in run_rows(run_dir)}
    eligible = [k for k, r in rows.items() if sheet_rows(r)]
    drawn = draw(eligible, n, seed)
    chosen = set(drawn)
    lines = [s for k, r in rows.items() if k in chosen for s in sheet_rows(r)]
    folder.mkdir(parents=True, exist_ok=True)
    write_sheet(paths, lines)
    rows_file = Path(run_dir) / "samples.jsonl"
    record = {
        "seed": seed, "n": n, "population": len(eligible), "drawn": drawn,
        "run": str(Path(run_dir).resolve()),
        "samples_sha256": hashlib.sha256(rows_file.read_bytes()).hexdigest(),
        "chunks": len(lines), "texts_cut": sum(line["text_cut"] for line in lines),
    }
    paths["draw"].write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return paths


def read_draw(labels_path: str | Path) -> dict[str, Any] | None:
    """The ``draw.json`` beside a labels file, or None when there is none (or it is not a
    draw record)."""
    path = Path(labels_path).with_name(DRAW)
    try:
        record = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(record, dict) and isinstance(record.get("drawn"), list)
    return record if ok else None


def drawn_as_recorded(
    labelled: Sequence[str], record: dict[str, Any] | None
) -> tuple[bool, str | None]:
    """``(random_draw, note)`` for the labelled sample ids against the recorded draw."""
    if record is None:
        return False, NOT_DRAWN
    drawn = {str(i) for i in record["drawn"]}
    outside = [i for i in labelled if i not in drawn]
    if outside:
        return False, (f"{len(outside)} labelled sample(s) were not in the seeded draw "
                       f"(seed {record.get('seed')}): " + NOT_DRAWN.split(": ", 1)[1])
    if len(set(labelled)) < len(drawn):
        return False, (f"{len(set(labelled))} of the {len(drawn)} drawn samples are fully "
                       "labelled: the interval assumes the others are missing at random")
    return True, None
