"""PPI++ intervals on TREC DL19's human grades with a REAL judge (issue 33; not in CI).

``bench_confidence.py`` draws synthetic judges; this one asks a real model once. It builds
S samples as that script does (a DL19 query with 5 of its NIST-judged passages, seeded
order; relevant: grade >= 2), writes them as a JSONL dataset and runs the CLI ONCE against
llama.cpp's ``llama-server`` serving Qwen2.5-Coder-1.5B-Instruct (``../shared/real_judge``):
``metric=llm_with_reference prompt=query_relevance judge=llama_cpp`` (DL19 has no reference
answers; the query_relevance prompt judges passage against query and ignores the answer
field, which holds the query). A probe of the first ``--probe`` samples goes first; when it
predicts more than ``--budget-min`` minutes, S shrinks (not below 60: the first samples of
the same construction, so the probe's verdicts stay cached).

Then, from that one judged run, ``--draws`` seeded draws of n labelled samples each go the
issue's path end to end (``label_sheet`` -> the sheet filled with the NIST grades ->
``read_labels(min_grade=2)`` -> ``match`` -> ``variant_confidence``). Every draw reuses the
same judged run: the judge's errors are fixed, only the labelled draw varies, so coverage
here is conditional on this run of this judge. The true mean is the run's S samples scored
with the NIST grades. The verdict cache (``--cache``) makes a rerun free.

    bash ../shared/real_judge/setup.sh && bash ../shared/real_judge/serve.sh 1.5b 8080
    .venv/bin/python benchmarks/bench_confidence_real.py [--samples 120] [--draws 200]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_confidence import MIN_GRADE, SHARED, TINY, K, qrels  # noqa: E402
from common import PYTHON, child_env, machine, markdown_table, write_results  # noqa: E402

from harness.confidence.agreement import judge_agreement  # noqa: E402
from harness.confidence.labels import read_labels  # noqa: E402
from harness.confidence.match import judged, match, run_sample  # noqa: E402
from harness.confidence.ppi import human_score, variant_confidence  # noqa: E402
from harness.confidence.sheet import COLUMNS, drawn_as_recorded, label_sheet, read_draw  # noqa: E402
from harness.metrics.ranking import average_precision  # noqa: E402

EPS = 1e-10  # metric=llm_with_reference's eps: the human scores use the same aggregation
MIN_SAMPLES = 60
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "harness"


def texts(path: Path) -> dict[str, str]:
    """``_id`` -> text of a BEIR ``corpus.jsonl`` or ``queries.jsonl``."""
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return {str(r["_id"]): str(r["text"]) for r in rows}


def build(data: Path, n: int, seed: int) -> tuple[list[dict[str, Any]], dict[str, list[int]]]:
    """``n`` samples (dataset records) and the NIST grades of each one's chunks, in order."""
    pool, queries, corpus = qrels(data), texts(data / "queries.jsonl"), texts(data / "corpus.jsonl")
    order, rng = sorted(pool), random.Random(seed)
    records, grades = [], {}
    for i in range(n):
        query = order[i % len(order)]
        chosen = rng.sample(pool[query], K)
        records.append({"id": f"s{i}", "user_input": queries[query], "reference": queries[query],
                        "retrieved_contexts": [corpus[d] for d, _ in chosen],
                        "retrieved_context_ids": [d for d, _ in chosen]})
        grades[f"s{i}"] = [g for _, g in chosen]
    return records, grades


