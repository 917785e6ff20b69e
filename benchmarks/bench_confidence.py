"""PPI++ intervals on TREC DL19's human grades with noisy synthetic judges (issue 33).

Each draw builds a finished run of 600 samples: a TREC DL19 query with 5 of its NIST-judged
passages in random order (relevant: grade >= 2, the TREC convention; the subset's negatives
are the grade-1 "related" passages). A synthetic judge gives each chunk a verdict, the
run's score is average precision over them (``harness.metrics.ranking``), and the run is
written as ``samples.jsonl``. Then the issue's path end to end: ``label_sheet`` draws N
samples with a seed and writes the sheet, the sheet is filled in with the NIST grades (a
``grade`` column), ``read_labels(min_grade=2)`` reads it back, ``match`` ties it to the
run, and ``variant_confidence`` gives the block. Reported over the draws: how often each
interval covers the run's true mean (its 600 samples scored with the NIST grades), median
widths, the judge's bias and kappa on the labelled chunks.

Judges: ``lenient`` (says relevant for 40 % of grade-1, 85 % of grade-2, 95 % of grade-3
passages: it takes "related" for relevant, as small LLM judges do), ``noisy`` (the truth
with 20 % of verdicts flipped), ``useless`` (a coin toss).

    .venv/bin/python benchmarks/bench_confidence.py [--draws 200] [--data FOLDER]
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import REPO, machine, markdown_table, write_results  # noqa: E402

from harness.confidence.labels import read_labels  # noqa: E402
from harness.confidence.match import judged, match, run_sample  # noqa: E402
from harness.confidence.ppi import human_score, variant_confidence  # noqa: E402
from harness.confidence.sheet import (  # noqa: E402
    COLUMNS,
    drawn_as_recorded,
    label_sheet,
    read_draw,
)
from harness.metrics.ranking import average_precision  # noqa: E402

SHARED = REPO.parent / "shared" / "data" / "trec_dl19_passage_subset"
TINY = REPO / "tests" / "data" / "trec_dl19_tiny"
K, SAMPLES, MIN_GRADE = 5, 600, 2
JUDGES = {"lenient": {1: 0.40, 2: 0.85, 3: 0.95}, "noisy": None, "useless": {1: .5, 2: .5, 3: .5}}


def qrels(folder: Path) -> dict[str, list[tuple[str, int]]]:
    """query id -> [(passage id, grade)] of the judged passages."""
    out: dict[str, list[tuple[str, int]]] = {}
    with open(folder / "qrels" / "test.tsv", encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            out.setdefault(row["query-id"], []).append((row["corpus-id"], int(row["score"])))
    return {q: v for q, v in out.items() if len(v) >= K}


def says(rng: random.Random, judge: str, grade: int) -> int:
    if judge == "noisy":
        return int((grade >= MIN_GRADE) != (rng.random() < 0.2))
    return int(rng.random() < JUDGES[judge][grade])


def write_run(folder: Path, pool: dict[str, list[tuple[str, int]]], judge: str,
              rng: random.Random) -> tuple[dict[str, list[int]], float]:
    """A finished run's samples.jsonl; returns the grades per sample and the true mean."""
    folder.mkdir()
    queries, grades, rows = sorted(pool), {}, []
    for i in range(SAMPLES):
        chosen = rng.sample(pool[queries[i % len(queries)]], K)
        verdicts = [says(rng, judge, g) for _, g in chosen]
        grades[f"s{i}"] = [g for _, g in chosen]
        rows.append({"id": f"s{i}", "score": average_precision(verdicts, 0.0),
                     "verdicts": verdicts, "question": f"query {queries[i % len(queries)]}",
                     "chunks": [{"id": d, "verdict": v} for (d, _), v in
                                zip(chosen, verdicts, strict=True)]})
    (folder / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    truth = statistics.fmean(average_precision([int(g >= MIN_GRADE) for g in v], 0.0)
                             for v in grades.values())
    return grades, truth


def one_draw(tmp: Path, pool, judge: str, n: int, seed: int) -> dict:
    rng = random.Random(seed)
    grades, truth = write_run(tmp / "run", pool, judge, rng)
    sheet = label_sheet(tmp / "run", n, seed, tmp / "sheet")["csv"]
    with open(sheet, encoding="utf-8-sig", newline="") as f:
        table = list(csv.DictReader(f))
    with open(sheet, "w", encoding="utf-8", newline="") as f:  # the assessor's grades
        writer = csv.DictWriter(f, [*COLUMNS, "grade"])
        writer.writeheader()
        writer.writerows({**t, "grade": grades[t["id"]][int(t["rank"]) - 1]} for t in table)
    rows = [json.loads(line) for line in (tmp / "run" / "samples.jsonl").open()]
    matched = match(read_labels(sheet, min_grade=MIN_GRADE), [run_sample(r) for r in rows])
    flag, note = drawn_as_recorded(list(matched.verdicts), read_draw(sheet))
    block = variant_confidence([judged(r) for r in rows], matched, human_score(0.0),
                               random_draw=flag, note=note)
    block["truth"] = truth
    return block


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--labelled", type=int, nargs="+", default=[50, 150])
    parser.add_argument("--data", type=Path, default=SHARED if SHARED.exists() else TINY)
    args = parser.parse_args()
    pool = qrels(args.data)
    started, rows, results = time.perf_counter(), [], []
    for judge in JUDGES:
        for n in args.labelled:
            blocks = []
            for d in range(args.draws):
                with tempfile.TemporaryDirectory() as tmp:
                    blocks.append(one_draw(Path(tmp), pool, judge, n, 10_000 * n + d))

            def covers(key: str, bs: list[dict] = blocks) -> str:
                hit = sum(b[key][0] <= b["truth"] <= b[key][1] for b in bs)
                return f"{hit}/{len(bs)}"

            def width(key: str, bs: list[dict] = blocks) -> float:
                return statistics.median(b[key][1] - b[key][0] for b in bs)

            kappas = [b["judge_agreement"]["kappa"] for b in blocks]
            bias = statistics.fmean(b["judge_mean"] - b["truth"] for b in blocks)
            above = sum(b["judge_mean"] > b["ci"][1] for b in blocks)
            rows.append([judge, n, covers("ci"), covers("labels_only_ci"),
                         covers("judge_only_ci"), f"{width('ci'):.3f}",
                         f"{width('labels_only_ci'):.3f}",
                         f"{width('ci') / width('labels_only_ci'):.2f}", f"{bias:+.3f}",
                         f"{statistics.median(kappas):.2f}", f"{above}/{len(blocks)}"])
            results.append({"judge": judge, "labelled": n, "blocks": blocks})
    headers = ["judge", "labelled", "PPI++ covers", "labels-only covers", "judge-only covers",
               "PPI++ width", "labels-only width", "ratio", "judge bias", "kappa",
               "judge mean above PPI++"]
    print(f"data: {args.data} ({len(pool)} queries), {SAMPLES} samples x {K} chunks, "
          f"{args.draws} draws, {time.perf_counter() - started:.0f} s\n")
    print(markdown_table(headers, rows))
    write_results("confidence", {"machine": machine(), "data": str(args.data),
                                 "draws": args.draws, "table": [headers, *rows],
                                 "results": results})


if __name__ == "__main__":
    main()
