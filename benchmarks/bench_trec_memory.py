"""Peak memory of ``dataset=trec`` against the JSONL path, and its growth per query.

For each N (50,000 and 200,000 queries; ``--full`` adds 1,000,000) it writes, from
``random.Random(0)``, the same data three ways: a TREC run (10 documents a query, scores
with ties) sorted by query, the same run with its lines dealt round-robin (every query in
10 blocks: the indexed path), TREC qrels (3 judgments a query, grades 0-3) and the JSONL
file of the same samples (``id``, the 10 ids in trec_eval's order, the ids graded >= 1).
Then, each in its own subprocess from a temporary directory, one after the other::

    python -m harness metric=id_ranked dataset=trec dataset.run=RUN dataset.qrels=QRELS \\
        tracking=none run.progress=false hydra.run.dir=TMP/out
    python -m harness metric=id_ranked dataset=jsonl dataset.path=FILE ...

and reads the child's peak RSS (``os.wait4``'s ``ru_maxrss``). A second lane measures the
dataset alone: a subprocess iterates ``samples()`` under ``tracemalloc`` (peak traced
bytes). It reports each peak, the TREC/JSONL ratio at each N (measured in the same run),
and the slope in bytes per added query (least squares over the Ns). Usage:
``.venv/bin/python benchmarks/bench_trec_memory.py [--full] [--repeats 1]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import common

DOCS, JUDGED = 10, 3
LANES = ("jsonl", "trec_sorted", "trec_unsorted")

_ALONE = """
import json, sys, tracemalloc
tracemalloc.start()
from harness.datasets.{module} import {cls}
data = {cls}(*json.loads(sys.argv[1]))
n = sum(1 for _ in data.samples())
print(json.dumps({{"n": n, "peak": tracemalloc.get_traced_memory()[1]}}))
"""


def write_files(work: Path, n: int) -> dict[str, Path]:
    """The run (sorted and round-robin), the qrels and the JSONL of ``n`` queries."""
    rng = random.Random(0)
    paths = {k: work / f"{k}_{n}.txt" for k in ("run", "rr", "qrels")}
    paths["jsonl"] = work / f"ids_{n}.jsonl"
    with (open(paths["run"], "w") as run, open(paths["qrels"], "w") as qrels,
          open(paths["jsonl"], "w") as jsonl):
        for i in range(n):
            docs = rng.sample(range(1_000_000), DOCS)
            scores = [rng.choice((1.0, 2.5, 3.0, 7.25, 9.5)) for _ in docs]
            ranked = sorted(zip(scores, (f"d{d:06d}" for d in docs), strict=True),
                            key=lambda p: (p[0], p[1]), reverse=True)
            judged = {ranked[j][1]: rng.randint(0, 3) for j in rng.sample(range(DOCS), 2)}
            judged.setdefault(f"d{rng.randrange(1_000_000):06d}x", rng.randint(1, 3))
            run.writelines(f"q{i} Q0 {d} {r} {s:g} bench\n"
                           for r, (s, d) in enumerate(ranked, 1))
            qrels.writelines(f"q{i} 0 {d} {g}\n" for d, g in judged.items())
            jsonl.write(json.dumps({
                "id": f"q{i}", "retrieved_context_ids": [d for _, d in ranked],
                "reference_context_ids": [d for d, g in judged.items() if g >= 1],
            }) + "\n")
    with open(paths["run"]) as f, open(paths["rr"], "w") as rr:  # rank r of every query
        lines = f.readlines()
        rr.writelines(lines[i * DOCS + r] for r in range(DOCS) for i in range(n))
    return paths


def _child(cmd: list[str], work: Path) -> tuple[str, float]:
    """Run ``cmd``; its stdout and its peak RSS in MiB."""
    with open(work / "log.txt", "wb") as log:
        proc = subprocess.Popen(cmd, cwd=work, env=common.child_env(), stdout=subprocess.PIPE,
                                stderr=log)
        out = proc.stdout.read().decode() if proc.stdout else ""
        _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{(work / 'log.txt').read_text(errors='replace')}")
    return out, usage.ru_maxrss / 1024


def cli_peak(lane: str, paths: dict[str, Path], work: Path, n: int) -> float:
    """Peak RSS (MiB) of one CLI run of ``lane``; checks that every query was scored."""
    out = work / f"out_{lane}_{n}"
    data = (["dataset=jsonl", f"dataset.path={paths['jsonl']}"] if lane == "jsonl" else
            ["dataset=trec", f"dataset.run={paths['run' if lane == 'trec_sorted' else 'rr']}",
             f"dataset.qrels={paths['qrels']}"])
    cmd = [common.PYTHON, "-m", "harness", "metric=id_ranked", *data, "tracking=none",
           "run.progress=false", f"hydra.run.dir={out}"]
    _, rss = _child(cmd, work)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["n_samples"] == n, (lane, summary["n_samples"])
    for f in out.rglob("*"):
        if f.is_file():
            f.unlink()
    return rss


def dataset_peak(lane: str, paths: dict[str, Path], work: Path, n: int) -> float:
    """Peak traced MiB of iterating the dataset's samples alone (``tracemalloc``)."""
    if lane == "jsonl":
        code, args = _ALONE.format(module="files", cls="JsonlDataset"), [str(paths["jsonl"])]
    else:
        code = _ALONE.format(module="trec", cls="TrecDataset")
        args = [str(paths["run" if lane == "trec_sorted" else "rr"]), str(paths["qrels"])]
    out, _ = _child([common.PYTHON, "-c", code, json.dumps(args)], work)
    got = json.loads(out)
    assert got["n"] == n, (lane, got)
    return float(got["peak"]) / 2**20