def run_cli(records: list[dict[str, Any]], tmp: Path, tag: str, args: argparse.Namespace,
            timeout: float) -> dict[str, Any]:
    """One ``python -m harness`` run over ``records``; its summary, rows and wall time."""
    dataset, out = tmp / f"{tag}.jsonl", tmp / tag
    dataset.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    argv = [PYTHON, "-m", "harness", "dataset=jsonl", f"dataset.path={dataset}",
            "metric=llm_with_reference", "prompt=query_relevance", f"judge={args.preset}",
            f"judge.base_url={args.base_url}", f"judge.model={args.model}",
            f"judge.cache_path={args.cache}", "tracking=none", "run.max_unscored_frac=1",
            "run.progress=false", "run.report=false", f"hydra.run.dir={out}"]
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=tmp, env=child_env(), capture_output=True, text=True,
                          timeout=timeout)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"the judged run ({tag}) failed with exit {proc.returncode}: "
                 f"{proc.stderr.strip().splitlines()[-1:]}")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    stats = summary.get("judge") or {}
    return {"wall_s": round(wall, 1), "dir": out, "n_samples": summary.get("n_samples"),
            "n_unscored": summary.get("n_unscored"), "mean": summary.get("mean"),
            "requests": stats.get("requests"), "retries": stats.get("retries"),
            "cache_hits": stats.get("cache_hits"), "cache_misses": stats.get("cache_misses"),
            "peak_in_flight": stats.get("peak_in_flight")}


def one_draw(run_dir: Path, rows: list[dict[str, Any]], grades: dict[str, list[int]], n: int,
             seed: int, sheet_dir: Path) -> dict[str, Any]:
    """The confidence block of ``n`` samples drawn with ``seed`` and labelled with NIST grades."""
    sheet = label_sheet(run_dir, n, seed, sheet_dir)["csv"]
    with open(sheet, encoding="utf-8-sig", newline="") as f:
        table = list(csv.DictReader(f))
    with open(sheet, "w", encoding="utf-8", newline="") as f:  # the assessor's grades
        writer = csv.DictWriter(f, [*COLUMNS, "grade"])
        writer.writeheader()
        writer.writerows({**t, "grade": grades[t["id"]][int(t["rank"]) - 1]} for t in table)
    matched = match(read_labels(sheet, min_grade=MIN_GRADE), [run_sample(r) for r in rows])
    flag, note = drawn_as_recorded(list(matched.verdicts), read_draw(sheet))
    return variant_confidence([judged(r) for r in rows], matched, human_score(EPS),
                              random_draw=flag, note=note)


