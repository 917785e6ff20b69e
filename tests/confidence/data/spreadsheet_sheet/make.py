"""Remake this folder: a run whose ids and texts start with formula characters, the sheet
``harness label`` writes for it, the sheet filled in, and LibreOffice's save of it.

    python tests/confidence/data/spreadsheet_sheet/make.py  # needs soffice (Debian package
    # libreoffice-calc-nogui)
"""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from harness.confidence.sheet import label_sheet

HERE = Path(__file__).resolve().parent
IDS = ["=1+1", "+33 1 23 45", "-7", "@home", "\tq-tab", " =q-space", "'q-quote", "''q-two",
       "\uff1dq-full", "q-plain"]
TEXTS = ['=HYPERLINK("http://example.com/x","click me")', "=cmd|' /C calc'!A0", "+1 555 0100",
         "-minus first", "@SUM(A1:A9)", "\tTab first", "\rCR first", "  =spaced formula",
         "'apostrophe first", "''two apostrophes", "\uff1dfull-width equals", "plain text",
         "line one\n=line two", "\uff0bfull plus", "\uff0dfull minus", "\uff20full at"]


def rows() -> list[dict]:
    """Ten samples of two chunks: ids on some chunks (one starting with ``-``), none on the
    others (matched by text), questions and references with formula starts too."""
    out = []
    for i, sid in enumerate(IDS):
        chunks = [{"id": None if i % 2 else f"d{i}-{r}" if i % 3 else f"-d{i}-{r}",
                   "text": TEXTS[(2 * i + r) % len(TEXTS)]} for r in range(2)]
        out.append({"id": sid, "question": f"=Q{i}+1 what?" if i % 2 else f"question {i}?",
                    "reference": "@ref" if i % 3 == 0 else "ref", "score": 0.5,
                    "verdicts": [1, 0], "chunks": chunks})
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        run.mkdir()
        (run / "samples.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows()), "utf-8")
        shutil.copy(run / "samples.jsonl", HERE / "samples.jsonl")
        paths = label_sheet(run, len(IDS), 0, Path(tmp) / "sheet")
        shutil.copy(paths["csv"], HERE / "labels.csv")
        with open(paths["csv"], encoding="utf-8-sig", newline="") as f:
            table = list(csv.reader(f))
        for row in table[1:]:  # a labeller's verdicts: rank 1 relevant, rank 2 not
            row[-1] = "1" if row[1] == "1" else "0"
        text = io.StringIO(newline="")
        csv.writer(text).writerows(table)
        (HERE / "filled.csv").write_bytes(text.getvalue().encode("utf-8-sig"))
        subprocess.run(["soffice", "--headless", "--infilter=CSV:44,34,76,1", "--convert-to",
                        "csv:Text - txt - csv (StarCalc):44,34,76,1", "--outdir", tmp,
                        str(HERE / "filled.csv")], check=True, capture_output=True)
        shutil.copy(Path(tmp) / "filled.csv", HERE / "libreoffice.csv")


if __name__ == "__main__":
    main()
