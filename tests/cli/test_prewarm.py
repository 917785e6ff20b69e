"""The MLflow logging helper is started before Hydra composes only for a run it will log:
not for ``tracking=none``, ``tracking.background=false`` (the run logs in this process),
``--help``, ``--cfg`` or a sweep (its jobs log in process)."""

from __future__ import annotations

import pytest

from harness.cli.main import _prewarm_tracker
from harness.tracking.mlflow import tracker


@pytest.mark.parametrize(("args", "started"), [
    (["metric=id_based"], True),
    (["tracking=mlflow", "tracking.background=auto"], True),
    (["tracking.background=false"], False),
    (["++tracking.background=False"], False),
    (["tracking=none"], False),
    (["--cfg", "job"], False),
    (["-m", "metric=id_based,id_ranked"], False),
])
def test_the_helper_starts_only_for_a_run_it_will_log(args: list[str], started: bool) -> None:
    try:
        assert _prewarm_tracker(args) == args
        assert (tracker._PREWARMED is not None) is started
    finally:
        tracker.discard_prewarmed()
    assert tracker._PREWARMED is None
