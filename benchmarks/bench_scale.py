"""The row path at scale: ``metric=id_based`` over N queries x 10 ids against a one-process
script doing the same work (issue 34: at most 1.5x).

Writes N records (``id``, 10 ``retrieved_context_ids``, 1-4 ``reference_context_ids``; ids
like ``d0123456``; each retrieved id a reference id with probability 0.3, so some repeat;
``random.Random(34)``) to a temporary file, then times, interleaved, each in a subprocess
from a temporary working directory, whole-process wall seconds:

- *ours*: ``python -m harness metric=id_based dataset=jsonl dataset.path=FILE
  tracking=none run.report=false run.progress=false hydra.run.dir=TMP/out``;
- *reference*: a script written into the temporary folder (``REFERENCE``): per line, orjson
  (msgspec where orjson is missing) parses, numpy computes what our run logs per query (the
  id_based set precision, and recall, nDCG, precision, hit rate and MAP at ``run.retrieval_ks``
  = 5 and 10, and MRR), and the row (``id``, ``score``, ``verdicts``, the metrics) is
  written by the same fast encoder, one ``write`` per 1,024 rows;
- *vectorised*, for context: the same, but the metrics of 1,024 queries at once over a
  (1024, 10) array: about the floor of a streaming Python script.

The first round checks every query's numbers in both scripts' rows against ours (score and
verdicts equal, metrics within 1e-12). After one untimed round of each (bytecode compiled,
the file in the page cache), the median of ``--rounds`` rounds (order rotated) of each is
reported, with the ratio ours / reference. Usage:
``.venv/bin/python benchmarks/bench_scale.py [--small] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import common

N_FULL, N_SMALL = 200_000, 20_000
DEPTH = 10
METRICS = [f"{m}_at_{k}" for k in (5, 10)
           for m in ("recall", "ndcg", "precision", "hit_rate", "map")] + ["mrr"]

REFERENCE = r'''
import sys
import numpy as np
try:
    import orjson
    loads, dumps = orjson.loads, orjson.dumps
except ImportError:
    import msgspec
    loads, dumps = msgspec.json.decode, msgspec.json.Encoder().encode

KS = (5, 10)
DISC = 1.0 / np.log2(np.arange(2, 2 + 64))          # 1 / log2(rank + 1)
IDCG = np.concatenate(([0.0], np.cumsum(DISC)))      # ideal DCG of m relevant documents
RANK = np.arange(1, 65, dtype=float)


def firsts(ret, refs):
    """1.0 at the first occurrence of each reference id, else 0.0."""
    seen, out = set(), []
    for r in ret:
        hit = r in refs and r not in seen
        if hit:
            seen.add(r)
        out.append(1.0 if hit else 0.0)
    return out


def base(rec):
    ret, refs = rec["retrieved_context_ids"], set(rec["reference_context_ids"])
    distinct = dict.fromkeys(ret)
    score = sum(1 for r in distinct if r in refs) / len(distinct)
    return ret, refs, {"id": rec["id"], "score": score, "verdicts": [1 if r in refs else 0
                                                                     for r in ret]}


def per_query(src, dst):
    with open(src, "rb") as f, open(dst, "wb") as out:
        buf = []
        for line in f:
            ret, refs, row = base(loads(line))
            first = np.array(firsts(ret, refs))
            n, total = len(first), len(refs)
            hits = np.cumsum(first)
            nz = np.flatnonzero(first)
            for k in KS:
                m = min(k, n)
                f_k, found = first[:m], float(hits[m - 1])
                row[f"recall_at_{k}"] = found / total
                row[f"ndcg_at_{k}"] = float(f_k @ DISC[:m]) / float(IDCG[min(k, total)])
                row[f"precision_at_{k}"] = found / k
                row[f"hit_rate_at_{k}"] = 1.0 if found else 0.0
                row[f"map_at_{k}"] = float((hits[:m] / RANK[:m] * f_k).sum()) / total
            row["mrr"] = 1.0 / (int(nz[0]) + 1) if len(nz) else 0.0
            buf.append(dumps(row))
            if len(buf) == 1024:
                out.write(b"\n".join(buf) + b"\n")
                buf = []
        if buf:
            out.write(b"\n".join(buf) + b"\n")


def vectorised(src, dst):
    with open(src, "rb") as f, open(dst, "wb") as out:
        while lines := f.readlines(1 << 17):
            rows, first, totals = [], [], []
            for line in lines:
                ret, refs, row = base(loads(line))
                rows.append(row)
                first.append(firsts(ret, refs) + [0.0] * (10 - len(ret)))
                totals.append(len(refs))
            first_a, total = np.array(first), np.array(totals, dtype=float)
            hits = np.cumsum(first_a, axis=1)
            cols = {}
            for k in KS:
                found = hits[:, k - 1]
                cols[f"recall_at_{k}"] = found / total
                cols[f"ndcg_at_{k}"] = (first_a[:, :k] @ DISC[:k]) / IDCG[np.minimum(k, totals)]
                cols[f"precision_at_{k}"] = found / k
                cols[f"hit_rate_at_{k}"] = (found > 0).astype(float)
                cols[f"map_at_{k}"] = (hits[:, :k] / RANK[:k] * first_a[:, :k]).sum(1) / total
            any_hit = first_a.any(1)
            cols["mrr"] = np.where(any_hit, 1.0 / (first_a.argmax(1) + 1), 0.0)
            lists = {name: col.tolist() for name, col in cols.items()}
            for i, row in enumerate(rows):
                for name, col in lists.items():
                    row[name] = col[i]
            out.write(b"\n".join(dumps(r) for r in rows) + b"\n")


(per_query if sys.argv[1] == "per_query" else vectorised)(sys.argv[2], sys.argv[3])
'''


def write_dataset(path: Path, n: int, seed: int = 34) -> None:
    """``n`` records of ``DEPTH`` retrieved ids and 1-4 reference ids."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        lines = []
        for i in range(n):
            refs = [f"d{rng.randrange(10_000_000):07d}" for _ in range(rng.randint(1, 4))]
            retrieved = [rng.choice(refs) if rng.random() < 0.3
                         else f"d{rng.randrange(10_000_000):07d}" for _ in range(DEPTH)]
            lines.append(json.dumps({"id": f"q{i}", "retrieved_context_ids": retrieved,
                                     "reference_context_ids": refs}))
            if len(lines) >= 10_000:
                f.write("\n".join(lines) + "\n")
                lines = []
        if lines:
            f.write("\n".join(lines) + "\n")


