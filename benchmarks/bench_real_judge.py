"""The harness against REAL judge servers (not in CI): llama.cpp's llama-server and
llama-cpp-python's server, serving Qwen2.5-Coder-1.5B-Instruct on this machine's CPU.

Build them once with ``../shared/real_judge/setup.sh`` (``SECOND_SERVER=1`` for the second);
then ``python benchmarks/bench_real_judge.py``. For each server it measures, with the default
settings of the matching preset (``judge=llama_cpp``, ``judge=llama_cpp_python``):

* the server's own sequential rate (one request at a time) and the best fixed concurrency
  found by hand (``judge.pacing=fixed``, 1, 2, 4, 8 in flight), on the first samples;
* every LLM variant on the bundled sample: judgements, requests sent, retries, unscored
  samples, tasks the server cancelled (llama-server's log), judgements per second;
* (llama-server) ``task=judge_agreement`` on TREC DL19 and DBpedia-Entity pairs, Cohen's
  kappa per shipped pointwise prompt.

Every run gets a fresh verdict cache, so every judgement is really asked. Results go to
``benchmarks/out/bench_real_judge.json`` and a markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import PYTHON, REPO, child_env, machine, markdown_table, write_results  # noqa: E402

VARIANTS = ("llm_with_reference", "llm_without_reference", "contextual_precision")
PROMPTS = ("query_relevance", "llm_without_reference")


class Server:
    """One real server on 127.0.0.1, started and stopped by this script."""

    def __init__(self, kind: str, root: Path, port: int) -> None:
        self.kind, self.root, self.port = kind, root, port
        self.log = root / "logs" / f"bench-{kind}-{port}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.pid: int | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def preset(self) -> str:
        return {"llama_server": "llama_cpp", "llama_cpp_python": "llama_cpp_python"}[self.kind]

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        model = self.root / "models" / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
        if self.kind == "llama_server":
            cmd = [
                str(self.root / "llama-build" / "bin" / "llama-server"), "-m", str(model),
                "--alias", "qwen2.5-coder-1.5b", "--host", "127.0.0.1", "--port", str(self.port),
                "-t", "2", "-c", "16384", "-np", "4", "--no-webui", "--metrics",
            ]
        else:
            cmd = [
                str(self.root / "venv-lcp" / "bin" / "python"), "-m", "llama_cpp.server",
                "--model", str(model), "--model_alias", "qwen2.5-coder-1.5b",
                "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", "4096",
                "--n_threads", "2",
            ]
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"{self.kind} exited; see {self.log}")
            try:
                urllib.request.urlopen(f"{self.base_url}/models", timeout=2)
                return
            except OSError:
                time.sleep(1)
        raise SystemExit(f"{self.kind} did not start in 300 s; see {self.log}")

    def cancelled(self) -> int | None:
        """Tasks the server cancelled so far (llama-server logs each one)."""
        if self.kind != "llama_server":
            return None
        return self.log.read_text(errors="replace").count("cancel task")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def run_cli(args: list[str], tmp: Path, tag: str, timeout: float) -> dict[str, Any]:
    """One ``python -m harness`` run with its own output folder and fresh verdict cache."""
    out = tmp / tag
    argv = [
        PYTHON, "-m", "harness", *args, "tracking=none", f"hydra.run.dir={out}",
        f"judge.cache_path={tmp / (tag + '.sqlite')}",
    ]
    start = time.perf_counter()
    env = child_env()
    env.setdefault("HARNESS_SHARED_DATA", str(REPO.parent / "shared" / "data"))
    proc = subprocess.run(argv, cwd=tmp, env=env, capture_output=True, text=True,
                          timeout=timeout)
    wall = time.perf_counter() - start
    summary_path = out / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    return {"rc": proc.returncode, "wall_s": wall, "summary": summary,
            "stderr_tail": proc.stderr[-1500:], "stdout_tail": proc.stdout[-1500:]}


def judge_stats(summary: dict[str, Any]) -> dict[str, Any]:
    return summary.get("judge") or {}


def row_of(server: Server, label: str, result: dict[str, Any], cancelled: int | None) -> dict:
    s = result["summary"]
    stats = judge_stats(s)
    judgements = int(stats.get("cache_misses", 0)) + int(stats.get("cache_hits", 0))
    requests = int(stats.get("requests", 0))
    duration = s.get("duration_s") or result["wall_s"]
    return {
        "server": server.kind, "run": label, "rc": result["rc"],
        "samples": s.get("n_samples"), "unscored": s.get("n_unscored"),
        "judgements": judgements, "requests": requests,
        "requests_per_judgement": round(requests / judgements, 3) if judgements else None,
        "retries": stats.get("retries"), "cancelled": cancelled,
        "duration_s": round(duration, 1),
        "judgements_per_s": round(judgements / duration, 3) if duration else None,
        "mean": s.get("mean"), "peak_in_flight": stats.get("peak_in_flight"),
        "final_limit": stats.get("final_limit"),
        "served_model": (s.get("judge") or {}).get("served_model"),
    }


def bench_server(server: Server, tmp: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    base = [f"judge={server.preset}", f"judge.base_url={server.base_url}"]

    def run(label: str, extra: list[str], timeout: float = 1800) -> dict[str, Any]:
        before = server.cancelled()
        result = run_cli([*base, *extra], tmp, f"{server.kind}-{label}", timeout)
        after = server.cancelled()
        row = row_of(server, label, result,
                     None if before is None or after is None else after - before)
        if result["rc"] not in (0,):
            row["error"] = (result["stderr_tail"] or result["stdout_tail"])[-400:]
        rows.append(row)
        if not label.startswith("agreement"):
            print(json.dumps(row), flush=True)
        return row

    hand = [int(c) for c in args.hand.split(",") if c]
    for c in hand:
        run(f"fixed-c{c}", ["metric=llm_with_reference", f"run.limit={args.hand_limit}",
                            "judge.pacing=fixed", f"judge.max_concurrency={c}"])
    if hand:
        run("adaptive-hand-subset",
            ["metric=llm_with_reference", f"run.limit={args.hand_limit}"])
    for variant in filter(None, args.variants.split(",")):
        run(variant, [f"metric={variant}"] + ([f"run.limit={args.limit}"] if args.limit else []))
    if server.kind == "llama_server" and args.pairs:
        for dataset in ("trec_dl19", "dbpedia_entity"):
            for prompt in args.prompts.split(","):
                name = Path(prompt).stem
                choice = ([f"prompt={prompt}"] if name == prompt
                          else ["prompt=file", f"prompt.path={Path(prompt).resolve()}"])
                row = run(f"agreement-{dataset}-{name}", [
                    "task=judge_agreement", f"dataset={dataset}", *choice,
                    f"run.limit={args.pairs}",
                ])
                summary = json.loads(
                    (tmp / f"{server.kind}-agreement-{dataset}-{name}" / "summary.json")
                    .read_text()
                ) if row["rc"] == 0 else {}
                for key in ("cohen_kappa", "accuracy", "pairs", "unjudged_pairs"):
                    row[key] = summary.get(key)
                print(json.dumps(row), flush=True)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", type=Path,
                   default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
                   / "real-judge")
    p.add_argument("--servers", default="llama_server,llama_cpp_python")
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--limit", type=int, default=0, help="samples per variant (0: all 30)")
    p.add_argument("--hand", default="1,2,4,8", help="fixed concurrencies tried by hand")
    p.add_argument("--hand-limit", type=int, default=8)
    p.add_argument("--pairs", type=int, default=6, help="queries per agreement run (0: skip)")
    p.add_argument("--prompts", default=",".join(PROMPTS),
                   help="pointwise prompts for the agreement runs (names or prompt files)")
    args = p.parse_args()

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for port, kind in enumerate(args.servers.split(","), start=8090):
            server = Server(kind, args.dir, port)
            server.start()
            try:
                rows += bench_server(server, Path(tmp), args)
            finally:
                server.stop()
    write_results("bench_real_judge", {"machine": machine(), "args": vars(args) | {
        "dir": str(args.dir)}, "rows": rows})
    cols = ["server", "run", "rc", "samples", "unscored", "judgements", "requests",
            "retries", "cancelled", "duration_s", "judgements_per_s", "peak_in_flight",
            "pairs", "accuracy", "cohen_kappa"]
    print(markdown_table(cols, [[r.get(c, "") for c in cols] for r in rows]))


if __name__ == "__main__":
    main()
