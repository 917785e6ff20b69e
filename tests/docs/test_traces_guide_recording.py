"""The traces guide's recording snippet runs as printed, and the command after it scores
what it recorded (issue 35, item 8: a first try failed with ``Trace with ID ... not found``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.paths import ROOT

GUIDE = ROOT / "docs" / "guide" / "traces.md"


def snippet() -> str:
    text = GUIDE.read_text(encoding="utf-8")
    section = text.split("### Record a few traces to try it", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)  # type: ignore[union-attr]


@pytest.mark.slow
def test_the_recording_snippet_and_its_command_score_the_traces(tmp_path: Path) -> None:
    (tmp_path / "record.py").write_text(snippet(), encoding="utf-8")
    recorded = subprocess.run([sys.executable, "record.py"], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300)
    assert recorded.returncode == 0, recorded.stderr[-2000:]
    scored = subprocess.run(
        [sys.executable, "-m", "harness", "dataset=mlflow_traces",
         "dataset.experiment_name=my-app", "metric=id_ranked", "tracking=none",
         "run.progress=false", "hydra.run.dir=out"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert scored.returncode == 0, scored.stderr[-2000:]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    # d1 second of two, d3 second of two, d2 first: average precision 1/2, 1/2, 1
    assert summary["n_scored"] == 3
    assert summary["mean"] == pytest.approx((0.5 + 0.5 + 1.0) / 3)
