"""Start-up (issue 34): the main process of a default run (tracking to an existing SQLite
store) does not import MLflow, its logging helper does while the run works; matplotlib is
imported only when plots are drawn (for ``report.html`` or as MLflow artifacts), so a run
with ``tracking=none run.report=false`` imports neither."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.cli import cli_env

_DRIVER = """
import json, runpy, sys
sys.argv = ["harness", *sys.argv[1:]]
try:
    runpy.run_module("harness", run_name="__main__", alter_sys=True)
except SystemExit as e:
    code = e.code
else:
    code = 0
loaded = sorted({m.split(".")[0] for m in sys.modules} & {"matplotlib", "mlflow"})
print(json.dumps({"code": code, "loaded": loaded}))
"""


def _run(tmp_path: Path, out: str, *args: str) -> tuple[dict[str, object], str]:
    env = cli_env(None)
    env.pop("MLFLOW_TRACKING_URI", None)  # the default store: mlflow.db in the folder
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER, "metric=id_based", "run.report=false", *args,
         f"hydra.run.dir={tmp_path / out}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stdout


@pytest.mark.slow
def test_the_main_process_imports_mlflow_never_and_matplotlib_only_to_draw(
    tmp_path: Path,
) -> None:
    _run(tmp_path, "first")  # creates the store: the next run opens an existing one
    assert (tmp_path / "mlflow.db").is_file()
    found, stdout = _run(tmp_path, "second")
    assert found == {"code": 0, "loaded": ["matplotlib"]}  # the plots MLflow keeps
    assert "mlflow run" in stdout  # logged all the same, by the helper
    assert sorted(p.name for p in (tmp_path / "second" / "plots").iterdir())
    assert not (tmp_path / "second" / "report.html").exists()
    found, _ = _run(tmp_path, "third", "tracking=none")
    assert found == {"code": 0, "loaded": []}
    assert not (tmp_path / "third" / "plots").exists()
