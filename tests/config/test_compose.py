"""``harness.evaluate`` composes each distinct list of overrides once per process: the
copies it hands out are independent, interpolations stay live, concurrent callers get
their own results, and the memo is bounded. (Values only: timings are in
benchmarks/bench_api.py.)"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import sample_rows

from harness import evaluate
from harness.config import compose as api

ROWS = sample_rows()


def test_a_composed_config_is_a_fresh_copy_each_time() -> None:
    first = api.composed(("metric=non_llm", "metric.threshold=0.7"))
    first.metric.threshold = 0.1  # a caller (or a builder) changing its copy
    again = api.composed(("metric=non_llm", "metric.threshold=0.7"))
    assert again.metric.threshold == 0.7 and again is not first
    assert api.composed(("metric=non_llm",)).metric.threshold == 0.5


def test_environment_interpolations_are_read_at_each_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    overrides = ("tracking=mlflow",)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:///first.db")
    assert api.composed(overrides).tracking.tracking_uri == "sqlite:///first.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:///second.db")
    assert api.composed(overrides).tracking.tracking_uri == "sqlite:///second.db"


@pytest.mark.slow
def test_repeated_and_concurrent_calls_give_the_same_results() -> None:
    jobs = [("id_based", ()), ("id_ranked", ()), ("non_llm", ("metric.threshold=0.9",)),
            ("non_llm", ("metric.measure=jaro_winkler",))]
    alone = [evaluate(ROWS, m, overrides=list(o)).rows for m, o in jobs]
    assert alone[2] != alone[3]  # the overrides matter, so a mix-up would show
    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = [pool.submit(evaluate, ROWS, m, overrides=list(o)) for m, o in jobs * 4]
        together = [f.result().rows for f in futures]
    assert together == alone * 4


def test_a_bad_override_is_refused_every_time_and_never_kept() -> None:
    from harness.core.errors import ConfigError

    for _ in range(2):
        with pytest.raises(ConfigError, match="'no_such_metric' is not a metric option"):
            api.composed(("metric=no_such_metric",))
    assert ("metric=no_such_metric",) not in api._composed
    assert evaluate(ROWS, "id_based").mean is not None  # the next good call is unaffected


def test_the_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "COMPOSED_MAX", 3)
    for t in (0.1, 0.2, 0.3, 0.4, 0.5):
        assert api.composed(("metric=non_llm", f"metric.threshold={t}")).metric.threshold == t
    assert len(api._composed) == 3
    kept = [k for k in api._composed if "metric=non_llm" in k]
    assert kept == [("metric=non_llm", f"metric.threshold={t}") for t in (0.3, 0.4, 0.5)]
