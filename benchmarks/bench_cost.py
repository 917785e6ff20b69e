"""What will it cost? Each judged variant's bill, measured by the judge, for today's realtime
run, ``judge.batch=true``, and a batch with the cheaper prompt option; a dry run before each.

One run of the real CLI (``python -m harness``, a process each) per lane, against the
project's test judge (``tests/helpers/judge_server.py``, in this process, on 127.0.0.1),
which bills as OpenAI documents it: a token is 4 characters of message content, a prompt's
cached tokens are its prefix shared with any earlier prompt from 1,024 tokens in steps of
128, USD 1.00 / 0.10 / 4.00 per 1M input / cached input / output tokens, a Batch API line
at half that; it writes only what the request's reply schema allows (no reasons for a
verdicts-only prompt). The bill read is the SERVER's (``stats.billed_*``), reset with its
prompt cache before each lane; every lane has its own fresh verdict cache
(``judge.cache_path``), so nothing is answered from an earlier lane.

Data: 200 samples x 5 chunks from the parity suite's generator
(``benchmarks/parity/run_parity.py``'s ``make_dataset``, as ``bench_prefix.py`` uses):
questions and answers in sentences, every relevance pattern of 5 chunks. Its realtime prompt
tokens are within 4 % of the reference bills measured before batch mode (404,522 for
``llm_with_reference``'s 1,000 requests, 81,879 for ``contextual_precision``'s 200), where
``bench_judge.py``'s samples (short questions, long chunks) give 42 % more for
``contextual_precision``.

For each variant: (d) ``run.dry_run=true`` before each lane (it must send nothing; its
``estimate.json`` prompt tokens against what the server then billed), (a) today's realtime
run, (b) ``judge.batch=true``, (c) batch with the prompt option of that variant
(``prompt=llm_with_reference_cached``, ``prompt=contextual_precision_verdicts``; none exists
for ``llm_without_reference``). Every sample's score in ``samples.jsonl`` must equal the
realtime run's, exactly; the run's own ``judge.bill`` must equal the server's. It prints a
markdown table (ratios to (a) and to the reference bills, USD 0.50 and 0.19: its
"x reference" column) and exits 1
when a check or the claim (batch with the option at most 0.40x realtime, for
``llm_with_reference`` and ``contextual_precision``) fails.

    .venv/bin/python benchmarks/bench_cost.py             # 200 samples x 5 chunks, ~3 min
    .venv/bin/python benchmarks/bench_cost.py --samples 40
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "parity"))
from common import PYTHON, REPO, child_env, machine, markdown_table, write_results  # noqa: E402

sys.path.insert(0, str(REPO / "tests" / "helpers"))

#: The claim: batch with the prompt option bills at most this share of today's realtime run.
CLAIM = 0.40
#: A dry run's prompt tokens are within this share of what the server billed.
DRY_TOLERANCE = 0.15
#: Seconds between two looks at a running batch (the test judge ends one at once).
POLL = 0.05


@dataclass(frozen=True)
class Variant:
    """A judged variant as run: its metric, settings, cheaper prompt option (``None``: it
    has none), and its reference realtime bill (USD, prompt tokens) where there is one."""

    label: str
    metric: str
    settings: tuple[str, ...] = ()
    option: str | None = None
    baseline_usd: float | None = None
    baseline_prompt_tokens: int | None = None
    claimed: bool = False


VARIANTS = (
    Variant("`llm_with_reference`", "llm_with_reference", (), "llm_with_reference_cached",
            0.50, 404_522, claimed=True),
    Variant("`llm_without_reference`", "llm_without_reference"),
    Variant("`contextual_precision`, `include_reason=false`", "contextual_precision",
            ("metric.include_reason=false",), "contextual_precision_verdicts", 0.19, 81_879,
            claimed=True),
    Variant("`contextual_precision` (default: with its explanation call)",
            "contextual_precision", (), "contextual_precision_verdicts", claimed=True),
)

#: The server's bill, as read from its counters.
BILL = ("requests", "prompt_tokens", "cached_tokens", "completion_tokens", "usd")


@dataclass
class Lane:
    """One lane's outcome: the server's bill, the dry run's estimate, the checks."""

    variant: str
    lane: str
    args: list[str]
    bill: dict[str, Any] = field(default_factory=dict)
    batches: int = 0
    wall_s: float = 0.0
    dry_requests_sent: int = 0
    dry_prompt_tokens: int = 0
    dry_requests: int = 0
    scores: dict[str, Any] = field(default_factory=dict)
    harness_bill: dict[str, Any] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def dry_off(self) -> float:
        """The dry run's prompt tokens over the server's, minus one."""
        billed = self.bill["prompt_tokens"]
        return self.dry_prompt_tokens / billed - 1 if billed else float("inf")


