"""The pytest plugin (entry point ``pytest11``: ``harness = "harness.testing.plugin"``).

What it adds, all opt-in (a session that uses none of it runs exactly as without it):

* the ``harness_eval`` fixture: ``harness_eval.assert_context_precision(samples, metric,
  floors={...})`` and ``harness_eval.check_config(path)``, with the session's settings
  (``--harness-override KEY=VALUE``, ini ``harness_overrides``) applied after the test's;
* the ``harness_config`` marker: ``@pytest.mark.harness_config("harness_ci.yaml")`` runs the
  config file (read against the test file's folder) before the test's body and fails the test
  below its floors; the ``harness_result`` fixture hands the body that run's result;
* a "harness context precision" section at the end of a session that checked anything.

Importing it loads only pytest and the standard library; the harness loads when a test uses it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from harness.testing import checks

if TYPE_CHECKING:
    from harness.api import EvaluationResult

T = TypeVar("T")
MARKER = "harness_config"
_RESULT = pytest.StashKey["EvaluationResult"]()
#: The ``user_properties`` name a check travels under on a test's report.
PROPERTY = "harness_check"


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--harness-override`` and ini ``harness_overrides``: settings for every check."""
    group = parser.getgroup("harness", "context precision (harness)")
    group.addoption("--harness-override", action="append", default=[], metavar="KEY=VALUE",
                    help="a harness setting for every check of the session, e.g. "
                         "judge.base_url=URL (repeatable; after the ini's)")
    parser.addini("harness_overrides", type="linelist", default=[],
                  help="harness settings (KEY=VALUE, one a line) for every check")


def pytest_configure(config: pytest.Config) -> None:
    """Declare the marker (``--strict-markers`` accepts it)."""
    config.addinivalue_line(
        "markers", f"{MARKER}(path, floors=None, overrides=(), worst=None): run a harness "
        "config file before the test and fail it below the file's floors")


