"""non_llm scoring throughput: our batched ``cpdist`` path vs a plain per-pair loop.

Generates N samples x 5 retrieved chunks x 2 reference contexts of prose-like text
(random.Random(0)); about a third of the chunks are near-copies of a reference, a tenth
share a prefix with one (similarity near the 0.5 threshold), the rest are unrelated.
Times, interleaved over several rounds:

* ours, ``StringContextPrecision.score_batch`` over batches of 1024 (as the runner does),
  with ``workers=-1`` (all cores) and ``workers=1``;
* a plain loop: per chunk, max over references of
  ``1 - rapidfuzz.distance.Levenshtein.normalized_distance``, ``>= 0.5``, then
  ``average_precision(verdicts, 1e-10)``.

* for scale, the distance kernel alone (``cpdist`` over prebuilt pair lists, 1 thread).

Asserts that the loop and both of ours give identical scores (exact float equality), verdicts and
similarities. Usage: ``.venv/bin/python benchmarks/bench_non_llm.py [--small]``.
"""

from __future__ import annotations

import argparse
import gc
import random
import time
from collections.abc import Callable

import common
import rapidfuzz
from rapidfuzz.distance import Levenshtein

from harness.core.types import RagSample
from harness.metrics.non_llm import StringContextPrecision
from harness.metrics.ranking import average_precision

N_FULL, N_SMALL = 100_000, 5_000
N_CHUNKS, N_REFS = 5, 2
BATCH = 1024
THRESHOLD, EPS = 0.5, 1e-10

#: (similarities, verdicts, scores), one entry per sample.
Outcome = tuple[list[list[float]], list[list[int]], list[float]]


def make_samples(n: int, seed: int = 0) -> list[RagSample]:
    """``n`` deterministic samples with mixed relevance."""
    rng = random.Random(seed)
    samples = []
    for i in range(n):
        refs = tuple(common.english_text(rng) for _ in range(N_REFS))
        chunks = []
        for _ in range(N_CHUNKS):
            kind = rng.random()
            if kind < 1 / 3:
                chunks.append(common.near_copy(rng, rng.choice(refs)))
            elif kind < 1 / 3 + 1 / 10:
                ref = rng.choice(refs)
                keep = int(len(ref) * rng.uniform(0.3, 0.8))
                chunks.append(ref[:keep] + " " + common.english_text(rng, 20, len(ref) - keep))
            else:
                chunks.append(common.english_text(rng))
        samples.append(
            RagSample(id=f"s{i}", retrieved_contexts=tuple(chunks), reference_contexts=refs)
        )
    return samples


def run_ours(samples: list[RagSample], workers: int) -> Outcome:
    """Score with ``StringContextPrecision.score_batch`` in batches of ``BATCH``."""
    metric = StringContextPrecision(
        name="non_llm", measure="levenshtein", threshold=THRESHOLD, eps=EPS, workers=workers
    )
    sims: list[list[float]] = []
    verdicts: list[list[int]] = []
    scores: list[float] = []
    for start in range(0, len(samples), BATCH):
        for r in metric.score_batch(samples[start : start + BATCH]):
            sims.append(r.details["similarities"])
            verdicts.append(r.verdicts)  # type: ignore[arg-type]
            scores.append(r.score)  # type: ignore[arg-type]
    return sims, verdicts, scores


def run_loop(samples: list[RagSample]) -> Outcome:
    """Score with one ``normalized_distance`` call per (chunk, reference) pair."""
    distance = Levenshtein.normalized_distance
    sims: list[list[float]] = []
    verdicts: list[list[int]] = []
    scores: list[float] = []
    for s in samples:
        refs = s.reference_contexts or ()
        best = [
            max(1 - distance(chunk, ref) for ref in refs) for chunk in s.retrieved_contexts or ()
        ]
        v = [1 if b >= THRESHOLD else 0 for b in best]
        sims.append(best)
        verdicts.append(v)
        scores.append(average_precision(v, EPS))
    return sims, verdicts, scores


def pairs_of(samples: list[RagSample]) -> tuple[list[str], list[str]]:
    """Every (chunk, reference) pair, as the two parallel lists ``cpdist`` takes."""
    chunks: list[str] = []
    refs: list[str] = []
    for s in samples:
        for chunk in s.retrieved_contexts or ():
            for ref in s.reference_contexts or ():
                chunks.append(chunk)
                refs.append(ref)
    return chunks, refs


def run_kernel(chunks: list[str], refs: list[str]) -> Outcome:
    """Only the distance computation: one ``cpdist`` call per batch, single thread."""
    import numpy as np
    from rapidfuzz import process

    step = BATCH * N_CHUNKS * N_REFS
    for start in range(0, len(chunks), step):
        process.cpdist(chunks[start : start + step], refs[start : start + step],
                       scorer=Levenshtein.normalized_distance, dtype=np.float64, workers=1)
    return [], [], []


