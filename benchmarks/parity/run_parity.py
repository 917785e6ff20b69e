"""Parity suite: our LLM-judged variants against ragas 0.4.3 and the newest deepeval.

NOT run by CI. Usage (from the repository root)::

    python benchmarks/parity/run_parity.py [--n 200] [--concurrency 16] [--venv-dir DIR]
                                           [--no-results-md]

1. Creates two throwaway virtual environments in a temporary folder (or ``--venv-dir``, kept
   for reuse) and pip-installs ``ragas==0.4.3`` in one and ``deepeval`` (newest) in the other.
2. Generates a deterministic dataset (``--n`` samples x 5 chunks, every one of the 32
   relevance patterns, in a shuffled order) and its labels file.
3. Runs, each in its own subprocess, one after another:
   * harness ``llm_with_reference`` and ``contextual_precision`` against the project's test
     judge (``tests/helpers/judge_server.py``, a subprocess, one per run, with the labels file);
   * ragas ``LLMContextPrecisionWithReference`` and deepeval ``ContextualPrecisionMetric``
     against ``peer_judge.py`` (same labels; it recognises the chunk texts inside the peers'
     own prompts, which lack the tags the test judge reads).
4. Compares per-sample scores by Python ``repr`` and verdicts, lists every difference with
   its explanation, and records wall time, CPU time (user+sys of the runner process and its
   children, from ``os.wait4``) and judge requests.
5. Writes ``benchmarks/RESULTS.md`` (unless ``--no-results-md``) and
   ``benchmarks/out/parity.json`` (git-ignored).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
VENV_PY = REPO / ".venv" / "bin" / "python"
PYTHON = str(VENV_PY) if VENV_PY.exists() else sys.executable
RESULTS_MD = REPO / "benchmarks" / "RESULTS.md"
OUT_JSON = REPO / "benchmarks" / "out" / "parity.json"

# ragas 0.4.3 imports langchain_community.chat_models.vertexai, which langchain-community
# 0.4 removed: a plain `pip install ragas==0.4.3` fails at `import ragas`; pin it below 0.4.
PEERS = {"ragas": ["ragas==0.4.3", "langchain-community<0.4"], "deepeval": ["deepeval"]}

# ---------------------------------------------------------------------------------------------
# Dataset
# ---------------------------------------------------------------------------------------------

_ENTITIES = ["Lake Aralen", "Mount Quorra", "the Veldt Bridge", "Port Sennim", "the Ilsa Canal",
             "Fort Brannoch", "the Oduro Library", "Cape Mirrow", "the Tessel Dam", "Halvik Tower"]
_ATTRS = ["height", "founding year", "length", "population", "architect", "depth", "owner"]
_FILLER = ["local markets open early on weekdays", "the regional train runs every hour",
           "a festival of lanterns is held each autumn", "winter storms close the upper roads",
           "the museum shop sells hand-painted maps", "fishing boats leave before sunrise",
           "an old ferry line was retired long ago", "the botanical garden grows rare ferns"]


def make_dataset(n: int, seed: int = 20250101) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``n`` samples x 5 chunks; sample i gets relevance pattern perm[i] % 32 (all 32 patterns,
    shuffled). Chunk texts are ASCII without quotes or backslashes (ragas embeds them with
    json.dumps) and each carries a unique fixed-width tag, so none is a substring of another."""
    rng = random.Random(seed)
    patterns = [p % 32 for p in range(n)]
    rng.shuffle(patterns)
    samples, labels = [], []
    for i, pat in enumerate(patterns):
        ent, attr = rng.choice(_ENTITIES), rng.choice(_ATTRS)
        value = rng.randint(10, 9999)
        question = f"What is the {attr} of {ent}? (case {i:04d})"
        reference = f"The {attr} of {ent} is {value}."
        response = f"I believe the {attr} of {ent} is {value}."
        verdicts = [(pat >> (4 - k)) & 1 for k in range(5)]
        chunks = []
        for k, v in enumerate(verdicts):
            tag = f"[doc {i:04d}-{k}]"
            if v:
                text = (f"{tag} Records state that the {attr} of {ent} is {value}; "
                        f"{rng.choice(_FILLER)}.")
            else:
                other = rng.choice([e for e in _ENTITIES if e != ent])
                text = (f"{tag} {other} is known because {rng.choice(_FILLER)} and "
                        f"{rng.choice(_FILLER)}.")
            chunks.append(text)
            labels.append({"chunk": text, "question": question, "label": v})
        samples.append({"user_input": question, "reference": reference, "response": response,
                        "retrieved_contexts": chunks, "expected_verdicts": verdicts})
    return samples, labels


