"""What a judged run costs at a provider that bills as OpenAI documents it, by prompt layout;
and (``--real``) how two prompts agree on a real judge.

The bill (``bill``) is computed from the request bodies the test judge received, in the order
it received them: a token is 4 characters of message content; a request's cached tokens are
its prefix shared with an earlier request (whole messages, then the common start of the
first message that differs), counted from 1,024 tokens in steps of 128 (below 1,024: none);
cached input is billed at 0.1x the input price, and a Batch API run at 0.5x everything.
Prices: 1.00 / 0.10 / 4.00 USD per 1M input / cached input / output tokens. Output tokens
are the judge's replies as the run counted them (the usage the test judge sends). The test
judge obeys the reply schema a request sends: a schema without ``reason`` gets a reply
without reasons, as a grammar-constrained server or OpenAI's strict mode would give.

    .venv/bin/python benchmarks/bench_prefix.py          # 200 samples x 5 chunks, both datasets
    .venv/bin/python benchmarks/bench_prefix.py --small  # 40 samples

``--real URL`` judges TREC DL19 pairs (``$HARNESS_SHARED_DATA``, else ``../shared/data``;
human grades 1-3, relevant from grade 2, the TREC convention) with both prompts of each
metric on a real judge (``../shared/real_judge``'s llama-server), and reports Cohen's kappa
between the two prompts and of each against the human grades. A sample is one query: its
reference answer is one of its grade-3 passages, and its chunks are ``--chunks`` other
judged passages of that query (grades 1-3 mixed).
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import os
import random
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "parity"))
from common import REPO, machine, markdown_table, write_results  # noqa: E402

sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "helpers"))

#: USD per 1M tokens, as the judges guide's example provider bills.
PRICES = {"input": 1.00, "cached_input": 0.10, "output": 4.00}
CACHE_FROM, CACHE_STEP, CHARS_PER_TOKEN = 1024, 128, 4

#: (metric, prompt option, metric settings): today's prompt first, then the cheaper option.
LAYOUTS: list[tuple[str, str, list[str]]] = [
    ("llm_with_reference", "llm_with_reference", []),
    ("llm_with_reference", "llm_with_reference_cached", []),
    ("contextual_precision", "contextual_precision", ["metric.include_reason=false"]),
    ("contextual_precision", "contextual_precision_verdicts", ["metric.include_reason=false"]),
    ("contextual_precision", "contextual_precision", []),
    ("contextual_precision", "contextual_precision_verdicts", []),
]


# ---------------------------------------------------------------------------------------------
# The bill
# ---------------------------------------------------------------------------------------------

def _flat(messages: Sequence[dict[str, Any]]) -> str:
    """The messages as one string in which a common start is a common prompt prefix."""
    return "".join(f"{m.get('role')}\x00{m.get('content') or ''}\x01" for m in messages)


def _content_chars(messages: Sequence[dict[str, Any]], flat_chars: int) -> int:
    """Characters of message content within the first ``flat_chars`` of ``_flat``."""
    n, left = 0, flat_chars
    for m in messages:
        head, content = len(str(m.get("role"))) + 1, str(m.get("content") or "")
        if left <= head:
            break
        n += min(len(content), left - head)
        left -= head + len(content) + 1
        if left <= 0:
            break
    return n


def _common(a: str, b: str) -> int:
    """Length of the common start of ``a`` and ``b`` (binary search over C comparisons)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def cached_tokens(shared_tokens: int) -> int:
    """What a provider caching from 1,024 tokens in steps of 128 serves from the cache."""
    if shared_tokens < CACHE_FROM:
        return 0
    return CACHE_FROM + (shared_tokens - CACHE_FROM) // CACHE_STEP * CACHE_STEP


