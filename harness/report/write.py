"""Write ``report.html``: at the end of a run from its tally, or later from its folder."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from harness.core.errors import ConfigError
from harness.core.summary import RunSummary
from harness.core.types import SampleResult
from harness.report.html import read_rows, run_html

REPORT = "report.html"


def kept_rows(tally: Any) -> list[tuple[int, dict[str, Any]]]:
    """The rows a tally kept for the report (evenly spaced ones and unscored ones), in
    run order."""
    merged = dict(tally.report_rows.pick())
    merged.update(tally.report_unscored.pick())
    return sorted(merged.items())


def write_html(path: Path, html: str) -> Path:
    """Write ``html`` to ``path`` atomically (a reader never sees half a report)."""
    tmp = path.with_name(path.name + ".partial")
    tmp.write_text(html, encoding="utf-8")
    os.replace(tmp, path)
    return path


def write_run_report(out_dir: Path, summary: RunSummary, tally: Any,
                     plots: list[Path]) -> Path:
    """``out_dir/report.html`` of a run that just finished scoring."""
    return write_html(out_dir / REPORT, run_html(summary, kept_rows(tally), plots))


def result_of(row: dict[str, Any]) -> SampleResult:
    """The result a ``samples.jsonl`` row was written from (what the tally counts)."""
    details = {k: row[k] for k in ("relevance", "success") if row.get(k) is not None}
    return SampleResult(str(row.get("id")), row.get("score"), row.get("verdicts"),
                        row.get("error"), details)


def rebuild_run(run_dir: Path, out: Path | None = None, plots_dir: Path | None = None) -> Path:
    """Write the report of the run in ``run_dir`` (its ``summary.json`` and
    ``samples.jsonl``), drawing its plots anew into ``plots_dir`` (default
    ``run_dir/plots``)."""
    from harness.report.plots import plotted, write_plots
    from harness.run.loop import Tally

    summary_path, rows_path = run_dir / "summary.json", run_dir / "samples.jsonl"
    for path in (summary_path, rows_path):
        if not path.is_file():
            raise ConfigError(f"{path} does not exist: is {run_dir} a run's output folder?")
    try:
        summary = RunSummary.from_json(json.loads(summary_path.read_text("utf-8")))
        tally = Tally(summary.metric)
        for row in read_rows(rows_path):
            tally.record(result_of(row), row)
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ConfigError(f"{run_dir}: summary.json or samples.jsonl is not a harness "
                          f"run's ({type(e).__name__}: {e})") from None
    metric, several = plotted(summary)
    plots = write_plots(tally, metric, plots_dir or run_dir / "plots", several)
    return write_html(out or run_dir / REPORT, run_html(summary, kept_rows(tally), plots))


def report_of_run(out_dir: Path, summary: RunSummary, tally: Any,
                  plots: list[Path]) -> list[Path]:
    """``[report.html]`` of a run that just finished scoring, or ``[]`` (with a warning on
    stderr) if it could not be written: a report never fails a run that scored."""
    try:
        return [write_run_report(out_dir, summary, tally, plots)]
    except OSError as e:
        print(f"warning: {out_dir / REPORT} not written: {e}", file=sys.stderr)
        return []