def timed(cmd: list[str], work: Path, tag: str, tree: str | None = None) -> float:
    """Wall seconds of ``cmd`` run from ``work`` (exits on failure with its log)."""
    log = work / f"log_{tag}.txt"
    env = common.child_env() | ({"TREE": tree} if tree else {})
    with open(log, "wb") as sink:
        start = time.perf_counter()
        code = subprocess.call(cmd, cwd=work, env=env, stdout=sink, stderr=sink)
        wall = time.perf_counter() - start
    if code != 0:
        sys.exit(f"{tag} failed ({code}):\n{log.read_text(errors='replace')}")
    return wall


#: ``python -m harness`` from the source tree on ``PYTHONPATH`` (``--tree``), not the
#: installed (editable) one.
_FROM_TREE = ("import os, runpy, sys; sys.meta_path = [f for f in sys.meta_path if 'editable' "
              "not in getattr(f, '__module__', '')]; sys.path.insert(0, os.environ['TREE']); "
              "sys.argv[0] = 'harness'; runpy.run_module('harness', run_name='__main__', "
              "alter_sys=True)")


def run_lane(lane: str, data: Path, work: Path, tag: str,
             tree: str | None = None) -> tuple[float, Path, Any]:
    """Run one lane once: its wall seconds, its rows file, and ours' summary (else None)."""
    if lane == "ours":
        out = work / f"out_{tag}"
        start = ["-c", _FROM_TREE] if tree else ["-m", "harness"]
        wall = timed([common.PYTHON, *start, "metric=id_based", "dataset=jsonl",
                      f"dataset.path={data}", "tracking=none", "run.report=false",
                      "run.progress=false", f"hydra.run.dir={out}"], work, tag, tree)
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        return wall, out / "samples.jsonl", summary
    rows = work / f"{tag}.jsonl"
    wall = timed([common.PYTHON, str(work / "reference.py"), lane, str(data), str(rows)],
                 work, tag)
    return wall, rows, None


