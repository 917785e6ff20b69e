"""Several judged variants in one run against the slower of them alone (issue 34, item 4).

The test judge runs in its own process: it answers after ``--latency-ms`` on average (Gaussian
jitter of ``--latency-sd-ms``) and serves at most ``--concurrency`` requests at once (more
wait in its queue). Each round runs, through ``harness.evaluate`` with ``judge=local`` and the
verdict cache off, ``llm_with_reference`` alone, ``contextual_precision`` alone and the list
``[llm_with_reference,contextual_precision]``, every run cold (adaptive pacing forgets what it
learned), in an order that rotates per round. The ratio is the list's wall time over the slower
variant's alone, each the median of the rounds; also the list's time over the physical limit
(all its calls at the server's concurrency) and the two variants one after the other.

    .venv/bin/python benchmarks/bench_variants.py            # 200 samples x 5 chunks, 3 rounds
    .venv/bin/python benchmarks/bench_variants.py --small    # 60 samples
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_judge import make_samples, start_server, stop_server
from common import REPO, forget_pacing, judge_bench_parser, machine, markdown_table, write_results

sys.path.insert(0, str(REPO))

BOTH = ("llm_with_reference", "contextual_precision")


def run(samples: list[Any], metric: str | list[str], base_url: str,
        concurrency: int) -> dict[str, Any]:
    """One cold run of ``metric`` through the public API: its wall time, calls and scores."""
    import harness

    forget_pacing()
    records = [{"id": s.id, "user_input": s.user_input, "reference": s.reference,
                "response": s.response, "retrieved_contexts": list(s.retrieved_contexts)}
               for s in samples]
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


def main() -> None:
    parser = judge_bench_parser(__doc__ or "")
    args = parser.parse_args()
    n = 60 if args.small else 200
    samples, labels = make_samples(n, 5)
    plans: list[tuple[str, str | list[str]]] = [
        (BOTH[0], BOTH[0]), (BOTH[1], BOTH[1]), ("both", list(BOTH))]
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in plans}
    with tempfile.TemporaryDirectory() as tmp:
        labels_path = Path(tmp) / "labels.json"
        labels_path.write_text(json.dumps(labels))
        server, base_url = start_server(labels_path, args.latency_ms, args.concurrency,
                                        "--latency-sd-ms", str(args.latency_sd_ms))
        try:
            for r in range(args.rounds):
                for name, metric in plans[r % 3:] + plans[:r % 3]:
                    runs[name].append(run(samples, metric, base_url, args.concurrency))
        finally:
            counters = stop_server(server)
    med = {name: statistics.median(x["wall_s"] for x in rs) for name, rs in runs.items()}
    calls = {name: rs[0]["calls"] for name, rs in runs.items()}
    slower = max(BOTH, key=lambda name: med[name])
    limit = calls["both"] * args.latency_ms / 1000 / args.concurrency
    for name in BOTH:  # the list scores each variant as it scores alone
        alone, together = runs[name][0], runs["both"][0]
        assert together["means"][name] == alone["means"][name], (name, together, alone)
    rows = [[name, calls[name], f"{med[name]:.2f}", f"{med[name] / med[slower]:.2f}×",
             f"{calls[name] * args.latency_ms / 1000 / args.concurrency:.2f}"]
            for name in runs]
    rows.append(["one after the other (sum)", calls[BOTH[0]] + calls[BOTH[1]],
                 f"{med[BOTH[0]] + med[BOTH[1]]:.2f}",
                 f"{(med[BOTH[0]] + med[BOTH[1]]) / med[slower]:.2f}×", f"{limit:.2f}"])
    print(markdown_table(["run", "judge calls", "wall s (median)", "/ slower alone",
                          "limit s"], rows))
    ratio = med["both"] / med[slower]
    print(f"two variants together: {ratio:.2f}× the slower alone ({slower}); "
          f"{med['both'] / limit:.2f}× their physical limit")
    result = {"benchmark": "bench_variants", "machine": machine(), "n_samples": n, "chunks": 5,
              "latency_ms": args.latency_ms, "latency_sd_ms": args.latency_sd_ms,
              "server_concurrency": args.concurrency, "rounds": args.rounds,
              "statistic": f"median of {args.rounds} rounds", "median_wall_s": med,
              "calls": calls, "slower_alone": slower, "ratio_both_over_slower": ratio,
              "both_over_limit": med["both"] / limit, "server": counters,
              "peak_in_flight_both": [x["peak_in_flight"] for x in runs["both"]]}
    print(f"results: {write_results('bench_variants', result)}")


if __name__ == "__main__":
    main()
