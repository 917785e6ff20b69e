#!/usr/bin/env bash
# CI: start a real Chroma server (`chroma run`, from the chromadb wheel) on 127.0.0.1 and
# sweep retriever=chroma over two index settings into a fresh MLflow store; check that both
# jobs landed as children of one parent. Usage: .ci/vector_db_sweep.sh [PYTHON]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-.venv/bin/python}
work=$(mktemp -d)
port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ANONYMIZED_TELEMETRY=False "$(dirname "$PY")/chroma" run --path "$work/chroma" --host 127.0.0.1 \
    --port "$port" > "$work/chroma.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
"$PY" - "$port" <<'PY' || { echo "chroma run did not start; its log:"; cat "$work/chroma.log"; exit 1; }
import sys, time, urllib.request

for _ in range(150):  # up to ~45 s
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/api/v2/heartbeat", timeout=2)
        sys.exit(0)
    except OSError:
        time.sleep(0.3)
sys.exit(1)
PY
echo "chroma server on 127.0.0.1:$port"
MLFLOW_TRACKING_URI="sqlite:///$work/mlflow.db" "$PY" -m harness -m dataset=beir \
    dataset.path=tests/data/beir_tiny metric=id_ranked retriever=chroma \
    retriever.port="$port" retriever.hnsw_m=8,16 experiment_name=ci_chroma \
    run.progress=false "hydra.sweep.dir=$work/sweep"
MLFLOW_TRACKING_URI="sqlite:///$work/mlflow.db" "$PY" - <<'PY'
from mlflow.tracking import MlflowClient

c = MlflowClient()
exp = c.get_experiment_by_name("ci_chroma")
runs = c.search_runs([exp.experiment_id])
parents = [r for r in runs if r.data.tags.get("harness.sweep") == "parent"]
children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
assert len(parents) == 1 and len(children) == 2, (len(parents), len(children))
assert {r.data.params["retriever.hnsw_m"] for r in children} == {"8", "16"}
assert all("retrieval_p95_ms" in r.data.metrics for r in children)
print("2 chroma jobs under parent", parents[0].info.run_id,
      {r.data.params["retriever.hnsw_m"]: r.data.metrics["ndcg_at_5"] for r in children})
PY
