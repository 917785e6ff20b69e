#!/usr/bin/env bash
# CI: the package as a user gets it. Build the wheel from this checkout, install it into a
# fresh venv in a folder outside the clone, and from an empty folder there run the main job,
# several variants in one run, a -m sweep, compare, the report command (as `harness compare`,
# `harness report`, `harness cache`, and the old forms kept until 0.3.0), the Python API and
# each command's --help.
# Usage: .ci/wheel_smoke.sh [PYTHON]   (PYTHON builds the wheel; default .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_PY=${1:-.venv/bin/python}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$BUILD_PY" -m pip wheel -q --no-deps -w "$tmp/dist" . 2>&1 | grep -v "^WARNING: Location" || true
rm -rf build  # setuptools' own build folder (git-ignored)
wheel=$(ls "$tmp"/dist/*.whl)
echo "wheel: $(basename "$wheel")"
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install -q "$wheel" 2>&1 | grep -v "^WARNING: Location" || true
PY="$tmp/venv/bin/python"
mkdir "$tmp/work" && cd "$tmp/work"
export MLFLOW_TRACKING_URI="sqlite:///$tmp/work/mlflow.db"
set -x
"$PY" -c 'import harness, harness.conf, importlib.metadata as m; print(m.version("harness-context-precision"), harness.__version__)'
"$PY" -m harness metric=id_based run.progress=false hydra.run.dir=run1
test -s run1/summary.json && test -s run1/samples.jsonl && test -s run1/report.html
"$tmp/venv/bin/harness" metric=non_llm run.progress=false tracking=none hydra.run.dir=run2
# several variants in one run: each composed from the package's own configs
"$PY" -m harness 'metric=[id_ranked,non_llm]' run.progress=false tracking=none hydra.run.dir=run3
"$PY" -c 'import json; v = json.load(open("run3/summary.json"))["variants"]; assert list(v) == ["id_ranked", "non_llm"], v'
"$PY" -m harness -m metric=id_based,id_ranked run.progress=false hydra.sweep.dir=sweep
# the README's sweep on the SciFact subset the wheel ships (nothing beside the package)
"$PY" -m harness -m dataset=scifact_mini retriever=bm25 retriever.k1=0.9,1.2 retriever.top_k=5,10 \
    run.progress=false tracking=none hydra.sweep.dir=sweep_scifact
test -f sweep_scifact/3/summary.json
# a finished run gives its labelling sheet (harness label)
"$tmp/venv/bin/harness" label run1 5 --out sheet >/dev/null && test -f sheet/labels.csv
"$tmp/venv/bin/harness" compare experiment=harness log=false
"$tmp/venv/bin/harness" report run1
"$tmp/venv/bin/harness" cache info
"$PY" -m harness report sweep
# the old forms, until 0.3.0
"$PY" -m harness.compare experiment=harness log=false
"$PY" -m harness.report run1
"$tmp/venv/bin/harness-cache" --help >/dev/null
"$tmp/venv/bin/harness-compare" --help >/dev/null
"$tmp/venv/bin/harness" --help >help.txt && grep -q "harness compare" help.txt
for cmd in compare report cache label; do "$tmp/venv/bin/harness" "$cmd" --help >/dev/null; done
# a typo of a command is one line and exit 2
set +e; "$tmp/venv/bin/harness" compar x 2>err; code=$?; set -e
test "$code" = 2 && grep -q "did you mean 'harness compare'" err
"$PY" - <<'PY'
import harness

rows = [{"question": "q", "retrieved_context_ids": ["a", "b", "c"],
         "reference_context_ids": ["b"]}]
result = harness.evaluate(rows, metric="id_ranked")
assert abs(result.summary["mean"] - 0.5) < 1e-12, result.summary["mean"]  # AP: b at rank 2
print("harness.evaluate:", result.summary["mean"])
PY
set +x
# nothing of the checkout was needed: the installed package ran from this folder alone
test ! -e "$tmp/work/conf"
echo "wheel smoke test passed"
