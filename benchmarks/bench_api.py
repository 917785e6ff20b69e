"""The Python API's cost: ``harness.evaluate`` on 200 ``id_based`` samples (first call and
warm calls), and the judge paths through it against the test judge, each beside the same
metric driven directly (``score_batch``, as bench_judge.py does) and the physical limit.

The test judge runs in its own process, answers after ``--latency-ms`` on average (jitter of
``--latency-sd-ms``, 25 % by default) and serves at most
``--concurrency`` requests at once (``judge.max_concurrency`` is the same number), so N
calls cannot finish faster than ``N * latency / concurrency``. The verdict cache is off
(every call is paid). Ratios are measured within one run; no time is asserted.

    .venv/bin/python benchmarks/bench_api.py            # 200 samples x 5 chunks, 3 rounds
    .venv/bin/python benchmarks/bench_api.py --small    # 40 samples
    .venv/bin/python benchmarks/bench_api.py --pacing fixed   # judge.pacing (default adaptive)
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any, Literal

from bench_judge import as_dicts, judge_serving, make_samples
from common import REPO, forget_pacing, judge_bench_parser, machine, markdown_table, write_results

sys.path.insert(0, str(REPO))

#: A ragas ``id_based`` record: 3 retrieved ids, 1 of them a reference.
ID_ROWS = [
    {"id": str(i), "retrieved_context_ids": [f"d{i}", f"d{i + 1}", "x"],
     "reference_context_ids": [f"d{i}"]}
    for i in range(200)
]


def time_id_based(repeats: int) -> dict[str, Any]:
    """The first ``evaluate`` call of this process (imports, compose) and warm ones."""
    from harness import evaluate

    t0 = time.perf_counter()
    first = evaluate(ID_ROWS, "id_based")
    first_s = time.perf_counter() - t0
    warm = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        again = evaluate(ID_ROWS, "id_based")
        warm.append(time.perf_counter() - t0)
        assert again.rows == first.rows
    return {"first_s": first_s, "warm_median_s": statistics.median(warm),
            "warm_best_s": min(warm), "warm_all_s": warm, "mean": first.mean}


def run_api(base_url: str, rows: list[dict[str, Any]], metric: str, concurrency: int,
            pacing: str, cache_path: Path | None = None) -> dict[str, Any]:
    """One ``evaluate`` call, timed from the call to its return (``cache_path``: with the
    verdict cache on, in that new file, so every reply is also written there)."""
    from harness import evaluate

    cache = f"judge.cache_path={cache_path}" if cache_path else "judge.cache=false"
    overrides = ["judge=local", f"judge.base_url={base_url}", "judge.model=test-judge",
                 cache, f"judge.max_concurrency={concurrency}", f"judge.pacing={pacing}"]
    t0 = time.perf_counter()
    result = evaluate(rows, metric, overrides=overrides)
    wall = time.perf_counter() - t0
    assert all(s is not None for s in result.scores), result.summary["unscored_reasons"]
    return {"wall_s": wall, "calls": int(result.summary["judge"]["calls"]),
            "requests": int(result.summary["judge"]["requests"]), "scores": result.scores}


def run_direct(base_url: str, samples: list[Any], metric_name: str, concurrency: int,
               pacing: Literal["adaptive", "fixed"]) -> dict[str, Any]:
    """The same metric driven directly, as the runner drives it (one ``score_batch``)."""
    import yaml

    from harness.judges.openai_chat import OpenAIJudge
    from harness.metrics.contextual_precision import ContextualPrecision
    from harness.metrics.llm import LLMContextPrecision
    from harness.prompts.template import PromptTemplate

    data = yaml.safe_load((REPO / "conf" / "prompt" / f"{metric_name}.yaml").read_text())
    data.pop("_target_")
    judge = OpenAIJudge("test-judge", base_url=base_url, api_key_env=None,
                        max_concurrency=concurrency, pacing=pacing, cache=False)
    cls = ContextualPrecision if metric_name == "contextual_precision" else LLMContextPrecision
    metric = cls(metric_name, judge, PromptTemplate(**data))
    metric.preflight()
    t0 = time.perf_counter()
    results = metric.score_batch(samples)
    wall = time.perf_counter() - t0
    metric.close()
    return {"wall_s": wall, "calls": judge.stats.calls, "scores": [r.score for r in results]}


def main() -> None:
    parser = judge_bench_parser(__doc__ or "")
    parser.add_argument("--pacing", default="adaptive", choices=("adaptive", "fixed"),
                        help="judge.pacing of every run (default: adaptive, the presets')")
    args = parser.parse_args()
    n = 40 if args.small else 200
    id_based = time_id_based(repeats=20)
    samples, labels = make_samples(n, 5)
    rows = as_dicts(samples)
    variants = {"pointwise": "llm_with_reference", "listwise_with_reason": "contextual_precision"}
    runs: dict[str, list[dict[str, Any]]] = {}
    with judge_serving(labels, args) as (base_url, tmp):
        for r in range(args.rounds):  # interleaved: API, then direct, per variant
            for kind, metric in variants.items():
                if not args.warm:
                    forget_pacing()
                api = run_api(base_url, rows, metric, args.concurrency, args.pacing)
                if not args.warm:
                    forget_pacing()
                direct = run_direct(base_url, samples, metric, args.concurrency, args.pacing)
                assert api["scores"] == direct["scores"], kind
                runs.setdefault(f"api_{kind}", []).append(api)
                runs.setdefault(f"direct_{kind}", []).append(direct)
            if not args.warm:
                forget_pacing()
            cached = run_api(base_url, rows, "llm_with_reference", args.concurrency,
                             args.pacing, tmp / f"verdicts-{r}.sqlite")
            runs.setdefault("api_pointwise_cache_on", []).append(cached)

    result: dict[str, Any] = {
        "benchmark": "bench_api", "machine": machine(), "n_samples": n, "chunks": 5,
        "latency_ms": args.latency_ms, "latency_sd_ms": args.latency_sd_ms,
        "server_concurrency": args.concurrency,
        "pacing": args.pacing, "statistic": f"best of {args.rounds} rounds",
        "pacing_memory": "warm" if args.warm else "cold",
        "id_based_200": id_based, "runs": {},
    }
    rows_out = []
    for name, rs in runs.items():
        best = min(rs, key=lambda r: r["wall_s"])
        calls = best["calls"]
        limit = calls * args.latency_ms / 1000 / args.concurrency
        median = statistics.median(r["wall_s"] for r in rs)
        result["runs"][name] = {"wall_s": best["wall_s"], "median_s": median, "calls": calls,
                                "limit_s": limit, "wall_over_limit": best["wall_s"] / limit,
                                "all_s": [r["wall_s"] for r in rs]}
        rows_out.append([name, calls, f"{best['wall_s']:.2f}", f"{median:.2f}", f"{limit:.2f}",
                         f"{best['wall_s'] / limit:.2f}×"])
    print(markdown_table(["path", "calls", "best s", "median s", "limit s", "best / limit"],
                         rows_out))
    print()
    print(markdown_table(
        ["id_based, 200 samples", "seconds"],
        [["first evaluate() of the process", f"{id_based['first_s']:.3f}"],
         ["later calls, median of 20", f"{id_based['warm_median_s']:.4f}"],
         ["later calls, best", f"{id_based['warm_best_s']:.4f}"]]))
    print(f"results: {write_results('bench_api', result)}")


if __name__ == "__main__":
    main()
