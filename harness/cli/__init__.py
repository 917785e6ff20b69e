"""The commands: ``harness`` (``main``), ``harness-compare`` (``compare``), ``harness-cache``
(``cache``), ``python -m harness.report`` (``report``), and what they share: the Hydra task
function (``job``), its callbacks (``guard``, ``sweep_tracking``), hints and checks run before
Hydra (``hints``, ``ray_check``)."""

from harness.cli.main import main

__all__ = ["main"]
