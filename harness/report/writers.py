"""The writers of the report room (plots, ``report.html``) and each task's list of output
writers (``harness.run.outputs.writers``), in the order the tracker attaches their files."""

from __future__ import annotations

from pathlib import Path

from harness.core.summary import RunSummary
from harness.run.outputs.feedback import Feedback
from harness.run.outputs.writers import (
    ConfigFile,
    Finished,
    MetricFiles,
    OutputWriter,
    RowsFile,
    SummaryFile,
)


class Plots:
    """The run's plots (``plots/``), when the tracker keeps attached files."""

    def write(self, done: Finished) -> list[Path]:
        if not done.keeps_artifacts or done.tally is None:
            return []
        from harness.report.plots import plotted, write_plots

        assert isinstance(done.summary, RunSummary)
        metric, several = plotted(done.summary)
        return write_plots(done.tally, metric, done.job.out_dir / "plots", several)


class Report:
    """``report.html`` (``run.report``): the summary, the plots, the ranked chunks."""

    def write(self, done: Finished) -> list[Path]:
        if not done.report or done.tally is None:
            return []
        from harness.report.write import report_of_run

        assert isinstance(done.summary, RunSummary)
        plots = [p for p in done.written if p.suffix == ".png"]
        return report_of_run(done.job.out_dir, done.summary, done.tally, plots)


#: ``task=evaluate``'s outputs.
EVALUATE: tuple[OutputWriter, ...] = (
    ConfigFile(), RowsFile(), SummaryFile(), Plots(), MetricFiles(), Report(), Feedback(),
)
#: ``task=judge_agreement``'s outputs.
AGREEMENT: tuple[OutputWriter, ...] = (ConfigFile(), RowsFile(), SummaryFile())
