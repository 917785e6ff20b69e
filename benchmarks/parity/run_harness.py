"""Runs our harness over the parity dataset against the project's test judge.

Usage: python run_harness.py DATASET.json BASE_URL METRIC OUT.json [CONCURRENCY]
(run with the project's own interpreter, e.g. .venv/bin/python)
"""
import json
import sys
import time

t_import = time.perf_counter()
from harness import evaluate  # noqa: E402

import_s = time.perf_counter() - t_import

with open(sys.argv[1], encoding="utf-8") as f:
    data = json.load(f)
url, metric, out_path = sys.argv[2], sys.argv[3], sys.argv[4]
conc = sys.argv[5] if len(sys.argv) > 5 else "16"
overrides = ["judge=local", f"judge.base_url={url}", "judge.model=test-judge",
             "judge.cache=false", f"judge.max_concurrency={conc}"]
t0, c0 = time.perf_counter(), time.process_time()
res = evaluate(data["samples"], metric, overrides=overrides)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
out = {
    "library": "harness", "metric": metric, "overrides": overrides,
    "import_s": import_s, "score_wall_s": wall, "score_cpu_s": cpu,
    "scores": [repr(s) for s in res.scores],
    "verdicts": [r.get("verdicts") for r in res.rows],
    "errors": [r.get("error") for r in res.rows if r.get("error")],
    "success": [r.get("success") for r in res.rows],
    "summary": {k: v for k, v in res.summary.items() if isinstance(v, (int, float, str))},
}
with open(out_path, "w", encoding="utf-8") as f:
    json.dump(out, f, default=str)
