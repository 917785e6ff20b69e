"""Several judged variants in one run against the slower of them alone (issue 34, item 4).

The test judge runs in its own process: it answers after ``--latency-ms`` on average (Gaussian
jitter of ``--latency-sd-ms``) and serves at most ``--concurrency`` requests at once (more
wait in its queue). Each round runs, through ``harness.evaluate`` with ``judge=local`` and the
verdict cache off, ``llm_with_reference`` alone, ``contextual_precision`` alone and the list
``[llm_with_reference,contextual_precision]``, every run cold (adaptive pacing forgets what it
learned), in an order that rotates per round. The ratio is the list's wall time over the slower
variant's alone, each the median of the rounds; also the two variants one after the other.

Three shapes: *capacity-bound* (200 samples: the server's slots are busy the whole run, so
the list cannot beat all its calls at the server's capacity, ``floor_ratio`` times the slower
variant's calls), *latency-bound* (``--few`` samples: every call fits in the budget at once,
so the list can take about the slower variant's time) and *mid-size* (``--mid`` samples:
between the two).

    .venv/bin/python benchmarks/bench_variants.py            # 200 samples x 5 chunks, 3 rounds
    .venv/bin/python benchmarks/bench_variants.py --small    # 60 samples
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

from bench_judge import as_dicts, judge_serving, make_samples
from common import REPO, forget_pacing, judge_bench_parser, machine, markdown_table, write_results

sys.path.insert(0, str(REPO))

BOTH = ("llm_with_reference", "contextual_precision")


def run(samples: list[Any], metric: str | list[str], base_url: str,
        concurrency: int) -> dict[str, Any]:
    """One cold run of ``metric`` through the public API: its wall time, calls and scores."""
    import harness

    forget_pacing()
    records = as_dicts(samples)
    overrides = ["judge=local", f"judge.base_url={base_url}", "judge.model=test-judge",
                 f"judge.max_concurrency={concurrency}", "judge.cache=false"]
    t0 = time.perf_counter()
    result = harness.evaluate(records, metric, overrides=overrides)
    wall = time.perf_counter() - t0
    summary = result.summary
    variants = summary.get("variants") or {str(metric): summary}
    return {"wall_s": wall, "calls": int(summary["judge"]["calls"]),
            "peak_in_flight": summary["judge"].get("peak_in_flight"),
            "means": {name: v["mean"] for name, v in variants.items()},
            "scored": {name: v["n_scored"] for name, v in variants.items()}}


def measure(samples: list[Any], labels: list[dict[str, Any]], args: Any) -> dict[str, Any]:
    """Every run of one shape, rounds interleaved in a rotating order: medians and calls."""
    plans: list[tuple[str, str | list[str]]] = [
        (BOTH[0], BOTH[0]), (BOTH[1], BOTH[1]), ("both", list(BOTH))]
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in plans}
    with judge_serving(labels, args) as (base_url, _):
        for r in range(args.rounds):
            for name, metric in plans[r % 3:] + plans[:r % 3]:
                runs[name].append(run(samples, metric, base_url, args.concurrency))
    for name in BOTH:  # the list scores each variant as it scores alone
        alone, together = runs[name][0], runs["both"][0]
        assert together["means"][name] == alone["means"][name], (name, together, alone)
    med = {name: statistics.median(x["wall_s"] for x in rs) for name, rs in runs.items()}
    calls = {name: rs[0]["calls"] for name, rs in runs.items()}
    slower = max(BOTH, key=lambda name: med[name])
    per_call = args.latency_ms / 1000 / args.concurrency
    return {"n_samples": len(samples), "median_wall_s": med, "calls": calls,
            "slower_alone": slower, "ratio_both_over_slower": med["both"] / med[slower],
            "sequential_over_slower": (med[BOTH[0]] + med[BOTH[1]]) / med[slower],
            "limit_s": {name: c * per_call for name, c in calls.items()},
            "floor_ratio": calls["both"] / calls[slower],
            "peak_in_flight_both": [x["peak_in_flight"] for x in runs["both"]]}


def main() -> None:
    parser = judge_bench_parser(__doc__ or "")
    parser.add_argument("--few", type=int, default=8,
                        help="samples of the latency-bound shape (their calls fit the budget)")
    parser.add_argument("--mid", type=int, default=30,
                        help="samples of the mid-size shape (0: leave it out)")
    args = parser.parse_args()
    shapes = {"capacity-bound": 60 if args.small else 200, "latency-bound": args.few,
              "mid-size": args.mid}
    shapes = {shape: n for shape, n in shapes.items() if n > 0}
    rows, out = [], {}
    for shape, n in shapes.items():
        samples, labels = make_samples(n, 5)
        got = out[shape] = measure(samples, labels, args)
        med, slower = got["median_wall_s"], got["slower_alone"]
        for name in (*BOTH, "both"):
            rows.append([shape, n, name, got["calls"][name], f"{med[name]:.2f}",
                         f"{med[name] / med[slower]:.2f}×", f"{got['limit_s'][name]:.2f}"])
        rows.append([shape, n, "one after the other (sum)", got["calls"]["both"],
                     f"{med[BOTH[0]] + med[BOTH[1]]:.2f}",
                     f"{got['sequential_over_slower']:.2f}×", ""])
    print(markdown_table(["shape", "samples", "run", "judge calls", "wall s (median)",
                          "/ slower alone", "limit s"], rows))
    for shape, got in out.items():
        print(f"{shape}: two variants together {got['ratio_both_over_slower']:.2f}× the slower "
              f"alone ({got['slower_alone']}); one after the other "
              f"{got['sequential_over_slower']:.2f}×; all their calls at the server's capacity "
              f"{got['floor_ratio']:.2f}×")
    result = {"benchmark": "bench_variants", "machine": machine(), "chunks": 5,
              "latency_ms": args.latency_ms, "latency_sd_ms": args.latency_sd_ms,
              "server_concurrency": args.concurrency, "judge_max_concurrency": args.concurrency,
              "rounds": args.rounds, "statistic": f"median of {args.rounds} rounds",
              "shapes": out}
    print(f"results: {write_results('bench_variants', result)}")


if __name__ == "__main__":
    main()