def check(ours: Path, theirs: Path, n: int, lane: str) -> dict[str, int]:
    """Every row of ``theirs`` against ours: id, score, verdicts equal; metrics within 1e-12.
    Returns how many metric values were equal to the bit."""
    exact = close = count = 0
    with open(ours, encoding="utf-8") as a, open(theirs, encoding="utf-8") as b:
        for line_a, line_b in zip(a, b, strict=True):
            count += 1
            row_a, row_b = json.loads(line_a), json.loads(line_b)
            for key in ("id", "score", "verdicts"):
                assert row_a[key] == row_b[key], f"{lane}: {key} differs: {row_a} {row_b}"
            for name in METRICS:
                x, y = row_a[name], row_b[name]
                assert abs(x - y) <= 1e-12, f"{lane}: {name} {x} != {y} in {row_a['id']}"
                exact += x == y
                close += x != y
    assert count == n, f"{lane}: {count} rows, expected {n}"
    return {"values_equal": exact, "values_within_1e-12": close}


def main() -> None:
    """Generate, run interleaved, check, print and save."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true",
                        help=f"{N_SMALL:,} queries instead of {N_FULL:,}")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (median)")
    parser.add_argument("--tree", help="time the harness of this source tree (a folder "
                        "holding harness/, e.g. a git worktree of another commit)")
    args = parser.parse_args()
    n = N_SMALL if args.small else N_FULL
    lanes = ["ours", "per_query", "vectorised"]
    times: dict[str, list[float]] = {lane: [] for lane in lanes}
    loop_s: list[float] = []
    checks: dict[str, Any] = {}

    with tempfile.TemporaryDirectory(prefix="bench_scale_") as tmp:
        work = Path(tmp)
        data = work / "ids.jsonl"
        t0 = time.perf_counter()
        write_dataset(data, n)
        print(f"wrote {n:,} queries ({data.stat().st_size / 2**20:.0f} MiB) "
              f"in {time.perf_counter() - t0:.1f} s")
        (work / "reference.py").write_text(REFERENCE, encoding="utf-8")
        for lane in lanes:  # untimed: bytecode compiled, the data file in the page cache
            _, rows, _ = run_lane(lane, data, work, f"{lane}_warm", args.tree)
            shutil.rmtree(rows.parent) if lane == "ours" else rows.unlink()
        for r in range(args.rounds):
            order = lanes[r % 3:] + lanes[: r % 3]
            outputs: dict[str, Path] = {}
            for lane in order:
                wall, rows, summary = run_lane(lane, data, work, f"{lane}_{r}", args.tree)
                times[lane].append(wall)
                outputs[lane] = rows
                if summary is not None:
                    assert summary["n_samples"] == n, summary["n_samples"]
                    loop_s.append(summary["duration_s"])
            if r == 0:
                for lane in lanes[1:]:
                    checks[lane] = check(outputs["ours"], outputs[lane], n, lane)
            print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()))
            shutil.rmtree(outputs["ours"].parent)
            for lane in lanes[1:]:
                outputs[lane].unlink()

    med = {lane: statistics.median(t) for lane, t in times.items()}
    loop = statistics.median(loop_s)
    ratio = med["ours"] / med["per_query"]
    print()
    print(f"id_based, {n:,} queries x {DEPTH} ids, JSONL in, rows out; whole-process wall "
          f"seconds, median of {args.rounds} interleaved rounds")
    print(common.markdown_table(["lane", "median s", "best s", "us/query", "ours / lane"], [
        [lane, f"{med[lane]:.2f}", f"{min(times[lane]):.2f}", f"{med[lane] / n * 1e6:.1f}",
         f"{med['ours'] / med[lane]:.2f}x"] for lane in lanes
    ] + [["ours, scoring loop only (summary.json)", f"{loop:.2f}", f"{min(loop_s):.2f}",
          f"{loop / n * 1e6:.1f}", ""]]))
    print(f"ratio ours / reference (per_query): {ratio:.2f}x (goal <= 1.5x); "
          f"values checked: {checks}")
    path = common.write_results("bench_scale", {
        "benchmark": "bench_scale", "machine": common.machine(), "n_queries": n,
        "depth": DEPTH, "rounds": args.rounds, "tree": args.tree,
        "statistic": "median of interleaved rounds (order rotated) after one untimed round, "
                     "whole-process wall s",
        "times_s": {lane: common.summarise(t) for lane, t in times.items()},
        "ours_loop_s": common.summarise(loop_s), "ratio_vs_per_query": ratio,
        "ratio_vs_vectorised": med["ours"] / med["vectorised"], "checks": checks,
    })
    print(f"results: {path}")


if __name__ == "__main__":
    main()
