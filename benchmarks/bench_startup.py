"""CLI start-up cost against the cost of importing MLflow (and Hydra), interleaved.

Each round runs, in this order, from one temporary working directory with
``MLFLOW_TRACKING_URI`` removed from the environment (so the store is the default
``sqlite:///mlflow.db`` there):

* (a) ``python -c "import mlflow"``
* (b) ``python -m harness metric=id_based`` (tracking on, to the existing sqlite store)
* (c) ``python -m harness metric=id_based tracking=none``
* (d) ``python -c "import hydra"``
* (e) ``python -c "import mlflow.tracking, mlflow.store.tracking.sqlalchemy_store"``: what
  the background logger imports before it can write to a sqlite store (a floor for (b))

One untimed warm-up run of (b) creates the store first. Each CLI run writes to its own
``hydra.run.dir`` under the temporary directory. The median wall time of each is reported,
and the paired ratio (b)/(a): the median over rounds of (b) divided by the (a) of the same
round (the figure the target is checked on: a busy machine slows both alike).
Usage: ``.venv/bin/python benchmarks/bench_startup.py [--small]`` (``--small``: 2 rounds).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common

ROUNDS_FULL, ROUNDS_SMALL = 5, 2
TARGET_B_OVER_A = 1.5
TARGET_C_S = 0.7

COMMANDS: dict[str, tuple[str, list[str]]] = {
    "a": ("python -c 'import mlflow'", ["-c", "import mlflow"]),
    "b": ("python -m harness metric=id_based (sqlite store exists)",
          ["-m", "harness", "metric=id_based"]),
    "c": ("python -m harness metric=id_based tracking=none",
          ["-m", "harness", "metric=id_based", "tracking=none"]),
    "d": ("python -c 'import hydra'", ["-c", "import hydra"]),
    "e": ("python -c 'import mlflow.tracking, <sqlalchemy store>'",
          ["-c", "import mlflow.tracking, mlflow.store.tracking.sqlalchemy_store"]),
}


def run_once(args: list[str], work: Path, tag: str) -> tuple[float, str]:
    """Run ``python *args`` from ``work``; return wall seconds and stdout."""
    if args[:2] == ["-m", "harness"]:
        args = [*args, f"hydra.run.dir={work / 'out' / tag}"]
    start = time.perf_counter()
    proc = subprocess.run([common.PYTHON, *args], cwd=work, env=common.child_env(),
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        command = " ".join(args)
        sys.exit(f"failed ({proc.returncode}): python {command}\n{proc.stdout}\n{proc.stderr}")
    return wall, proc.stdout


def main() -> None:
    """Warm up, time interleaved rounds, print and save."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--small", action="store_true", help=f"{ROUNDS_SMALL} rounds instead of {ROUNDS_FULL}"
    )
    args = parser.parse_args()
    rounds = ROUNDS_SMALL if args.small else ROUNDS_FULL

    times: dict[str, list[float]] = {k: [] for k in COMMANDS}
    with tempfile.TemporaryDirectory(prefix="bench_startup_") as tmp:
        work = Path(tmp)
        _, out = run_once(COMMANDS["b"][1], work, "warmup")
        store = work / "mlflow.db"
        assert store.is_file(), "the warm-up run did not create mlflow.db in the working directory"
        assert "mlflow run" in out, "the warm-up run did not log an MLflow run"
        for i in range(rounds):
            for key, (_, cmd) in COMMANDS.items():
                wall, out = run_once(cmd, work, f"{key}{i}")
                if key == "b":
                    assert "mlflow run" in out, "a tracked run did not log to MLflow"
                times[key].append(wall)
            print(f"round {i + 1}: " + ", ".join(f"({k}) {v[-1]:.2f} s" for k, v in times.items()))

    stats = {k: common.summarise(v) for k, v in times.items()}
    med = {k: s["median_s"] for k, s in stats.items()}
    c_over_a = med["c"] / med["a"]
    paired = sorted(b / a for b, a in zip(times["b"], times["a"], strict=True))
    b_over_a = paired[len(paired) // 2] if len(paired) % 2 else (
        paired[len(paired) // 2 - 1] + paired[len(paired) // 2]) / 2

    print()
    print(f"start-up, median of {rounds} interleaved rounds (wall seconds, whole process)")
    print(common.markdown_table(["", "command", "median s", "best s"], [
        [f"({k})", label, f"{stats[k]['median_s']:.2f}", f"{stats[k]['best_s']:.2f}"]
        for k, (label, _) in COMMANDS.items()
    ]))
    print()
    print(common.markdown_table(["ratio / figure", "value", "target", "met"], [
        ["(b) / (a), paired", f"{b_over_a:.2f}", f"<= {TARGET_B_OVER_A}",
         b_over_a <= TARGET_B_OVER_A],
        ["(b) / (a), of medians", f"{med['b'] / med['a']:.2f}", "", ""],
        ["(c) seconds", f"{med['c']:.2f}", f"<= {TARGET_C_S}", med["c"] <= TARGET_C_S],
        ["(c) / (a)", f"{c_over_a:.2f}", "", ""],
        ["(c) / (d)", f"{med['c'] / med['d']:.2f}", "", ""],
        ["(e) / (a)", f"{med['e'] / med['a']:.2f}", "", ""],
        ["(b) / (e)", f"{med['b'] / med['e']:.2f}", "", ""],
    ]))

    path = common.write_results("bench_startup", {
        "benchmark": "bench_startup",
        "machine": common.machine(),
        "rounds": rounds,
        "statistic": "median of interleaved rounds",
        "commands": {k: label for k, (label, _) in COMMANDS.items()},
        "times": stats,
        "b_over_a": b_over_a,
        "b_over_a_per_round": [b / a for b, a in zip(times["b"], times["a"], strict=True)],
        "c_s": med["c"],
        "c_over_a": c_over_a,
        "c_over_d": med["c"] / med["d"],
        "e_over_a": med["e"] / med["a"],
        "b_over_e": med["b"] / med["e"],
        "targets": {"b_over_a_max": TARGET_B_OVER_A, "c_s_max": TARGET_C_S},
        "met": {"b_over_a": b_over_a <= TARGET_B_OVER_A, "c_s": med["c"] <= TARGET_C_S},
    })
    print(f"results: {path}")


if __name__ == "__main__":
    main()
