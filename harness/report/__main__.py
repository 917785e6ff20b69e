"""``python -m harness.report``: ``harness report``, until 0.3.0."""

from harness.cli.commands import shim

if __name__ == "__main__":
    shim("report", "python -m harness.report")