def bill(bodies: Sequence[dict[str, Any]], completion_tokens: int) -> dict[str, Any]:
    """The bill of ``bodies`` (request JSON, in the order received) and the replies'
    ``completion_tokens``: tokens by kind and USD realtime and as a batch."""
    seen: list[str] = []  # the flat prompts received so far, sorted
    prompt = cached = 0
    for body in bodies:
        messages = body["messages"]
        flat = _flat(messages)
        tokens = math.ceil(sum(len(str(m.get("content") or "")) for m in messages)
                           / CHARS_PER_TOKEN)
        at = bisect.bisect_left(seen, flat)
        shared = max((_common(flat, seen[i]) for i in (at - 1, at) if 0 <= i < len(seen)),
                     default=0)  # the longest common start is with a sorted neighbour
        hit = min(cached_tokens(_content_chars(messages, shared) // CHARS_PER_TOKEN), tokens)
        prompt, cached = prompt + tokens, cached + hit
        seen.insert(at, flat)
    usd = ((prompt - cached) * PRICES["input"] + cached * PRICES["cached_input"]
           + completion_tokens * PRICES["output"]) / 1e6
    return {"requests": len(bodies), "prompt_tokens": prompt, "cached_tokens": cached,
            "completion_tokens": completion_tokens, "usd": usd, "batch_usd": usd / 2}


def adjacency(bodies: Sequence[dict[str, Any]]) -> float:
    """The share of samples whose requests arrived one after the other (no other sample's
    request between them); a sample is told by its last user message up to the chunk."""
    order = []
    for body in bodies:
        last = body["messages"][-1]["content"]
        order.append(last.split("<context", 1)[0])
    spans: dict[str, list[int]] = {}
    for i, key in enumerate(order):
        spans.setdefault(key, []).append(i)
    together = sum(1 for idx in spans.values() if idx[-1] - idx[0] + 1 == len(idx))
    return together / len(spans) if spans else 1.0


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------

def datasets(n: int) -> Iterator[tuple[str, list[dict[str, Any]], dict[Any, int]]]:
    """(name, samples, labels): the parity suite's samples (questions and answers in
    sentences) and bench_judge's (short ones, long chunks)."""
    import bench_judge
    import run_parity

    samples, labels = run_parity.make_dataset(n)
    yield ("parity", [{k: v for k, v in s.items() if k != "expected_verdicts"} for s in samples],
           {(x["question"], x["chunk"]): x["label"] for x in labels})
    rag, flat = bench_judge.make_samples(n, 5)
    yield "bench_judge", bench_judge.as_dicts(rag), {x["chunk"]: x["label"] for x in flat}


def run_layouts(n: int) -> list[dict[str, Any]]:
    """Every layout of ``LAYOUTS`` on every dataset: the bill and the scores."""
    from judge_server import JudgeServer

    from harness import evaluate

    out = []
    for name, samples, labels in datasets(n):
        scores: dict[str, list[Any]] = {}
        for metric, prompt, extra in LAYOUTS:
            with JudgeServer(labels) as judge:
                result = evaluate(samples, metric, overrides=[
                    "judge=local", f"judge.base_url={judge.base_url}", "judge.model=test-judge",
                    "judge.cache=false", "judge.max_concurrency=16", f"prompt={prompt}", *extra])
                bodies = [r["body"] for r in judge.requests if r["body"] is not None]
            stats = result.summary["judge"]
            row = {"dataset": name, "metric": metric, "prompt": prompt,
                   "settings": " ".join(extra), **bill(bodies, stats["completion_tokens"]),
                   "adjacent": adjacency(bodies) if metric == "llm_with_reference" else None,
                   "mean": result.summary.get("mean")}
            key = f"{metric} {' '.join(extra)}"
            if key in scores:
                row["same_scores"] = scores[key] == list(result.scores)
            else:
                scores[key] = list(result.scores)
            out.append(row)
            print(json.dumps(row), flush=True)
    return out


# ---------------------------------------------------------------------------------------------
# Agreement on a real judge
# ---------------------------------------------------------------------------------------------

def dl19_samples(root: Path, queries: int, chunks: int, seed: int = 0
                 ) -> tuple[list[dict[str, Any]], list[list[int]]]:
    """One sample per query that has a grade-3 passage: the question, that passage as the
    reference answer, ``chunks`` other judged passages (sampled with ``seed``); and their
    human grades; passages clipped (``clip``)."""
    corpus = {}
    with (root / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            corpus[doc["_id"]] = doc["text"]
    texts = {}
    with (root / "queries.jsonl").open(encoding="utf-8") as f:
        for line in f:
            q = json.loads(line)
            texts[q["_id"]] = q["text"]
    grades: dict[str, dict[str, int]] = {}
    for line in (root / "qrels" / "test.tsv").read_text("utf-8").splitlines()[1:]:
        qid, did, grade = line.split("\t")
        if did in corpus:
            grades.setdefault(qid, {})[did] = int(grade)
    rng = random.Random(seed)
    samples, human = [], []
    for qid in sorted(grades):
        best = sorted(d for d, g in grades[qid].items() if g == 3)
        if not best or qid not in texts:
            continue
        reference = best[0]
        others = sorted(d for d in grades[qid] if d != reference)
        by_grade = {g: [d for d in others if grades[qid][d] == g] for g in (1, 2, 3)}
        picked: list[str] = []
        while len(picked) < chunks and any(by_grade.values()):  # grades mixed, round robin
            for g in (1, 2, 3):
                if by_grade[g] and len(picked) < chunks:
                    picked.append(by_grade[g].pop(rng.randrange(len(by_grade[g]))))
        rng.shuffle(picked)
        samples.append({"id": qid, "user_input": texts[qid],
                        "reference": clip(corpus[reference], 250),
                        "retrieved_contexts": [clip(corpus[d], 300) for d in picked]})
        human.append([grades[qid][d] for d in picked])
        if len(samples) == queries:
            break
    return samples, human


def clip(text: str, most: int) -> str:
    """``text`` cut at the last word boundary within ``most`` characters (a CPU judge reads
    every token: a few long passages would take most of its time)."""
    return text if len(text) <= most else text[:most].rsplit(" ", 1)[0] + " ..."


def kappa(a: Sequence[int], b: Sequence[int]) -> float:
    """Cohen's kappa of two 0/1 labelings of the same items."""
    n = len(a)
    agree = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pa, pb = sum(a) / n, sum(b) / n
    chance = pa * pb + (1 - pa) * (1 - pb)
    return 1.0 if chance == 1 else (agree - chance) / (1 - chance)


#: The metrics and their two prompts (today's first) compared on a real judge.
PAIRS = {"llm_with_reference": ("llm_with_reference", "llm_with_reference_cached"),
         "contextual_precision": ("contextual_precision", "contextual_precision_verdicts")}


def agreement(verdicts: dict[str, list[Any]], human: list[list[int]]) -> dict[str, Any]:
    """Kappa and accuracy between two prompts' verdicts and of each against the human grades
    (grade >= 2 relevant), over the samples both prompts scored."""
    first, second = verdicts
    both = [i for i, (a, b) in enumerate(zip(verdicts[first], verdicts[second], strict=False))
            if a is not None and b is not None]
    flat = {p: [x for i in both for x in verdicts[p][i]] for p in verdicts}
    gold = [int(g >= 2) for i in both for g in human[i]]
    if not gold:
        return {"pairs_judged_by_both": 0}

    def share(a: list[int], b: list[int]) -> float:
        return sum(x == y for x, y in zip(a, b, strict=True)) / len(a)

    return {
        "pairs_judged_by_both": len(gold), "human_relevant": sum(gold),
        "kappa_between_prompts": kappa(flat[first], flat[second]),
        "agreement_between_prompts": share(flat[first], flat[second]),
        **{f"kappa_{p}_vs_human": kappa(flat[p], gold) for p in verdicts},
        **{f"accuracy_{p}_vs_human": share(flat[p], gold) for p in verdicts},
        **{f"relevant_{p}": sum(flat[p]) for p in verdicts},
    }


def run_real(url: str, queries: int, chunks: int, cache_dir: Path, metrics: Sequence[str],
             block: int) -> dict[str, Any]:
    """Both prompts of each metric on the real judge at ``url``, ``block`` queries at a time
    (results so far written after each, so a run stopped early still gives its kappa)."""
    from harness import evaluate

    data = Path(os.environ.get("HARNESS_SHARED_DATA") or REPO.parent / "shared" / "data")
    samples, human = dl19_samples(data / "trec_dl19_passage_subset", queries, chunks)
    out: dict[str, Any] = {"queries": len(samples), "pairs": sum(map(len, human))}
    for metric in metrics:
        verdicts: dict[str, list[Any]] = {p: [] for p in PAIRS[metric]}
        extra = ["metric.include_reason=false"] if metric == "contextual_precision" else []
        for prompt in PAIRS[metric]:  # one prompt at a time: the server's prefix cache holds
            for start in range(0, len(samples), block):
                result = evaluate(samples[start:start + block], metric, overrides=[
                    "judge=llama_cpp", f"judge.base_url={url}", "judge.cache=true",
                    f"judge.cache_path={cache_dir / 'verdicts.sqlite'}", f"prompt={prompt}",
                    "run.max_unscored_frac=1.0", *extra])
                verdicts[prompt] += [row.get("verdicts") for row in result.rows]
                out[metric] = {"verdicts": verdicts, **agreement(verdicts, human)}
                write_results("bench_prefix_real", {"real": out})
                print(json.dumps({metric: {k: v for k, v in out[metric].items()
                                           if k != "verdicts"}}), flush=True)
    return out


# ---------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--small", action="store_true", help="40 samples, not 200")
    parser.add_argument("--real", metavar="URL", help="a real judge's base URL (/v1)")
    parser.add_argument("--queries", type=int, default=12)
    parser.add_argument("--chunks", type=int, default=5)
    parser.add_argument("--metrics", default=",".join(PAIRS), help="for --real")
    parser.add_argument("--block", type=int, default=2, help="queries per run, for --real")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="keep the real judge's verdicts here (a rerun resumes)")
    args = parser.parse_args()
    result: dict[str, Any] = {"benchmark": "bench_prefix", "machine": machine(),
                              "prices_usd_per_1m": PRICES}
    if args.real:
        with tempfile.TemporaryDirectory() as tmp:
            result["real"] = run_real(args.real, args.queries, args.chunks,
                                      args.cache_dir or Path(tmp), args.metrics.split(","),
                                      args.block)
        print(f"results: {write_results('bench_prefix_real', result)}")
        return
    n = 40 if args.small else 200
    result["n_samples"], result["chunks"] = n, 5
    rows = run_layouts(n)
    result["rows"] = rows
    base = {(r["dataset"], r["metric"], r["settings"]): r["usd"] for r in rows
            if r["prompt"] in ("llm_with_reference", "contextual_precision")}
    table = []
    for r in rows:
        today = base[(r["dataset"], r["metric"], r["settings"])]
        table.append([r["dataset"], r["metric"], r["prompt"], r["settings"] or "-",
                      r["requests"], r["prompt_tokens"], r["cached_tokens"],
                      r["completion_tokens"], f"{r['usd']:.4f}", f"{r['usd'] / today:.2f}",
                      f"{r['batch_usd'] / today:.2f}"])
    print(markdown_table(["data", "metric", "prompt", "settings", "requests", "prompt tok",
                          "cached tok", "output tok", "USD", "x today", "batch x today"],
                         table))
    print(f"results: {write_results('bench_prefix', result)}")


if __name__ == "__main__":
    main()
