"""The commands: ``harness`` (``commands``: ``harness compare|report|cache|label`` by the
first word, else the Hydra app, ``main``), the commands (``compare``, ``report``, ``cache``,
``label`` with ``label_texts``), and what they share: the Hydra task function (``job``), its
callbacks (``guard``, ``sweep_tracking``), hints and checks run before Hydra (``hints``,
``ray_check``)."""

from harness.cli.commands import main

__all__ = ["main"]