def timed(fn: Callable[[], Outcome]) -> tuple[float, Outcome]:
    """Wall time of one call (garbage collected before, not during)."""
    gc.collect()
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def main() -> None:
    """Generate, time, check equality, print and save."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--small", action="store_true", help=f"{N_SMALL:,} samples instead of {N_FULL:,}"
    )
    parser.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds (median)")
    args = parser.parse_args()
    n = N_SMALL if args.small else N_FULL

    t0 = time.perf_counter()
    samples = make_samples(n)
    gen_s = time.perf_counter() - t0
    print(f"generated {n:,} samples in {gen_s:.1f} s")

    chunks, refs = pairs_of(samples)
    variants: dict[str, Callable[[], Outcome]] = {
        "loop": lambda: run_loop(samples),
        "ours_workers_all": lambda: run_ours(samples, -1),
        "ours_workers_1": lambda: run_ours(samples, 1),
        "kernel_only": lambda: run_kernel(chunks, refs),
    }
    times: dict[str, list[float]] = {k: [] for k in variants}
    outcomes: dict[str, Outcome] = {}
    for round_ in range(args.rounds):
        names = list(variants)
        names = names[round_ % len(names) :] + names[: round_ % len(names)]  # rotate order
        for name in names:
            elapsed, outcomes[name] = timed(variants[name])
            times[name].append(elapsed)
            print(f"round {round_ + 1}: {name:<17} {elapsed:7.2f} s")

    ref_sims, ref_verdicts, ref_scores = outcomes["loop"]
    for name in ("ours_workers_all", "ours_workers_1"):
        sims, verdicts, scores = outcomes[name]
        assert scores == ref_scores, f"{name}: scores differ from the loop"
        assert verdicts == ref_verdicts, f"{name}: verdicts differ from the loop"
        assert sims == ref_sims, f"{name}: similarities differ from the loop"
    flat = [v for vs in ref_verdicts for v in vs]
    relevant_frac = sum(flat) / len(flat)
    score_dist = {
        "zero": sum(s == 0.0 for s in ref_scores) / n,
        "one": sum(s == 1.0 for s in ref_scores) / n,
        "between": sum(0.0 < s < 1.0 for s in ref_scores) / n,
    }

    stats = {k: common.summarise(v) for k, v in times.items()}
    rate = {k: n / s["median_s"] for k, s in stats.items()}
    rate_best = {k: n / s["best_s"] for k, s in stats.items()}
    speedup_all = stats["loop"]["median_s"] / stats["ours_workers_all"]["median_s"]
    speedup_1 = stats["loop"]["median_s"] / stats["ours_workers_1"]["median_s"]
    speedup_all_best = stats["loop"]["best_s"] / stats["ours_workers_all"]["best_s"]
    threads = stats["ours_workers_1"]["median_s"] / stats["ours_workers_all"]["median_s"]
    threads_best = stats["ours_workers_1"]["best_s"] / stats["ours_workers_all"]["best_s"]
    kernel_share = stats["kernel_only"]["median_s"] / stats["ours_workers_1"]["median_s"]
    ragas_rate = 1000 / common.RAGAS_NON_LLM_S_PER_1000

    label = {
        "loop": "plain per-pair loop",
        "ours_workers_all": f"ours, workers=-1 ({common.machine()['cpus']} cores)",
        "ours_workers_1": "ours, workers=1",
        "kernel_only": "kernel only: cpdist, workers=1, pairs prebuilt",
    }
    rows = [
        [label[k], f"{stats[k]['median_s']:.2f}", f"{stats[k]['best_s']:.2f}",
         f"{rate[k]:,.0f}", f"{rate_best[k]:,.0f}",
         f"{stats['loop']['median_s'] / stats[k]['median_s']:.2f}x",
         f"{stats['loop']['best_s'] / stats[k]['best_s']:.2f}x"]
        for k in ("loop", "ours_workers_1", "ours_workers_all", "kernel_only")
    ]
    rows.append(["ragas (quoted, not measured)", "", "", f"{ragas_rate:,.0f}", "", "", ""])
    print()
    print(f"non_llm, {n:,} samples x {N_CHUNKS} chunks x {N_REFS} refs; "
          f"median of {args.rounds} interleaved rounds")
    print(common.markdown_table(
        ["variant", "median s", "best s", "samples/s (median)", "samples/s (best)",
         "vs loop (median)", "vs loop (best)"], rows))
    print(f"\nidentical scores, verdicts and similarities: yes; "
          f"relevant chunks: {relevant_frac:.1%}; "
          f"scores 0 / (0,1) / 1: {score_dist['zero']:.1%} / {score_dist['between']:.1%} / "
          f"{score_dist['one']:.1%}")
    print(f"workers=-1 vs workers=1: {threads:.2f}x (median), {threads_best:.2f}x (best); "
          f"the distance kernel alone is "
          f"{kernel_share:.0%} of ours (workers=1); ours (all cores) vs quoted ragas: "
          f"{rate['ours_workers_all'] / ragas_rate:,.0f}x")

    path = common.write_results("bench_non_llm", {
        "benchmark": "bench_non_llm",
        "machine": common.machine(),
        "rapidfuzz": rapidfuzz.__version__,
        "n_samples": n,
        "chunks_per_sample": N_CHUNKS,
        "refs_per_sample": N_REFS,
        "batch_size": BATCH,
        "rounds": args.rounds,
        "statistic": "median (and best) of interleaved rounds",
        "generate_s": gen_s,
        "times": stats,
        "samples_per_s": rate,
        "samples_per_s_best": rate_best,
        "speedup_ours_all_vs_loop_best": speedup_all_best,
        "speedup_workers_all_vs_1_best": threads_best,
        "speedup_ours_all_vs_loop": speedup_all,
        "speedup_ours_1_vs_loop": speedup_1,
        "speedup_workers_all_vs_1": threads,
        "kernel_share_of_ours_1": kernel_share,
        "identical_results": True,
        "relevant_chunk_fraction": relevant_frac,
        "score_distribution": score_dist,
        "ragas_quoted": {"s_per_1000": common.RAGAS_NON_LLM_S_PER_1000, "samples_per_s": ragas_rate,
                         "measured": False},
    })
    print(f"results: {path}")


if __name__ == "__main__":
    main()
