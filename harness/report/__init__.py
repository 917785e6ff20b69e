"""What a run says about itself: the console (``console``), ``report.html`` (``html``,
``write``, ``sweep``), plots (``plots``), and the writers of those files (``writers``)."""

from harness.report.console import per_second, render_summary

__all__ = ["per_second", "render_summary"]
