"""LLM-judge throughput against the test judge: wall time vs the physical limit, and
client CPU per judge call, for ours and for a straightforward use of the openai SDK.

The test judge runs in its own process, answers after ``--latency-ms`` on average (Gaussian
jitter of ``--latency-sd-ms``, 25 % of it by default, as real servers vary) and serves at most
``--concurrency`` requests at once, so the fastest any client can finish N calls is
``N * latency / concurrency`` (the physical limit). CPU time is this process's
(``time.process_time``: every thread, the judge loop included).

    .venv/bin/python benchmarks/bench_judge.py            # 200 samples x 5 chunks
    .venv/bin/python benchmarks/bench_judge.py --small    # 40 samples
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from common import (
    PYTHON,
    REPO,
    forget_pacing,
    judge_bench_parser,
    machine,
    markdown_table,
    write_results,
)

sys.path.insert(0, str(REPO))


def start_server(
    labels: Path, latency_ms: float, concurrency: int | None, *extra: str
) -> tuple[subprocess.Popen[str], str]:
    """Start the test judge in its own process (``extra``: more of its command-line knobs,
    e.g. ``--latency-sd-ms 50``); return it and its base URL."""
    knobs = ["--latency-ms", str(latency_ms), *extra]
    if concurrency is not None:
        knobs += ["--concurrency", str(concurrency)]
    proc = subprocess.Popen(
        [PYTHON, str(REPO / "tests" / "helpers" / "judge_server.py"), "--port", "0",
         "--labels", str(labels), *knobs],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("READY "):
        err = proc.stderr.read() if proc.stderr else ""
        raise RuntimeError(f"judge server did not start: {line!r} {err}")
    return proc, line.split(" ", 1)[1]


@contextlib.contextmanager
def judge_serving(labels: list[dict[str, Any]], args: Any) -> Iterator[tuple[str, Path]]:
    """The test judge answering from ``labels`` with the benchmark's latency, jitter and
    slots (``judge_bench_parser``'s options), stopped afterwards: its base URL and a
    temporary folder."""
    with tempfile.TemporaryDirectory() as tmp:
        labels_path = Path(tmp) / "labels.json"
        labels_path.write_text(json.dumps(labels))
        server, base_url = start_server(labels_path, args.latency_ms, args.concurrency,
                                        "--latency-sd-ms", str(args.latency_sd_ms))
        try:
            yield base_url, Path(tmp)
        finally:
            stop_server(server)


def stop_server(proc: subprocess.Popen[str]) -> dict[str, Any]:
    """Stop the test judge; return its counters (``STATS`` on its stderr)."""
    proc.terminate()
    _, err = proc.communicate(timeout=10)
    for line in err.splitlines():
        if line.startswith("STATS "):
            return dict(json.loads(line[len("STATS "):]))
    return {}


def make_samples(n: int, chunks: int) -> tuple[list[Any], list[dict[str, Any]]]:
    """``n`` samples of ``chunks`` chunks with alternating labels."""
    from harness.core.types import RagSample

    samples, labels = [], []
    for i in range(n):
        texts = [
            f"Passage {k} retrieved for question {i}: " + "lorem ipsum " * 20
            for k in range(chunks)
        ]
        for k, t in enumerate(texts):
            labels.append({"chunk": t, "label": int((i + k) % 3 == 0)})
        samples.append(RagSample(id=str(i), user_input=f"Question number {i}?",
                                 reference=f"Answer {i}.", response=f"Answer {i}.",
                                 retrieved_contexts=tuple(texts)))
    return samples, labels


def as_dicts(samples: list[Any]) -> list[dict[str, Any]]:
    """``RagSample`` objects as the dicts a user hands to ``evaluate``."""
    return [{"id": s.id, "user_input": s.user_input, "reference": s.reference,
             "response": s.response, "retrieved_contexts": list(s.retrieved_contexts)}
            for s in samples]


def run_ours(
    base_url: str, samples: list[Any], metric_name: str, concurrency: int,
    pacing: str = "adaptive", timeout: float = 60.0, model: str = "test-judge",
    require_all: bool = True,
) -> dict[str, Any]:
    """Our metric, as the runner drives it (one batch); with ``require_all`` every sample
    must be scored (a real model, or a limit that hits a rate limit, may leave some
    unscored: counted in ``unscored``)."""
    import yaml

    from harness.judges.openai_chat import OpenAIJudge
    from harness.metrics.contextual_precision import ContextualPrecision
    from harness.metrics.llm import LLMContextPrecision
    from harness.prompts.template import PromptTemplate

    data = yaml.safe_load((REPO / "conf" / "prompt" / f"{metric_name}.yaml").read_text())
    data.pop("_target_")
    prompt = PromptTemplate(**data)
    judge = OpenAIJudge(model, base_url=base_url, api_key_env=None,
                        max_concurrency=concurrency, pacing=pacing,  # type: ignore[arg-type]
                        timeout=timeout, cache=False)  # measure calls, not cache hits
    cls = ContextualPrecision if metric_name == "contextual_precision" else LLMContextPrecision
    metric = cls(metric_name, judge, prompt)
    metric.preflight()
    cpu0, t0 = time.process_time(), time.perf_counter()
    results = metric.score_batch(samples)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    metric.close()
    unscored = [r.error for r in results if r.score is None]
    assert not (require_all and unscored), unscored[:3]
    return {"wall_s": wall, "cpu_s": cpu, "calls": judge.stats.calls,
            "scores": [r.score for r in results], "stats": judge.stats.as_dict(),
            "unscored": len(unscored)}


async def _plain(base_url: str, samples: list[Any], concurrency: int) -> int:
    """A straightforward client: ``chat.completions.create`` with a JSON schema, default
    transport, pydantic responses, a semaphore."""
    import openai

    from harness.judges.openai_chat import SCHEMAS

    client = openai.AsyncOpenAI(base_url=base_url, api_key="x")
    gate = asyncio.Semaphore(concurrency)
    fmt = {"type": "json_schema",
           "json_schema": {"name": "v", "strict": True, "schema": SCHEMAS["pointwise"]}}

    async def one(question: str, chunk: str) -> int:
        async with gate:
            r = await client.chat.completions.create(
                model="test-judge", temperature=0,
                messages=[{"role": "system", "content": "Judge."},
                          {"role": "user",
                           "content": f"<question>\n{question}\n</question>\n\n"
                                      f"<context>\n{chunk}\n</context>"}],
                response_format=fmt,  # type: ignore[arg-type]
            )
        return int(json.loads(r.choices[0].message.content or "{}")["verdict"])

    tasks = [one(s.user_input, c) for s in samples for c in s.retrieved_contexts]
    out = await asyncio.gather(*tasks)
    await client.close()
    return len(out)


def run_plain(base_url: str, samples: list[Any], concurrency: int) -> dict[str, Any]:
    cpu0, t0 = time.process_time(), time.perf_counter()
    calls = asyncio.run(_plain(base_url, samples, concurrency))
    return {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - cpu0, "calls": calls}


def main() -> None:
    parser = judge_bench_parser(__doc__ or "")
    args = parser.parse_args()
    n = 40 if args.small else 200
    samples, labels = make_samples(n, 5)
    runs: dict[str, list[dict[str, Any]]] = {"ours_pointwise": [], "plain_sdk_pointwise": [],
                                              "ours_listwise_with_reason": []}
    with judge_serving(labels, args) as (base_url, _):
        for _ in range(args.rounds):
            if not args.warm:
                forget_pacing()
            runs["ours_pointwise"].append(
                run_ours(base_url, samples, "llm_with_reference", args.concurrency))
            runs["plain_sdk_pointwise"].append(run_plain(base_url, samples, args.concurrency))
            if not args.warm:
                forget_pacing()
            runs["ours_listwise_with_reason"].append(
                run_ours(base_url, samples, "contextual_precision", args.concurrency))
    rows, result = [], {"benchmark": "bench_judge", "machine": machine(), "n_samples": n,
                        "chunks": 5, "latency_ms": args.latency_ms,
                        "latency_sd_ms": args.latency_sd_ms,
                        "server_concurrency": args.concurrency,
                        "statistic": f"best of {args.rounds} rounds",
                        "pacing_memory": "warm" if args.warm else "cold", "runs": {}}
    for name, rs in runs.items():
        best = min(rs, key=lambda r: r["wall_s"])
        calls = best["calls"]
        limit = calls * args.latency_ms / 1000 / args.concurrency
        cpu_ms = min(r["cpu_s"] for r in rs) / calls * 1000
        result["runs"][name] = {"wall_s": best["wall_s"], "calls": calls, "limit_s": limit,
                                "wall_over_limit": best["wall_s"] / limit,
                                "cpu_ms_per_call": cpu_ms}
        rows.append([name, calls, f"{best['wall_s']:.2f}", f"{limit:.2f}",
                     f"{best['wall_s'] / limit:.2f}×", f"{cpu_ms:.2f}"])
    headers = ["client", "calls", "wall s", "limit s", "wall / limit", "CPU ms / call"]
    print(markdown_table(headers, rows))
    print(f"results: {write_results('bench_judge', result)}")


if __name__ == "__main__":
    main()
