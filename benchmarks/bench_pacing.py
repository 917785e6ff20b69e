"""Adaptive pacing against server shapes: the default vs the best fixed limit vs the physical
limit, each shape in one run.

For every shape the test judge runs in its own process (a fresh one per run, so its counters
are that run's): 200 samples x 5 chunks = 1000 pointwise judgements through the metric, as
the runner drives it, with ``max_concurrency`` 64. Per shape: the default
(``pacing=adaptive``, cold), ``pacing=fixed`` at every limit of a grid (the best one is
reported), and the physical limit: the judgements' mean service time over the slots a
client may use (``min(slots, 64)``), ignoring faults (for the token-rate shape, the bucket's
own limit). ``--real URL`` adds llama.cpp's llama-server of ``../shared/real_judge`` (its slot
count from ``/props``; 60 judgements, grid 1, 2, 4, best of two rounds), where no physical
limit is known.

    .venv/bin/python benchmarks/bench_pacing.py                 # ~12 min
    .venv/bin/python benchmarks/bench_pacing.py --only gauss50 slots8
    .venv/bin/python benchmarks/bench_pacing.py --real http://127.0.0.1:8080/v1
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_judge import make_samples, run_ours, start_server, stop_server
from common import REPO, forget_pacing, machine, markdown_table, write_results

sys.path.insert(0, str(REPO))

N_SAMPLES, CHUNKS, CEILING = 200, 5, 64
MEAN_MS = 200.0
#: name: (test judge knobs, slots, mean service ms, fixed limits searched, what it is)
SHAPES: dict[str, tuple[list[str], int | None, float, list[int], str]] = {
    "constant": ([], None, MEAN_MS, [16, 32, 48, 64], "200 ms"),
    "gauss25": (["--latency-sd-ms", "50"], None, MEAN_MS, [16, 32, 48, 64],
                "Gaussian, sd 25 %"),
    "gauss50": (["--latency-sd-ms", "100"], None, 200.6, [16, 32, 48, 64],
                "Gaussian, sd 50 %"),
    "lognormal": (["--latency-tail", "5"], None, MEAN_MS * math.exp((math.log(5) / 2.326) ** 2 / 2),
                  [16, 32, 48, 64], "log-normal, median 200 ms, p99 5x"),
    "bimodal": (["--latency-ms", "150", "--slow-ms", "750", "--slow-share", "0.2"], None,
                0.8 * 150 + 0.2 * 750, [16, 32, 48, 64], "150 ms, 20 % at 750 ms"),
    "slots8": (["--concurrency", "8"], 8, MEAN_MS, [8, 12, 16, 32, 64], "8 slots + queue"),
    "slots8_tail": (["--concurrency", "8", "--latency-tail", "3"], 8,
                    MEAN_MS * math.exp((math.log(3) / 2.326) ** 2 / 2), [8, 12, 16, 32, 64],
                    "8 slots + queue, log-normal p99 3x"),
    "random429": (["--fail-429", "0.05", "--retry-after", "1", "--quick-429"], None, MEAN_MS,
                  [16, 32, 48, 64], "5 % 429, Retry-After: 1"),
    "tokens": (["--latency-sd-ms", "50", "--token-rate", "50000", "--token-burst", "50000"],
               None, MEAN_MS, [8, 16, 32, 64], "50k tokens/s bucket, 429 + headers"),
}


def one(labels: Path, shape: str, pacing: str, concurrency: int,
        samples: list[Any]) -> dict[str, Any]:
    # a shape's own --latency-ms comes after the default one: the last one counts
    server, url = start_server(labels, MEAN_MS, None, *SHAPES[shape][0])
    try:
        forget_pacing()
        out = run_ours(url, samples, "llm_with_reference", concurrency, pacing,
                       require_all=False)
    finally:
        counts = stop_server(server)
    out["server"] = {k: counts.get(k) for k in ("requests", "ok", "status_429", "rate_limited",
                                                 "cancelled", "in_flight_max")}
    return out


def row(name: str, what: str, physical: float | None, best: dict[str, Any],
        ours: dict[str, Any], n: int) -> tuple[list[Any], dict[str, Any]]:
    s, server = ours["stats"], ours["server"]
    ratio = ours["wall_s"] / best["wall_s"]
    cells = [name, what, "-" if physical is None else f"{physical:.2f}",
             f"{best['wall_s']:.2f} (c={best['concurrency']})", f"{ours['wall_s']:.2f}",
             f"{ratio:.2f}x", "-" if physical is None else f"{ours['wall_s'] / physical:.2f}x",
             f"{server['requests']}/{n}", s["timeouts"], server["cancelled"], s["final_limit"]]
    return cells, {"physical_s": physical, "best_fixed": best, "default": ours,
                   "default_over_best_fixed": ratio,
                   "default_over_physical": None if physical is None else
                   ours["wall_s"] / physical}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", nargs="*", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--real", default=None, help="a llama-server's base URL (/v1)")
    parser.add_argument("--small", action="store_true", help="40 samples per shape")
    args = parser.parse_args()
    n_samples = 40 if args.small else N_SAMPLES
    samples, labels = make_samples(n_samples, CHUNKS)
    n = n_samples * CHUNKS
    rows, result = [], {"benchmark": "bench_pacing", "machine": machine(), "judgements": n,
                        "max_concurrency": CEILING, "statistic": "one run each", "shapes": {}}
    with tempfile.TemporaryDirectory() as tmp:
        labels_path = Path(tmp) / "labels.json"
        labels_path.write_text(json.dumps(labels))
        for name in args.only:
            _, slots, mean_ms, grid, what = SHAPES[name]
            ours = one(labels_path, name, "adaptive", CEILING, samples)
            fixed = []
            for c in grid:
                run = one(labels_path, name, "fixed", c, samples)
                run["concurrency"] = c
                if not run["unscored"]:  # a limit that lost judgements is no candidate
                    fixed.append(run)
                else:
                    print(f"  fixed {c}: {run['unscored']} samples unscored", flush=True)
            best = min(fixed, key=lambda r: r["wall_s"])
            physical = n * mean_ms / 1000 / min(slots or CEILING, CEILING)
            if name == "tokens":  # every request costs about its prompt and max_tokens
                cost = ours["stats"]["prompt_tokens"] / n + 1024
                physical = max(physical, (n * cost - 50000) / 50000)
            cells, data = row(name, what, physical, best, ours, n)
            rows.append(cells)
            result["shapes"][name] = data
            print(" | ".join(map(str, cells)), flush=True)
        if args.real:
            rows.append(real(args.real, result))
    headers = ["shape", "server", "physical s", "best fixed s", "default s", "default / best",
               "default / physical", "requests", "time-outs", "cancelled", "final limit"]
    print(markdown_table(headers, rows))
    print(f"results: {write_results('bench_pacing', result)}")


def real(url: str, result: dict[str, Any]) -> list[Any]:
    """llama-server: the default (slots from /props) vs fixed limits, 60 judgements each, in
    two rounds of opposite order (its prompt cache warms up): the best of each."""
    samples, _ = make_samples(15, 4)
    n = 60
    order: list[tuple[str, int]] = [("adaptive", 16), ("fixed", 1), ("fixed", 2), ("fixed", 4)]
    runs: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for plan in (order, order[::-1]):
        for pacing, c in plan:
            forget_pacing()
            run = run_ours(url, samples, "llm_with_reference", c, pacing, timeout=300.0,
                           model="auto", require_all=False)
            runs.setdefault((pacing, c), []).append(run)
            print(f"  llama.cpp {pacing} {c}: {run['wall_s']:.1f} s", flush=True)
    best_of = {k: min(v, key=lambda r: r["wall_s"]) for k, v in runs.items()}
    ours = best_of[("adaptive", 16)]
    fixed = [dict(r, concurrency=c) for (p, c), r in best_of.items() if p == "fixed"]
    best = min(fixed, key=lambda r: r["wall_s"])
    ours["server"] = {"requests": ours["stats"]["requests"], "cancelled": "-"}
    cells, data = row("llama.cpp", "llama-server 1.5B, 4 slots, 2 cores", None, best, ours, n)
    data["fixed"] = {r["concurrency"]: r["wall_s"] for r in fixed}
    data["all_runs_s"] = {f"{p} {c}": [r["wall_s"] for r in v] for (p, c), v in runs.items()}
    result["shapes"]["llama.cpp"] = data
    print(" | ".join(map(str, cells)), flush=True)
    return cells


if __name__ == "__main__":
    main()
