"""``python -m harness.compare``: ``harness compare``, until 0.3.0."""

from harness.cli.commands import shim

if __name__ == "__main__":
    shim("compare", "python -m harness.compare")
