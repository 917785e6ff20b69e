"""A small labelled run for the confidence tests: a JSON-lines dataset whose
samples have K ranked chunks with ids, texts and reference ids (the truth), a fixture judge's
labels that err deterministically (lenient: some irrelevant chunks called relevant), and a
human labels file holding the truth for some samples."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

K = 4


def truth(n: int, seed: int = 7) -> dict[str, list[int]]:
    """Each sample's true verdicts, rank order (at least one relevant chunk in most)."""
    rng = random.Random(seed)
    return {f"q{i:03d}": [int(rng.random() < 0.4) for _ in range(K)] for i in range(n)}


def write_dataset(folder: Path, verdicts: dict[str, list[int]]) -> Path:
    """The JSON-lines dataset: chunk ``d<i>-<rank>`` relevant where the truth says so."""
    path = folder / "data.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for sid, vs in verdicts.items():
            ids = [f"d{sid}-{r}" for r in range(K)]
            f.write(json.dumps({
                "id": sid, "user_input": f"question {sid}?", "reference": f"answer {sid}",
                "retrieved_contexts": [f"text of chunk {c} " + "word " * 80 for c in ids],
                "retrieved_context_ids": ids,
                "reference_context_ids": [c for c, v in zip(ids, vs, strict=True) if v],
            }) + "\n")
    return path


def judge_verdicts(verdicts: dict[str, list[int]], lenient: float, seed: int = 11
                   ) -> dict[str, list[int]]:
    """What a lenient judge says: the truth, but each irrelevant chunk called relevant with
    probability ``lenient`` (seeded)."""
    rng = random.Random(seed)
    return {sid: [v or int(rng.random() < lenient) for v in vs] for sid, vs in verdicts.items()}


def write_judge(folder: Path, judged: dict[str, list[int]]) -> Path:
    """The fixture judge's labels file (``judge.labels``)."""
    path = folder / "judge.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for sid, vs in judged.items():
            for r, v in enumerate(vs):
                f.write(json.dumps({"id": sid, "context_id": f"d{sid}-{r}", "relevant": v}) + "\n")
    return path


def label_rows(verdicts: dict[str, list[int]], ids: list[str], by: str = "context_id"
               ) -> list[dict[str, Any]]:
    """Human label rows for the samples ``ids``: one per chunk, naming it ``by`` its id, its
    rank or its whole text."""
    rows = []
    for sid in ids:
        for r, v in enumerate(verdicts[sid]):
            cid = f"d{sid}-{r}"
            name: Any = {"context_id": cid, "rank": r + 1,
                         "context": f"text of chunk {cid} " + "word " * 80}[by]
            rows.append({"id": sid, by: name, "relevant": v})
    return rows


def write_labels(folder: Path, rows: list[dict[str, Any]], name: str = "labels.jsonl") -> Path:
    """A human labels file of ``rows`` (JSON lines)."""
    path = folder / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path
