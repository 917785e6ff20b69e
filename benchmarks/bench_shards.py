"""One evaluation of a large id_ranked JSONL file: one process vs ``run.shards`` workers.

Writes N records with ``bench_stream``'s generator (``id``, 5 ``retrieved_context_ids``, 2
``reference_context_ids``; random.Random(0)) to a temporary file, then runs, in a
subprocess from a temporary working directory, for each shard count S (1 = one process)::

    python -m harness metric=id_ranked dataset=jsonl dataset.path=FILE tracking=none \\
        run.progress=false run.report=false hydra.run.dir=TMP/out [run.shards=S]

The variants are interleaved for ``--rounds`` rounds, the order rotated each round; the
median is reported. Per run: whole-process wall time, samples/s over that wall time,
``summary.json``'s ``samples_per_s`` (the scoring, for sharded runs from planning to the
merged rows), and the CPU seconds of the whole process tree (``RUSAGE_CHILDREN``). Every
sharded run must give the same ``samples.jsonl`` bytes (sha256) and the same summary
numbers as the one-process run. Usage:
``.venv/bin/python benchmarks/bench_shards.py [--small | --n 10000000] [--shards 2,4]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import common
from bench_stream import generated

N_FULL, N_SMALL = 1_000_000, 100_000
#: Summary keys that say how long or where: the rest must be equal across variants.
TIMES = {"duration_s", "samples_per_s", "output_dir", "timing", "config"}


def sha256(path: Path) -> str:
    """The sha256 of a file."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def cpu_children() -> float:
    """CPU seconds (user + system) of every waited-for descendant so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_cli(data: Path, work: Path, shards: int, tag: str) -> dict[str, Any]:
    """Run the CLI once; wall time, CPU, what ``summary.json`` says, the rows' hash."""
    out = work / f"out_{tag}"
    cmd = [common.PYTHON, "-m", "harness", "metric=id_ranked", "dataset=jsonl",
           f"dataset.path={data}", "tracking=none", "run.progress=false", "run.report=false",
           f"hydra.run.dir={out}", f"run.shards={shards}"]
    log = work / f"log_{tag}.txt"
    cpu = cpu_children()
    with open(log, "wb") as sink:
        start = time.perf_counter()
        code = subprocess.run(cmd, cwd=work, env=common.child_env(), stdout=sink,
                              stderr=sink, check=False).returncode
        wall = time.perf_counter() - start
    if code != 0:
        sys.exit(f"CLI failed ({code}):\n{log.read_text(errors='replace')}")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    rows = sha256(out / "samples.jsonl")
    shutil.rmtree(out)
    return {
        "shards": shards,
        "wall_s": wall,
        "cpu_s": cpu_children() - cpu,
        "samples_per_s_wall": summary["n_samples"] / wall,
        "samples_per_s": summary["samples_per_s"],
        "duration_s": summary["duration_s"],
        "rows_sha256": rows,
        "numbers": {k: v for k, v in summary.items() if k not in TIMES},
    }


def main() -> None:
    """Generate, run, check, print and save."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help=f"{N_SMALL:,} samples")
    parser.add_argument("--n", type=int, default=None, help=f"samples (default {N_FULL:,})")
    parser.add_argument("--shards", default="2", help="shard counts to compare with one process")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds (median)")
    args = parser.parse_args()
    n = args.n or (N_SMALL if args.small else N_FULL)
    variants = [1, *(int(s) for s in args.shards.split(",") if int(s) > 1)]

    with tempfile.TemporaryDirectory(prefix="bench_shards_") as tmp:
        work = Path(tmp)
        data, size_mb, gen_s = generated(work, n)
        runs: dict[int, list[dict[str, Any]]] = {s: [] for s in variants}
        for r in range(args.rounds):
            order = variants[r % len(variants):] + variants[: r % len(variants)]
            for shards in order:
                result = run_cli(data, work, shards, f"{r}_{shards}")
                runs[shards].append(result)
                print(f"round {r + 1}, shards={shards}: wall {result['wall_s']:.2f} s, "
                      f"{result['samples_per_s_wall']:,.0f} samples/s, CPU "
                      f"{result['cpu_s']:.1f} s")

    base = runs[1][0]
    for shards, results in runs.items():
        for result in results:
            assert result["rows_sha256"] == base["rows_sha256"], f"rows differ (shards={shards})"
            assert result["numbers"] == base["numbers"], f"numbers differ (shards={shards})"
    assert base["numbers"]["n_samples"] == n

    med = {s: {k: statistics.median(r[k] for r in rs)
               for k in ("wall_s", "cpu_s", "samples_per_s_wall", "samples_per_s")}
           for s, rs in runs.items()}
    one = med[1]["wall_s"]
    print()
    print(f"id_ranked via the CLI, {n:,} samples ({size_mb:.0f} MiB JSONL), tracking=none, "
          f"report off; median of {args.rounds} interleaved rounds; "
          f"{common.machine()['cpus']} CPUs")
    print(common.markdown_table(
        ["variant", "wall s", "samples/s (wall)", "samples/s (summary)", "CPU s", "speed-up"],
        [[("one process" if s == 1 else f"run.shards={s}"), f"{m['wall_s']:.2f}",
          f"{m['samples_per_s_wall']:,.0f}", f"{m['samples_per_s']:,.0f}", f"{m['cpu_s']:.1f}",
          f"{one / m['wall_s']:.2f}×"] for s, m in med.items()],
    ))
    print("rows (sha256) and summary numbers: identical in every run")

    path = common.write_results("bench_shards", {
        "benchmark": "bench_shards",
        "machine": common.machine(),
        "n_samples": n,
        "file_mib": size_mb,
        "generate_s": gen_s,
        "rounds": args.rounds,
        "statistic": "median of interleaved rounds",
        "medians": {str(s): m for s, m in med.items()},
        "speedup": {str(s): one / m["wall_s"] for s, m in med.items()},
        "runs": {str(s): [{k: v for k, v in r.items() if k != "numbers"} for r in rs]
                 for s, rs in runs.items()},
        "numbers": base["numbers"],
    })
    print(f"results: {path}")


if __name__ == "__main__":
    main()