def ap(verdicts: list[int], eps: float) -> float:
    """docs/reference/metrics.md section 1, exactly (left to right, one division at the end)."""
    total, count = 0.0, 0
    for k, v in enumerate(verdicts, start=1):
        if v:
            count += 1
            total += count / k
    return total / (count + eps) if (count or eps) else 0.0


# ---------------------------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------------------------


def run_timed(cmd: list[str], cwd: Path, env: dict[str, str] | None = None,
              timeout: float = 1800) -> dict[str, Any]:
    """Run ``cmd``; return wall seconds, user+sys CPU of it and its children (wait4), rc."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    out_chunks: list[str] = []
    reader = threading.Thread(target=lambda: out_chunks.append(proc.stdout.read()), daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
        time.sleep(0.02)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    reader.join(5)
    return {"rc": proc.returncode, "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime,
            "output": "".join(out_chunks)[-4000:]}


class Server:
    """A judge subprocess that prints ``READY url`` and ``STATS {json}`` on SIGTERM."""

    def __init__(self, cmd: list[str], cwd: Path) -> None:
        self.proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        if not line.startswith("READY "):
            self.proc.kill()
            raise RuntimeError(f"judge did not start: {line!r} {self.proc.stderr.read()[-2000:]}")
        self.url = line.split()[1]

    def stop(self) -> dict[str, Any]:
        self.proc.terminate()
        _, err = self.proc.communicate(timeout=30)
        for line in err.splitlines():
            if line.startswith("STATS "):
                return json.loads(line[6:])
        return {"error": err[-2000:]}


def make_venv(root: Path, name: str, packages: list[str], log: list[str]) -> dict[str, Any]:
    venv = root / name
    py = venv / "bin" / "python"
    info: dict[str, Any] = {"venv": str(venv), "packages": packages}
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    cmd = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", *packages]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    info.update(install_s=time.perf_counter() - t0, install_rc=r.returncode,
                install_cmd=" ".join(cmd))
    if r.returncode != 0:
        info["install_error"] = (r.stderr or r.stdout)[-3000:]
    log.append(f"{' '.join(cmd)} -> rc {r.returncode}")
    return info


def pkg_version(py: Path, dist: str) -> str | None:
    code = f"import importlib.metadata as m; print(m.version({dist!r}))"
    r = subprocess.run([str(py), "-c", code], capture_output=True, text=True)
    return r.stdout.strip() or None


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap_ = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap_.add_argument("--n", type=int, default=200, help="samples (x 5 chunks)")
    ap_.add_argument("--concurrency", type=int, default=16, help="judge requests in flight, all")
    ap_.add_argument("--venv-dir", type=Path, default=None,
                     help="reuse/keep the peer venvs here (default: a temp dir, removed)")
    ap_.add_argument("--only", choices=["harness", "ragas", "deepeval"], action="append")
    ap_.add_argument("--no-results-md", action="store_true")
    args = ap_.parse_args(argv)
    only = set(args.only or ["harness", "ragas", "deepeval"])

    tmp = Path(tempfile.mkdtemp(prefix="parity-"))
    venv_root = args.venv_dir or (tmp / "venvs")
    venv_root.mkdir(parents=True, exist_ok=True)
    work = tmp / "work"
    work.mkdir()
    log: list[str] = []
    results: dict[str, Any] = {"runs": {}, "venvs": {}, "log": log}
    try:
        samples, labels = make_dataset(args.n)
        ds_path, labels_path = tmp / "dataset.json", tmp / "labels.json"
        ds_path.write_text(json.dumps({"samples": samples}), "utf-8")
        labels_path.write_text(json.dumps(labels), "utf-8")
        print(f"dataset: {len(samples)} samples x 5 chunks -> {ds_path}", flush=True)

        # --- harness, against the project's test judge -----------------------------------
        if "harness" in only:
            for metric in ("llm_with_reference", "contextual_precision"):
                server = REPO / "tests" / "helpers" / "judge_server.py"
                judge = Server([PYTHON, str(server), "--port", "0",
                                "--labels", str(labels_path), "--latency-ms", "0"], REPO)
                out = work / f"harness_{metric}.json"
                t = run_timed([PYTHON, str(HERE / "run_harness.py"), str(ds_path), judge.url,
                               metric, str(out), str(args.concurrency)], cwd=work)
                t["judge_stats"] = judge.stop()
                if out.exists():
                    t.update(json.loads(out.read_text("utf-8")))
                results["runs"][f"harness:{metric}"] = t
                print(f"harness {metric}: rc {t['rc']} wall {t['wall_s']:.2f}s "
                      f"requests {t['judge_stats'].get('requests')}", flush=True)

        # --- peers, against the fixture judge ---------------------------------------------
        for peer in ("ragas", "deepeval"):
            if peer not in only:
                continue
            print(f"installing {PEERS[peer]} in {venv_root / peer} ...", flush=True)
            info = make_venv(venv_root, peer, PEERS[peer], log)
            py = venv_root / peer / "bin" / "python"
            info["version"] = pkg_version(py, peer)
            results["venvs"][peer] = info
            if info["install_rc"] != 0:
                print(f"{peer}: install failed\n{info['install_error']}", flush=True)
                continue
            judge = Server([PYTHON, str(HERE / "peer_judge.py"), str(labels_path)], HERE)
            out = work / f"{peer}.json"
            env = dict(os.environ, OPENAI_API_KEY="sk-fixture", DEEPEVAL_TELEMETRY_OPT_OUT="YES",
                       RAGAS_DO_NOT_TRACK="true", HOME=str(tmp))
            t = run_timed([str(py), str(HERE / f"run_{peer}.py"), str(ds_path), judge.url,
                           str(out), str(args.concurrency)], cwd=work, env=env)
            t["judge_stats"] = judge.stop()
            if out.exists():
                t.update(json.loads(out.read_text("utf-8")))
            results["runs"][peer] = t
            print(f"{peer}: rc {t['rc']} wall {t['wall_s']:.2f}s "
                  f"requests {t['judge_stats'].get('requests')}", flush=True)
            if t["rc"] != 0:
                print(t["output"], flush=True)

        results["comparisons"] = compare(samples, results["runs"])
        results["machine"] = {
            "date": dt.date.today().isoformat(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "platform": platform.platform(),
            "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()],
        }
        results["settings"] = {"n": args.n, "chunks": 5, "concurrency": args.concurrency}
        OUT_JSON.parent.mkdir(parents=True, exist_ok=True)
        OUT_JSON.write_text(json.dumps(results, indent=2, default=str) + "\n", "utf-8")
        md = render(results)
        print(md)
        if not args.no_results_md:
            RESULTS_MD.write_text(md, "utf-8")
        # exit 0 when every difference is the documented int-vs-float one (same value)
        ok = all(d["why"].startswith("same value") for c in results["comparisons"].values()
                 for d in c["diffs"])
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# Comparison and report
# ---------------------------------------------------------------------------------------------

PAIRS = {
    "ragas vs harness llm_with_reference": ("ragas", "harness:llm_with_reference", 1e-10),
    "deepeval vs harness contextual_precision": ("deepeval", "harness:contextual_precision", 0.0),
}


def explain(peer: str, a: str, b: str, va: Any, vb: Any, expected: list[int]) -> str:
    if va != vb:
        return f"different verdicts (peer {va}, harness {vb}, labels {expected})"
    try:
        fa, fb = float(a), float(b)
    except ValueError:
        return "one side unscored"
    if fa == fb:
        return (f"same value, different type: {peer} returns int `{a}` when no chunk is "
                f"relevant, harness always a float")
    return f"different doubles from the same verdicts ({a} vs {b})"


def compare(samples: list[dict[str, Any]], runs: dict[str, Any]) -> dict[str, Any]:
    comps = {}
    for name, (peer, ours, eps) in PAIRS.items():
        if peer not in runs or ours not in runs or "scores" not in runs[peer] \
                or "scores" not in runs[ours]:
            continue
        p, h = runs[peer], runs[ours]
        diffs, ref_mismatch = [], 0
        for i, s in enumerate(samples):
            exp = s["expected_verdicts"]
            if h["scores"][i] != repr(ap(exp, eps)):
                ref_mismatch += 1
            pv = p["verdicts"][i] if p.get("verdicts") else None
            hv = [int(v) for v in h["verdicts"][i]] if h["verdicts"][i] is not None else None
            if p["scores"][i] != h["scores"][i] or pv != hv:
                diffs.append({"sample": i, "peer": p["scores"][i], "harness": h["scores"][i],
                              "verdicts": exp,
                              "why": explain(peer, p["scores"][i], h["scores"][i], pv, hv, exp)})
        comps[name] = {"n": len(samples), "identical": not diffs, "n_diffs": len(diffs),
                       "diffs": diffs, "harness_vs_formula_mismatches": ref_mismatch}
    return comps


def render(r: dict[str, Any]) -> str:
    m, s = r["machine"], r["settings"]
    runs = r["runs"]
    versions = {k: v.get("version") for k, v in r["venvs"].items()}
    lines = [
        "# Parity results: harness vs ragas and deepeval",
        "",
        f"Measured {m['date']} by `python benchmarks/parity/run_parity.py` (not run by CI) on "
        f"{m['cpus']} cores, Python {m['python']}, {m['platform']}; load average at the end "
        f"{m['loadavg_1_5_15']}.",
        f"Versions: ragas {versions.get('ragas')}, deepeval {versions.get('deepeval')}, "
        f"harness (this checkout). Dataset: {s['n']} samples x {s['chunks']} chunks, every one "
        f"of the 32 relevance patterns; judge requests in flight at most {s['concurrency']} "
        f"for every library.",
        "",
        "Verdicts come from fixture judges answering from one labels file: the project's test "
        "judge (`tests/helpers/judge_server.py`) for the harness, and "
        "`benchmarks/parity/peer_judge.py` "
        "for ragas and deepeval (it finds the known chunk texts inside their own prompts). So "
        "this measures the verdict -> score step and the client-side cost, not judge quality.",
        "",
        "## Scores",
        "",
        "| comparison | samples | identical `repr` and verdicts | differences "
        "| harness vs docs/reference/metrics.md formula |",
        "|---|---|---|---|---|",
    ]
    for name, c in r.get("comparisons", {}).items():
        lines.append(f"| {name} | {c['n']} | {c['n'] - c['n_diffs']} | {c['n_diffs']} | "
                     f"{c['harness_vs_formula_mismatches']} mismatches |")
    for name, c in r.get("comparisons", {}).items():
        if c["diffs"]:
            lines += ["", f"Every difference, {name}:", "",
                      "| sample | labels | peer | harness | why |", "|---|---|---|---|---|"]
            for d in c["diffs"]:
                lines.append(f"| {d['sample']} | {d['verdicts']} | `{d['peer']}` | "
                             f"`{d['harness']}` | {d['why']} |")
    lines += ["", "## Cost, side by side", "",
              "Wall and CPU of the whole runner subprocess (interpreter start, imports, "
              "scoring; CPU = user+sys of it and its children via `os.wait4`, the judge "
              "server excluded), then the scoring call alone as measured inside the runner.",
              "",
              "| run | rc | wall s | CPU s | import s | scoring wall s | scoring CPU s "
              "| judge requests |",
              "|---|---|---|---|---|---|---|---|"]

    def num(t: dict[str, Any], key: str) -> str:
        v = t.get(key)
        return f"{v:.2f}" if isinstance(v, (int, float)) else "—"

    for name, t in runs.items():
        lines.append(f"| {name} | {t['rc']} | {num(t, 'wall_s')} | {num(t, 'cpu_s')} | "
                     f"{num(t, 'import_s')} | {num(t, 'score_wall_s')} | "
                     f"{num(t, 'score_cpu_s')} | "
                     f"{t.get('judge_stats', {}).get('requests')} |")
    for peer, info in r["venvs"].items():
        if info.get("install_rc"):
            lines += ["", f"**{peer} could not be installed**: `{info['install_cmd']}` ->",
                      "", "```", info.get("install_error", "").strip()[-1500:], "```"]
    for name, t in runs.items():
        if t["rc"] != 0:
            lines += ["", f"**{name} failed** (rc {t['rc']}):", "", "```",
                      t["output"].strip()[-1500:], "```"]
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
