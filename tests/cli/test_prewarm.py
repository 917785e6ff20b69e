"""The tracker's helper is started before Hydra composes through the chosen tracking option's
class (its ``prewarm``), and only for a run it will log: not for ``tracking=none`` (its class
has no ``prewarm``), ``tracking.background=false`` (the run logs in this process),
``--help``, ``--cfg`` or a sweep (its jobs log in process)."""

from __future__ import annotations

import pytest

from harness.cli import prewarm
from harness.cli.main import _prewarm_tracker
from harness.tracking.mlflow import tracker


@pytest.mark.parametrize(("args", "started"), [
    (["metric=id_based"], True),
    (["tracking=mlflow", "tracking.background=auto"], True),
    (["tracking._target_=harness.tracking.mlflow.MlflowTracker"], True),
    (["tracking.background=false"], False),
    (["++tracking.background=False"], False),
    (["tracking=none"], False),
    (["tracking=none", "tracking._target_=harness.tracking.null.NullTracker"], False),
    (["tracking=my_own"], False),  # an option in a user's folder: imported after the checks
    (["tracking._target_=mypkg.Tracker"], False),  # a user's class: not imported here
    (["--cfg", "job"], False),
    (["-m", "metric=id_based,id_ranked"], False),
])
def test_the_helper_starts_only_for_a_run_it_will_log(args: list[str], started: bool) -> None:
    try:
        assert _prewarm_tracker(args) == args
        assert (tracker._PREWARMED is not None) is started
    finally:
        prewarm.discard()
    assert tracker._PREWARMED is None


@pytest.mark.parametrize(("args", "target"), [
    ([], "harness.tracking.mlflow.MlflowTracker"),  # the default in conf/config.yaml
    (["tracking=none"], "harness.tracking.null.NullTracker"),
    (["+tracking=none"], "harness.tracking.null.NullTracker"),
    (["tracking=none", "tracking._target_=a.B"], "a.B"),
    (["tracking=nope"], None),
])
def test_the_class_is_read_from_the_option_file(args: list[str], target: str | None) -> None:
    assert prewarm.target(args) == target
