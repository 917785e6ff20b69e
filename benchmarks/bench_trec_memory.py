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

and reads the child's peak RSS (``os.wait4``'s ``ru_maxrss``) and its wall time. Two more
subprocesses measure the dataset alone: one iterates ``samples()`` under ``tracemalloc``
(peak traced bytes; ``--no-trace`` skips it), one times the same iteration without it (the
read time, and that child's peak RSS). It reports
each peak, the TREC/JSONL ratio at each N, the slope in bytes per added query (least
squares over the Ns, and between the two largest), and the read and CLI times as ratios to
the JSONL lane's in the same run (seconds are noisy on a loaded machine; ratios less so).
Usage: ``.venv/bin/python benchmarks/bench_trec_memory.py [--full] [--ns 50000,200000]
[--repeats 1] [--lanes jsonl,trec_sorted] [--no-trace]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
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
_READ = """
import json, sys, time
from harness.datasets.{module} import {cls}
data = {cls}(*json.loads(sys.argv[1]))
start = time.perf_counter()
n = sum(1 for _ in data.samples())
print(json.dumps({{"n": n, "seconds": time.perf_counter() - start}}))
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
        for r in range(DOCS):  # streamed: see _child on why this process stays small
            f.seek(0)
            rr.writelines(line for k, line in enumerate(f) if k % DOCS == r)
    return paths


def _child(cmd: list[str], work: Path) -> tuple[str, float, float]:
    """Run ``cmd``; its stdout, its peak RSS in MiB and its wall time.

    On Linux a child's ``ru_maxrss`` starts at this process's own peak when it forked (the
    copied address space's high-water mark survives ``exec``), so this process never holds
    a file's lines: the peaks measured before it streamed them were its own (190 MiB at
    200k queries, 900 MiB at 1M) on every lane."""
    start = time.perf_counter()
    with open(work / "log.txt", "wb") as log:
        proc = subprocess.Popen(cmd, cwd=work, env=common.child_env(), stdout=subprocess.PIPE,
                                stderr=log)
        out = proc.stdout.read().decode() if proc.stdout else ""
        _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{(work / 'log.txt').read_text(errors='replace')}")
    return out, usage.ru_maxrss / 1024, time.perf_counter() - start


def cli_peak(lane: str, paths: dict[str, Path], work: Path, n: int) -> tuple[float, float]:
    """Peak RSS (MiB) and wall time of one CLI run of ``lane``; checks that every query
    was scored."""
    out = work / f"out_{lane}_{n}"
    data = (["dataset=jsonl", f"dataset.path={paths['jsonl']}"] if lane == "jsonl" else
            ["dataset=trec", f"dataset.run={paths['run' if lane == 'trec_sorted' else 'rr']}",
             f"dataset.qrels={paths['qrels']}"])
    cmd = [common.PYTHON, "-m", "harness", "metric=id_ranked", *data, "tracking=none",
           "run.progress=false", f"hydra.run.dir={out}"]
    _, rss, seconds = _child(cmd, work)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["n_samples"] == n, (lane, summary["n_samples"])
    for f in out.rglob("*"):
        if f.is_file():
            f.unlink()
    return rss, seconds


def dataset_alone(lane: str, paths: dict[str, Path], work: Path, n: int, code: str,
                  key: str) -> tuple[float, float]:
    """``key`` of the child running ``code`` (``_ALONE``, ``_READ``) on the lane's files,
    and the child's peak RSS in MiB."""
    if lane == "jsonl":
        module, cls, args = "files", "JsonlDataset", [str(paths["jsonl"])]
    else:
        module, cls = "trec", "TrecDataset"
        args = [str(paths["run" if lane == "trec_sorted" else "rr"]), str(paths["qrels"])]
    out, rss, _ = _child([common.PYTHON, "-c", code.format(module=module, cls=cls),
                          json.dumps(args)], work)
    got = json.loads(out)
    assert got["n"] == n, (lane, got)
    return float(got[key]), rss


def slope(ns: list[int], mib: list[float]) -> float:
    """Least-squares bytes per added query."""
    mx, my = sum(ns) / len(ns), sum(mib) / len(mib)
    num = sum((x - mx) * (y - my) for x, y in zip(ns, mib, strict=True))
    return num / sum((x - mx) ** 2 for x in ns) * 2**20


def _measure(ns: list[int], repeats: int, lanes: tuple[str, ...], trace: bool
             ) -> dict[str, dict[str, list[float]]]:
    """Every lane at every N: CLI peak (MiB) and time, ``samples()`` peak (MiB; traced, NaN
    without ``trace``; and RSS) and time."""
    got: dict[str, dict[str, list[float]]] = {
        what: {lane: [] for lane in lanes}
        for what in ("cli", "cli_s", "alone", "read_s", "read_rss")}
    with tempfile.TemporaryDirectory(prefix="bench_trec_memory_") as tmp:
        work = Path(tmp)
        for n in ns:
            paths = write_files(work, n)
            for lane in lanes:
                runs = [cli_peak(lane, paths, work, n) for _ in range(repeats)]
                got["cli"][lane].append(max(r[0] for r in runs))
                got["cli_s"][lane].append(min(r[1] for r in runs))
                got["alone"][lane].append(
                    dataset_alone(lane, paths, work, n, _ALONE, "peak")[0] / 2**20 if trace
                    else float("nan"))
                seconds, rss = dataset_alone(lane, paths, work, n, _READ, "seconds")
                got["read_s"][lane].append(seconds)
                got["read_rss"][lane].append(rss)
                print(f"{n:>9,} {lane:<14} CLI peak RSS {got['cli'][lane][-1]:7.1f} MiB "
                      f"({got['cli_s'][lane][-1]:.1f} s), samples() alone "
                      f"{got['alone'][lane][-1]:7.1f} MiB traced, "
                      f"{got['read_rss'][lane][-1]:7.1f} MiB RSS ({got['read_s'][lane][-1]:.1f} s)",
                      flush=True)
            for p in paths.values():
                p.unlink()
    return got


def main() -> None:
    """Generate, measure, print and save."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="add 1,000,000 queries")
    parser.add_argument("--ns", help="comma-separated query counts (instead of the default)")
    parser.add_argument("--repeats", type=int, default=1, help="runs per lane (max reported)")
    parser.add_argument("--no-trace", action="store_true",
                        help="skip the samples() lane under tracemalloc (slow at 1M on TREC)")
    parser.add_argument("--lanes", default=",".join(LANES),
                        help=f"comma-separated lanes, jsonl first (of {', '.join(LANES)})")
    args = parser.parse_args()
    lanes = tuple(args.lanes.split(","))
    if lanes[0] != "jsonl" or not set(lanes) <= set(LANES):
        parser.error(f"--lanes: jsonl first, then any of {', '.join(LANES[1:])}")
    ns = ([int(x) for x in args.ns.split(",")] if args.ns else
          [50_000, 200_000] + ([1_000_000] if args.full else []))
    got = _measure(ns, args.repeats, lanes, not args.no_trace)
    cli, alone, read_rss = got["cli"], got["alone"], got["read_rss"]
    rows = []
    for lane in lanes:
        ratios = [f"{t / j:.2f}x" for t, j in zip(cli[lane], cli["jsonl"], strict=True)]
        rows.append([lane, *(f"{m:.0f}" for m in cli[lane]), " / ".join(ratios),
                     f"{slope(ns, cli[lane]):,.0f}", f"{slope(ns[-2:], cli[lane][-2:]):,.0f}",
                     f"{slope(ns, alone[lane]):,.0f}", f"{slope(ns, read_rss[lane]):,.0f}",
                     f"{slope(ns[-2:], read_rss[lane][-2:]):,.0f}"])
    heads = ["path", *(f"peak RSS MiB, {n // 1000}k" for n in ns), "vs JSONL",
             "CLI bytes/query", f"CLI bytes/query {ns[-2] // 1000}k-{ns[-1] // 1000}k",
             "samples() alone bytes/query", "samples() RSS bytes/query",
             f"samples() RSS bytes/query {ns[-2] // 1000}k-{ns[-1] // 1000}k"]
    print(common.markdown_table(heads, rows))
    times = [[lane, *(f"{r / j:.2f}x / {c / k:.2f}x" for r, j, c, k in zip(
        got["read_s"][lane], got["read_s"]["jsonl"], got["cli_s"][lane], got["cli_s"]["jsonl"],
        strict=True))] for lane in lanes]
    print(common.markdown_table(["path", *(f"read / CLI time vs JSONL, {n // 1000}k"
                                           for n in ns)], times))
    result: dict[str, Any] = {
        "benchmark": "bench_trec_memory", "machine": common.machine(), "ns": ns,
        "docs_per_query": DOCS, "judged_per_query": JUDGED, "repeats": args.repeats,
        "statistic": "peak RSS (ru_maxrss) of the CLI child, max of repeats; tracemalloc peak "
                     "of samples() alone; slope: least squares over N, and between the two "
                     "largest N; times: one run each (CLI: min of repeats), as ratios",
        "cli_peak_mib": cli, "alone_peak_mib": alone,
        "cli_seconds": got["cli_s"], "read_seconds": got["read_s"],
        "cli_bytes_per_query": {lane: slope(ns, cli[lane]) for lane in lanes},
        "cli_bytes_per_query_last": {lane: slope(ns[-2:], cli[lane][-2:]) for lane in lanes},
        "alone_bytes_per_query": {lane: slope(ns, alone[lane]) for lane in lanes},
        "read_peak_rss_mib": read_rss,
        "read_rss_bytes_per_query": {lane: slope(ns, read_rss[lane]) for lane in lanes},
    }
    print(f"results: {common.write_results('bench_trec_memory', result)}")


if __name__ == "__main__":
    main()
