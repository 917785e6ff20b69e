"""Streaming a large id_based JSONL file through the CLI: throughput and peak memory.

Writes N records (``id``, 5 ``retrieved_context_ids``, 2 ``reference_context_ids``; ids
like ``d123456``; random.Random(0)) to a temporary file, then runs, in a subprocess from a
temporary working directory::

    python -m harness metric=id_based dataset=jsonl dataset.path=FILE tracking=none \\
        run.progress=false hydra.run.dir=TMP/out

It measures the child's wall time and peak RSS (``os.wait4``'s ``ru_maxrss``), reads
``samples_per_s`` from ``summary.json`` and checks ``n_samples`` and the line count of
``samples.jsonl``. Repeated ``--repeats`` times; the median is reported (peak RSS: the
maximum). Usage: ``.venv/bin/python benchmarks/bench_stream.py [--small]``.
"""

from __future__ import annotations

import argparse
import json
import os
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

N_FULL, N_SMALL = 1_000_000, 100_000
RSS_LIMIT_MB = 1024


def generated(work: Path, n: int) -> tuple[Path, float, float]:
    """``work/ids.jsonl`` with ``n`` records from ``write_dataset``, its size (MiB) and the
    seconds it took (printed too)."""
    data = work / "ids.jsonl"
    t0 = time.perf_counter()
    write_dataset(data, n)
    gen_s = time.perf_counter() - t0
    size_mb = data.stat().st_size / 2**20
    print(f"wrote {n:,} records ({size_mb:.0f} MiB) in {gen_s:.1f} s")
    return data, size_mb, gen_s


def write_dataset(path: Path, n: int, seed: int = 0) -> None:
    """``n`` id_based records; each retrieved id is a reference id with probability 0.4."""
    rng = random.Random(seed)
    pool = 1_000_000
    with open(path, "w", encoding="utf-8") as f:
        lines = []
        for i in range(n):
            refs = [f"d{rng.randrange(pool):06d}" for _ in range(2)]
            retrieved = [rng.choice(refs) if rng.random() < 0.4 else f"d{rng.randrange(pool):06d}"
                         for _ in range(5)]
            lines.append(json.dumps(
                {"id": f"q{i}", "retrieved_context_ids": retrieved, "reference_context_ids": refs}
            ))
            if len(lines) >= 10_000:
                f.write("\n".join(lines) + "\n")
                lines = []
        if lines:
            f.write("\n".join(lines) + "\n")


def count_lines(path: Path) -> int:
    """Number of newline characters in ``path``."""
    count = 0
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            count += block.count(b"\n")
    return count


def run_cli(data: Path, work: Path, tag: str) -> dict[str, Any]:
    """Run the CLI once; return wall time, peak RSS and what ``summary.json`` says."""
    out = work / f"out_{tag}"
    cmd = [
        common.PYTHON, "-m", "harness", "metric=id_based", "dataset=jsonl",
        f"dataset.path={data}", "tracking=none", "run.progress=false", f"hydra.run.dir={out}",
    ]
    log = work / f"log_{tag}.txt"
    with open(log, "wb") as sink:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=work, env=common.child_env(), stdout=sink, stderr=sink)
        # wait4 gives this child's own rusage (its peak RSS), not all children's.
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"CLI failed ({proc.returncode}):\n{log.read_text(errors='replace')}")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    rows = count_lines(out / "samples.jsonl")
    shutil.rmtree(out)
    return {
        "wall_s": wall,
        "peak_rss_mb": usage.ru_maxrss / 1024,  # Linux reports KiB; this is MiB
        "user_s": usage.ru_utime,
        "sys_s": usage.ru_stime,
        "samples_per_s": summary["samples_per_s"],
        "duration_s": summary["duration_s"],
        "n_samples": summary["n_samples"],
        "n_scored": summary["n_scored"],
        "mean": summary["mean"],
        "samples_jsonl_lines": rows,
    }


def main() -> None:
    """Generate, run, check, print and save."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--small", action="store_true", help=f"{N_SMALL:,} samples instead of {N_FULL:,}"
    )
    parser.add_argument("--repeats", type=int, default=3, help="CLI runs (median reported)")
    args = parser.parse_args()
    n = N_SMALL if args.small else N_FULL

    with tempfile.TemporaryDirectory(prefix="bench_stream_") as tmp:
        work = Path(tmp)
        data, size_mb, gen_s = generated(work, n)

        runs = []
        for i in range(args.repeats):
            r = run_cli(data, work, str(i))
            print(f"run {i + 1}: wall {r['wall_s']:.2f} s, peak RSS {r['peak_rss_mb']:.0f} MB, "
                  f"{r['samples_per_s']:,.0f} samples/s")
            assert r["n_samples"] == n, f"summary.json n_samples={r['n_samples']}, expected {n}"
            lines = r["samples_jsonl_lines"]
            assert lines == n, f"samples.jsonl has {lines} lines, expected {n}"
            runs.append(r)

    wall = statistics.median(r["wall_s"] for r in runs)
    rate = statistics.median(r["samples_per_s"] for r in runs)
    rss = max(r["peak_rss_mb"] for r in runs)
    ragas_rate = 1000 / common.RAGAS_ID_BASED_S_PER_1000
    assert rss < RSS_LIMIT_MB, f"peak RSS {rss:.0f} MB is over {RSS_LIMIT_MB} MB"

    print()
    print(f"id_based via the CLI, {n:,} samples ({size_mb:.0f} MiB JSONL), tracking=none; "
          f"median of {args.repeats} runs (peak RSS: max)")
    print(common.markdown_table(["measure", "value"], [
        ["wall time, whole process (s)", f"{wall:.2f}"],
        ["samples/s (summary.json, scoring loop)", f"{rate:,.0f}"],
        ["samples/s (wall, incl. start-up)", f"{n / wall:,.0f}"],
        ["peak RSS (MiB)", f"{rss:.0f} (limit {RSS_LIMIT_MB})"],
        ["n_samples / samples.jsonl lines",
         f"{runs[-1]['n_samples']:,} / {runs[-1]['samples_jsonl_lines']:,}"],
        ["ragas, quoted (not measured): samples/s", f"{ragas_rate:,.0f}"],
        ["ours / ragas (summary.json rate)", f"{rate / ragas_rate:.1f}x"],
    ]))

    path = common.write_results("bench_stream", {
        "benchmark": "bench_stream",
        "machine": common.machine(),
        "n_samples": n,
        "file_mib": size_mb,
        "generate_s": gen_s,
        "repeats": args.repeats,
        "statistic": "median of runs; peak RSS is the max",
        "wall_s": wall,
        "samples_per_s": rate,
        "samples_per_s_wall": n / wall,
        "peak_rss_mb": rss,
        "rss_limit_mb": RSS_LIMIT_MB,
        "runs": runs,
        "ratio_vs_ragas": rate / ragas_rate,
        "ragas_quoted": {"s_per_1000": common.RAGAS_ID_BASED_S_PER_1000,
                         "samples_per_s": ragas_rate, "measured": False},
    })
    print(f"results: {path}")


if __name__ == "__main__":
    main()