def write_dataset(n: int, folder: Path) -> tuple[Path, dict[Any, int]]:
    """``n`` samples x 5 chunks of the parity generator as a JSONL file, and their labels."""
    import run_parity

    samples, labels = run_parity.make_dataset(n)
    path = folder / "samples.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for i, s in enumerate(samples):
            row = {k: v for k, v in s.items() if k != "expected_verdicts"}
            f.write(json.dumps({"id": f"q{i:04d}", **row}) + "\n")
    return path, {(x["question"], x["chunk"]): x["label"] for x in labels}


def cli(args: list[str], out: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    """``python -m harness ARGS`` into ``out``: the process and its wall seconds."""
    t0 = time.perf_counter()
    done = subprocess.run(
        [PYTHON, "-m", "harness", *args, f"hydra.run.dir={out}", "run.progress=false"],
        cwd=out.parent, env=child_env(), capture_output=True, text=True, timeout=900)
    return done, time.perf_counter() - t0


def server_bill(stats: dict[str, Any]) -> dict[str, Any]:
    """The server's bill from its counters."""
    return {"requests": stats["billed_requests"], "prompt_tokens": stats["billed_prompt_tokens"],
            "cached_tokens": stats["billed_cached_tokens"],
            "completion_tokens": stats["billed_completion_tokens"], "usd": stats["billed_usd"],
            "batch_requests": stats["batch_billed_requests"]}


def run_lane(server: Any, variant: Variant, lane: str, args: list[str], folder: Path) -> Lane:
    """The dry run, then the run, of one lane in ``folder`` (new), each from a fresh server
    bill and prompt cache, with the lane's own (new) verdict cache."""
    out = Lane(variant.label, lane, args)
    folder.mkdir()
    full = [*args, f"judge.cache_path={folder / 'verdicts.sqlite'}"]
    server.reset_stats()
    server.clear_prefix_cache()
    dry, _ = cli([*full, "run.dry_run=true"], folder / "dry")
    stats = server.stats.snapshot()
    out.dry_requests_sent = (stats["requests"] + stats["files_uploaded"]
                             + stats["batches_created"] + stats["batch_polls"])
    if dry.returncode != 0:
        out.problems.append(f"dry run exit {dry.returncode}: {dry.stderr.strip()[-300:]}")
        return out
    estimate = json.loads((folder / "dry" / "estimate.json").read_text("utf-8"))
    out.dry_prompt_tokens, out.dry_requests = estimate["prompt_tokens"], estimate["requests"]
    if out.dry_requests_sent:
        out.problems.append(f"the dry run sent {out.dry_requests_sent} requests")

    server.reset_stats()
    server.clear_prefix_cache()
    real, out.wall_s = cli(full, folder / "run")
    if real.returncode != 0:
        out.problems.append(f"exit {real.returncode}: {real.stderr.strip()[-300:]}")
        return out
    stats = server.stats.snapshot()
    out.bill, out.batches = server_bill(stats), stats["batches_created"]
    rows = [json.loads(x) for x in
            (folder / "run" / "samples.jsonl").read_text("utf-8").splitlines()]
    out.scores = {r["id"]: r["score"] for r in rows}
    judge = json.loads((folder / "run" / "summary.json").read_text("utf-8"))["judge"]
    out.harness_bill = judge["bill"]
    mine = judge["bill"]
    theirs = (mine["requests"]["total"], mine["requests"]["batch"],
              mine["prompt_tokens"]["total"], mine["prompt_tokens"]["cached"],
              mine["completion_tokens"])
    billed = (out.bill["requests"], out.bill["batch_requests"], out.bill["prompt_tokens"],
              out.bill["cached_tokens"], out.bill["completion_tokens"])
    if theirs != billed:
        out.problems.append(f"the run's judge.bill {theirs} is not the server's {billed}")
    if abs(out.dry_off()) > DRY_TOLERANCE:
        out.problems.append(f"dry run prompt tokens {out.dry_prompt_tokens:,} are "
                            f"{out.dry_off():+.1%} off the server's {out.bill['prompt_tokens']:,}")
    if out.dry_requests != out.bill["requests"]:
        out.problems.append(f"dry run requests {out.dry_requests} != the server's "
                            f"{out.bill['requests']}")
    return out


def lanes_of(variant: Variant, data: Path, base_url: str) -> list[tuple[str, list[str]]]:
    """(lane, CLI arguments) of a variant: realtime, batch, batch with its option."""
    common = [f"metric={variant.metric}", "dataset=jsonl", f"dataset.path={data}",
              "judge=local", f"judge.base_url={base_url}", "judge.model=test-judge",
              "tracking=none", *variant.settings]
    batch = ["judge.batch=true", f"judge.batch_poll={POLL}"]
    out = [("realtime", common), ("batch", [*common, *batch])]
    if variant.option:
        out.append((f"batch + `prompt={variant.option}`",
                    [*common, *batch, f"prompt={variant.option}"]))
    return out


def measure(n: int) -> list[Lane]:
    """Every lane of every variant on ``n`` samples x 5 chunks."""
    from judge_server import JudgeServer

    lanes: list[Lane] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data, labels = write_dataset(n, work)
        with JudgeServer(labels) as server:
            for i, variant in enumerate(VARIANTS):
                realtime: Lane | None = None
                for j, (lane, args) in enumerate(lanes_of(variant, data, server.base_url)):
                    got = run_lane(server, variant, lane, args, work / f"{i}-{j}")
                    if not got.bill:
                        pass  # failed: said in its problems
                    elif realtime is None:
                        realtime = got
                        unscored = [k for k, v in got.scores.items() if v is None]
                        if unscored or len(got.scores) != n:
                            got.problems.append(f"{len(unscored)} unscored, "
                                                f"{len(got.scores)} rows of {n}")
                    elif got.scores != realtime.scores:
                        differ = [k for k in realtime.scores
                                  if got.scores.get(k) != realtime.scores[k]]
                        got.problems.append(f"{len(differ)} samples scored otherwise than "
                                            f"realtime, e.g. {differ[:3]}")
                    lanes.append(got)
                    print(json.dumps({k: v for k, v in vars(got).items()
                                      if k not in ("scores", "args", "harness_bill")}),
                          flush=True)
    return lanes


def table(lanes: list[Lane]) -> tuple[str, list[str]]:
    """The markdown table, and the claim's verdicts (one line each)."""
    by_variant = {v.label: v for v in VARIANTS}
    realtime = {x.variant: x for x in lanes if x.lane == "realtime"}
    rows, claims = [], []
    for x in lanes:
        v, base = by_variant[x.variant], realtime[x.variant]
        if not x.bill:
            rows.append([v.label, x.lane, "failed: see below", *[""] * 8])
            continue
        ratio = x.bill["usd"] / base.bill["usd"]
        reference = f"{x.bill['usd'] / v.baseline_usd:.2f}" if v.baseline_usd else "-"
        same = "-" if x is base else ("yes" if x.scores == base.scores else "NO")
        rows.append([
            v.label, x.lane,
            f"{x.bill['requests']:,}", f"{x.bill['prompt_tokens']:,}",
            f"{x.bill['cached_tokens']:,}", f"{x.bill['completion_tokens']:,}",
            f"{x.bill['usd']:.4f}", f"{ratio:.2f}", reference,
            f"{x.dry_prompt_tokens:,} ({x.dry_off():+.1%})", same])
        if v.claimed and x.lane.startswith("batch + "):
            ok = ratio <= CLAIM and x.scores == base.scores
            claims.append(f"{'holds' if ok else 'FAILS'}: {v.label}: {x.lane} bills "
                          f"{ratio:.3f}x realtime (claim: at most {CLAIM:.2f}x), same scores: "
                          f"{x.scores == base.scores}")
    headers = ["variant", "run", "requests", "prompt tokens", "cached", "completion tokens",
               "USD", "x realtime", "x reference", "dry run's prompt tokens",
               "scores = realtime"]
    return markdown_table(headers, rows), claims


#: Cached-input prices as a share of the input price, at which the cached prompt is priced
#: against today's (the test judge's 0.1x; gpt-4.1-mini's 0.25x; gpt-4o-mini's 0.5x; 1.0x: a
#: provider that caches nothing).
CACHED_SHARES = (0.1, 0.25, 0.5, 1.0)


def cached_prompt_prices(lanes: list[Lane]) -> list[str]:
    """From the measured tokens, what a lane with cached tokens costs against realtime today
    at other cached-input prices, and the price share at which it saves nothing (prices
    1 / f / 4 per token of input / cached input / output; a batch halves both sides)."""
    out = []
    realtime = {x.variant: x for x in lanes if x.lane == "realtime" and x.bill}
    for x in lanes:
        base = realtime.get(x.variant)
        if not x.bill or not x.bill["cached_tokens"] or base is None:
            continue
        today = base.bill["prompt_tokens"] + 4 * base.bill["completion_tokens"]
        paid = (x.bill["prompt_tokens"] - x.bill["cached_tokens"]
                + 4 * x.bill["completion_tokens"])
        even = (today - paid) / x.bill["cached_tokens"]
        ratios = ", ".join(f"{(paid + f * x.bill['cached_tokens']) / today:.2f}x at {f:g}x"
                           for f in CACHED_SHARES)
        out.append(f"{x.variant}, {x.lane}: against realtime today at the same mode, "
                   f"{ratios} the input price for cached input; it saves nothing from "
                   f"{even:.3f}x")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--samples", type=int, default=200, help="samples of 5 chunks")
    args = parser.parse_args()
    t0 = time.perf_counter()
    lanes = measure(args.samples)
    text, claims = table(lanes)
    command = shlex.join([".venv/bin/python", "benchmarks/bench_cost.py", *sys.argv[1:]])
    where = machine()
    print(f"\n{args.samples} samples x 5 chunks; {where['date']}; {where['cpus']} CPUs, "
          f"Python {where['python']}; {time.perf_counter() - t0:.0f} s; command: {command}\n")
    print(text)
    baselines = [f"{v.label}: realtime {x.bill['prompt_tokens']:,} prompt tokens, "
                 f"{x.bill['prompt_tokens'] / v.baseline_prompt_tokens:.3f}x the reference's "
                 f"{v.baseline_prompt_tokens:,}"
                 for v in VARIANTS for x in lanes
                 if x.variant == v.label and x.lane == "realtime" and x.bill
                 and v.baseline_prompt_tokens]
    problems = [f"{x.variant}, {x.lane}: {p}" for x in lanes for p in x.problems]
    prices = cached_prompt_prices(lanes)
    print("\n" + "\n".join([*baselines, *prices, *claims, *problems]))
    result = {"benchmark": "bench_cost", "machine": where, "command": command,
              "n_samples": args.samples, "chunks": 5, "claims": claims, "problems": problems,
              "cached_prompt_prices": prices,
              "table": text, "lanes": [{k: v for k, v in vars(x).items() if k != "scores"}
                                       for x in lanes]}
    print(f"results: {write_results('bench_cost', result)}")
    return 1 if problems or any(c.startswith("FAILS") for c in claims) else 0


if __name__ == "__main__":
    sys.exit(main())