def pytest_sessionstart(session: pytest.Session) -> None:
    """This session's checks are kept apart from an outer session's (pytester)."""
    checks.begin_session()
    session.config.pluginmanager.register(Summary(), f"harness-summary-{id(session)}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """The checks a test made ride on its report (to the controller, under xdist)."""
    report = yield
    for check in checks.take():
        report.user_properties.append((PROPERTY, [check.line(), bool(check.failed)]))
    return report


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Forget the checks nobody reported."""
    checks.end_session()


class Summary:
    """Collects the checks from the reports of one session; prints them at its end."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, bool]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep the checks of each finished test phase, wherever it ran."""
        for name, value in report.user_properties:
            if name == PROPERTY and isinstance(value, (list, tuple)) and len(value) == 2:
                self.lines.append((str(value[0]), bool(value[1])))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """One line per check the session made, if it made any; counts of zero are left
        out, as pytest leaves them out (a run whose checks all passed says no "failed")."""
        if not self.lines:
            return
        failed = sum(1 for _, bad in self.lines if bad)
        counts = [f"{n} {word}" for n, word in ((len(self.lines) - failed, "passed"),
                                                (failed, "failed")) if n]
        terminalreporter.write_sep("=", f"harness context precision: {', '.join(counts)}")
        for line, _ in self.lines:
            terminalreporter.write_line(line)


def session_overrides(config: pytest.Config) -> list[str]:
    """The ini's settings, then the command line's."""
    return [*config.getini("harness_overrides"), *config.getoption("harness_override")]


class HarnessEval:
    """The ``harness_eval`` fixture: the helpers of ``harness.testing`` with the session's
    settings applied after a test's own."""

    def __init__(self, overrides: Sequence[str]) -> None:
        self.overrides = list(overrides)

    def evaluate(self, samples: Sequence[Any], metric: str | Sequence[str] = "id_based", *,
                 overrides: Sequence[str] = (), fields: Mapping[str, str] | None = None,
                 ) -> EvaluationResult:
        """``harness.evaluate`` with the session's settings, no floors."""
        from harness.api import evaluate
        from harness.testing.asserts import merged

        return evaluate(samples, metric, overrides=merged(overrides, self.overrides),
                        fields=fields)

    def assert_context_precision(self, samples: Sequence[Any],
                                 metric: str | Sequence[str] = "id_based", *,
                                 floors: Mapping[str, float], overrides: Sequence[str] = (),
                                 **kwargs: Any) -> EvaluationResult:
        """``harness.testing.assert_context_precision`` with the session's settings."""
        __tracebackhide__ = True
        from harness.testing.asserts import assert_context_precision, merged

        return _guarded(lambda: assert_context_precision(
            samples, metric, floors=floors, overrides=merged(overrides, self.overrides),
            **kwargs))

    def check_config(self, path: str | Path, *, overrides: Sequence[str] = (),
                     **kwargs: Any) -> EvaluationResult:
        """``harness.testing.check_config`` with the session's settings."""
        __tracebackhide__ = True
        from harness.testing.asserts import check_config, merged

        return _guarded(lambda: check_config(
            path, overrides=merged(self.overrides, overrides), **kwargs))


@pytest.fixture
def harness_eval(request: pytest.FixtureRequest) -> HarnessEval:
    """Score samples or a config file with any variant and assert floors per number."""
    return HarnessEval(session_overrides(request.config))


@pytest.fixture
def harness_result(request: pytest.FixtureRequest) -> EvaluationResult:
    """The run of the test's ``harness_config`` marker (rows and summary)."""
    item = request.node
    if item.get_closest_marker(MARKER) is None:
        pytest.fail(f"{item.nodeid}: the harness_result fixture needs "
                    f"@pytest.mark.{MARKER}(PATH) on the test", pytrace=False)
    return _guarded(lambda: _marked_run(item))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """A test marked ``harness_config`` fails below its floors before its body runs."""
    __tracebackhide__ = True
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return
    from harness.api import metric_choice
    from harness.testing.asserts import load_config
    from harness.testing.checks import WORST, checked_floors, judge

    path, kwargs = _marker_args(item)
    spec = _guarded(lambda: load_config(path))
    floors = _guarded(lambda: checked_floors(
        {**spec.get("floors", {}), **(kwargs.get("floors") or {})}, f"{path}: floors"))
    result = _guarded(lambda: _marked_run(item))
    worst = kwargs.get("worst")
    judge(result, metric_choice(spec.get("metric", "id_based")), floors, item.nodeid,
          spec.get("worst", WORST) if worst is None else worst)


def _guarded(call: Callable[[], T]) -> T:
    """``call()``; a harness error (bad config, unreadable data) fails the test in one
    ``error:`` line."""
    __tracebackhide__ = True
    from harness.core.errors import HarnessError

    failure = None
    try:
        return call()
    except HarnessError as e:
        failure = f"error: {e}"
    pytest.fail(failure, pytrace=False)  # outside the except: no "during handling" chain


def _marker_args(item: pytest.Item) -> tuple[Path, dict[str, Any]]:
    marker = item.get_closest_marker(MARKER)
    assert marker is not None
    if len(marker.args) != 1 or not isinstance(marker.args[0], (str, Path)):
        pytest.fail(f"{item.nodeid}: @pytest.mark.{MARKER} takes one config file path, "
                    f"got {marker.args!r}", pytrace=False)
    unknown = set(marker.kwargs) - {"floors", "overrides", "worst"}
    if unknown:
        pytest.fail(f"{item.nodeid}: @pytest.mark.{MARKER}: unknown argument(s) "
                    f"{sorted(unknown)}; it takes floors, overrides, worst", pytrace=False)
    return item.path.parent / marker.args[0], dict(marker.kwargs)


def _marked_run(item: pytest.Item) -> EvaluationResult:
    """The marked test's run, once per test (the fixture and the check share it)."""
    if _RESULT not in item.stash:
        from harness.testing.asserts import load_config, merged, run_overrides

        path, kwargs = _marker_args(item)
        spec = load_config(path)
        given = merged(spec["overrides"], session_overrides(item.config),
                       kwargs.get("overrides") or ())
        item.stash[_RESULT] = run_overrides(spec.get("metric", "id_based"), given)
    return item.stash[_RESULT]