def slope(ns: list[int], mib: list[float]) -> float:
    """Least-squares bytes per added query."""
    mx, my = sum(ns) / len(ns), sum(mib) / len(mib)
    num = sum((x - mx) * (y - my) for x, y in zip(ns, mib, strict=True))
    return num / sum((x - mx) ** 2 for x in ns) * 2**20


def main() -> None:
    """Generate, measure, print and save."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="add 1,000,000 queries")
    parser.add_argument("--repeats", type=int, default=1, help="runs per lane (max reported)")
    args = parser.parse_args()
    ns = [50_000, 200_000] + ([1_000_000] if args.full else [])
    cli: dict[str, list[float]] = {lane: [] for lane in LANES}
    alone: dict[str, list[float]] = {lane: [] for lane in LANES}
    with tempfile.TemporaryDirectory(prefix="bench_trec_memory_") as tmp:
        work = Path(tmp)
        for n in ns:
            paths = write_files(work, n)
            for lane in LANES:
                cli[lane].append(max(cli_peak(lane, paths, work, n)
                                     for _ in range(args.repeats)))
                alone[lane].append(dataset_peak(lane, paths, work, n))
                print(f"{n:>9,} {lane:<14} CLI peak RSS {cli[lane][-1]:7.1f} MiB, "
                      f"samples() alone {alone[lane][-1]:7.1f} MiB", flush=True)
            for p in paths.values():
                p.unlink()
    rows = []
    for lane in LANES:
        ratios = [f"{t / j:.2f}x" for t, j in zip(cli[lane], cli["jsonl"], strict=True)]
        rows.append([lane, *(f"{m:.0f}" for m in cli[lane]), " / ".join(ratios),
                     f"{slope(ns, cli[lane]):,.0f}", f"{slope(ns, alone[lane]):,.0f}"])
    heads = ["path", *(f"peak RSS MiB, {n // 1000}k" for n in ns), "vs JSONL",
             "CLI bytes/query", "samples() alone bytes/query"]
    print(common.markdown_table(heads, rows))
    result: dict[str, Any] = {
        "benchmark": "bench_trec_memory", "machine": common.machine(), "ns": ns,
        "docs_per_query": DOCS, "judged_per_query": JUDGED, "repeats": args.repeats,
        "statistic": "peak RSS (ru_maxrss) of the CLI child, max of repeats; tracemalloc peak "
                     "of samples() alone; slope: least squares over N",
        "cli_peak_mib": cli, "alone_peak_mib": alone,
        "cli_bytes_per_query": {lane: slope(ns, cli[lane]) for lane in LANES},
        "alone_bytes_per_query": {lane: slope(ns, alone[lane]) for lane in LANES},
    }
    print(f"results: {common.write_results('bench_trec_memory', result)}")


if __name__ == "__main__":
    main()