def summarise(blocks: list[dict[str, Any]], truth: float, n: int) -> list[Any]:
    """One table row over the draws of ``n`` labelled samples."""
    def covers(key: str) -> str:
        return f"{sum(b[key][0] <= truth <= b[key][1] for b in blocks)}/{len(blocks)}"

    def width(key: str) -> float:
        return float(statistics.median(b[key][1] - b[key][0] for b in blocks))

    kappas = [b["judge_agreement"]["kappa"] for b in blocks
              if b["judge_agreement"]["kappa"] is not None]
    q = statistics.quantiles(kappas, n=4) if len(kappas) > 1 else [float("nan")] * 3
    outside = sum(not b["ci"][0] <= b["judge_mean"] <= b["ci"][1] for b in blocks)
    return [n, covers("ci"), covers("labels_only_ci"), covers("judge_only_ci"),
            f"{width('ci'):.3f}", f"{width('labels_only_ci'):.3f}",
            f"{width('ci') / width('labels_only_ci'):.2f}",
            f"{statistics.median(kappas):.2f} ({q[0]:.2f}-{q[2]:.2f})",
            f"{outside}/{len(blocks)}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=120)
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--labelled", type=int, nargs="+", default=[30, 60])
    parser.add_argument("--seed", type=int, default=0, help="the samples' construction")
    parser.add_argument("--probe", type=int, default=10, help="samples timed first (0: none)")
    parser.add_argument("--budget-min", type=float, default=30.0,
                        help="shrink --samples (not below 60) when the probe predicts more")
    parser.add_argument("--data", type=Path, default=SHARED if SHARED.exists() else TINY)
    parser.add_argument("--base-url", default="http://127.0.0.1:8080/v1")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--preset", default="llama_cpp", help="the judge group option")
    parser.add_argument("--cache", type=Path, default=CACHE / "bench_confidence_real.sqlite",
                        help="the verdict cache (a rerun with the same samples is free)")
    args = parser.parse_args()
    try:
        urllib.request.urlopen(f"{args.base_url}/models", timeout=10)
    except OSError as e:
        sys.exit(f"--base-url {args.base_url}: no judge answers ({e}); start one with "
                 "bash ../shared/real_judge/serve.sh 1.5b 8080")
    args.cache.parent.mkdir(parents=True, exist_ok=True)
    started, samples = time.perf_counter(), args.samples
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        probe = None
        if args.probe:
            records, _ = build(args.data, args.probe, args.seed)
            allowed = max(60.0, args.budget_min * 60 * args.probe / MIN_SAMPLES)
            try:
                probe = run_cli(records, tmp, "probe", args, timeout=allowed)
            except subprocess.TimeoutExpired:
                sys.exit(f"probe: {args.probe} samples not judged in {allowed:.0f} s, so "
                         f"{MIN_SAMPLES} samples would take over --budget-min "
                         f"{args.budget_min:g} min; the verdicts it got are cached (rerun "
                         "when the machine is quieter, or raise --budget-min)")
            predicted = probe["wall_s"] / args.probe * samples / 60
            probe["predicted_min"] = round(predicted, 1)
            if predicted > args.budget_min:
                samples = max(MIN_SAMPLES, int(samples * args.budget_min / predicted))
                print(f"probe: {probe['wall_s']} s for {args.probe} samples predicts "
                      f"{predicted:.0f} min for {args.samples}; running {samples}")
        records, grades = build(args.data, samples, args.seed)
        full = run_cli(records, tmp, "run", args, timeout=4 * 3600)
        rows = [json.loads(line) for line in (full["dir"] / "samples.jsonl").open()]
        truth = statistics.fmean(average_precision([int(g >= MIN_GRADE) for g in v], EPS)
                                 for v in grades.values())
        pairs = [(int(g >= MIN_GRADE), v) for r in rows if r.get("verdicts") is not None
                 for g, v in zip(grades[r["id"]], r["verdicts"], strict=True) if v is not None]
        overall = judge_agreement([h for h, _ in pairs], [v for _, v in pairs])
        table, results = [], []
        for n in args.labelled:
            blocks = [one_draw(full["dir"], rows, grades, n, 10_000 * n + d, tmp / f"s{n}-{d}")
                      for d in range(args.draws)]
            table.append(summarise(blocks, truth, n))
            results.append({"labelled": n, "blocks": blocks})
    for run in (probe, full):
        if run:
            run.pop("dir")
    judge_mean = blocks[0]["judge_mean"]
    headers = ["labelled", "PPI++ covers", "labels-only covers", "judge-only covers",
               "PPI++ width", "labels-only width", "ratio",
               "kappa, labelled chunks (median, IQR)", "judge mean outside PPI++"]
    relevant = sum(int(g >= MIN_GRADE) for v in grades.values() for g in v)
    print(f"data: {args.data}, {samples} samples x {K} chunks ({relevant} of "
          f"{samples * K} relevant), judge {args.model} ({args.preset}) at {args.base_url}\n"
          f"judged run: {full['wall_s']} s, {full['requests']} requests, "
          f"{full['cache_hits']} cache hits, {full['n_unscored']} unscored; probe: {probe}\n"
          f"true mean {truth:.3f}, judge mean {judge_mean:.3f} (bias {judge_mean - truth:+.3f}), "
          f"kappa over all {overall['n_chunks']} chunks {overall['kappa']:.2f} (accuracy "
          f"{overall['accuracy']:.2f}); {args.draws} draws of ONE judged run "
          f"(coverage is conditional on it), {time.perf_counter() - started:.0f} s\n")
    print(markdown_table(headers, table))
    write_results("confidence_real", {
        "machine": machine(), "data": str(args.data), "samples": samples,
        "samples_asked": args.samples, "draws": args.draws, "seed": args.seed,
        "judge": {"preset": args.preset, "base_url": args.base_url, "model": args.model},
        "probe": probe, "run": full, "true_mean": truth, "judge_mean": judge_mean,
        "bias": judge_mean - truth, "agreement_all_chunks": overall,
        "table": [headers, *table], "results": results})


if __name__ == "__main__":
    main()
