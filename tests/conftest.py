"""Shared fixtures. The helpers live in tests/helpers/; their names are re-exported here
for the test modules that import them from ``conftest``."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.cli import CliResult, run_cli, run_cli_subprocess, start_cli
from helpers.paths import (
    CONF,
    ROOT,
    SHARED_DATA_MISSING,
    TEST_DATA,
    sample_labels,
    sample_rows,
    shared_data,
)

__all__ = [
    "CONF", "ROOT", "TEST_DATA", "CliResult", "run_cli", "run_cli_subprocess", "sample_labels",
    "sample_rows", "shared_data", "start_cli",
]

# dataset=scifact/trec_dl19/dbpedia_entity read $HARNESS_SHARED_DATA (else ../shared/data
# from the working directory): pin it, as an absolute path, to what shared_data() finds,
# whatever the working directory of a test or of the CLI subprocesses it starts.
os.environ["HARNESS_SHARED_DATA"] = str(shared_data().absolute())
# MLflow exports traces on a background queue by default; every flush of it (the traces
# tests record with flush_trace_async_logging, mlflow.genai.evaluate) then waits on its worker
# threads, about a second each. Exported in the caller's thread instead: the same traces.
os.environ.setdefault("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
# matplotlib keeps its font cache under $XDG_CACHE_HOME, which each test gets fresh: one
# folder per session instead, so plotting tests do not rebuild it (seconds each)
if "MPLCONFIGDIR" not in os.environ:
    import tempfile

    os.environ["MPLCONFIGDIR"] = tempfile.mkdtemp(prefix="harness-tests-mpl-")


#: Refusal suites of many cases, each running the CLI or a build in-process (about a quarter
#: of a second a case): the default lane runs the first ``FAST_CASES`` cases of each of their
#: parametrized tests, so every class of bad input keeps cases there; the rest are marked
#: ``slow`` and run in the slow lane (CI runs both).
SAMPLED = frozenset({
    "tests/judges/test_hostile_judges.py", "tests/datasets/test_malformed_files.py",
    "tests/datasets/test_hostile_inputs.py", "tests/config/test_setting_ranges.py",
    "tests/tracking/test_broken_stores.py", "tests/config/test_options.py",
    "tests/core/test_trust.py", "tests/config/test_override_syntax.py",
    "tests/config/test_config_errors.py", "tests/datasets/test_trec_as_trec_eval.py",
    "tests/judges/test_fixture_judge.py", "tests/datasets/test_data_fit.py",
    "tests/run/test_gate_verdicts.py", "tests/run/test_gates_any_metric.py",
    "tests/cli/test_main.py", "tests/judges/test_fixture_subject.py",
})
FAST_CASES = 1


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the cases of ``SAMPLED`` suites past the first ``FAST_CASES`` of their test
    ``slow`` (before ``-m`` deselects by marker)."""
    seen: dict[tuple[str, str], int] = {}
    for item in items:
        rel = item.path.relative_to(ROOT).as_posix()
        if rel not in SAMPLED or not hasattr(item, "callspec"):
            continue
        key = (rel, getattr(item, "originalname", item.name))
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > FAST_CASES:
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A selected ``shared_data`` test whose data is missing fails in one line, never skips:
    ``@pytest.mark.shared_data("beir_scifact", ...)`` names the sets it reads (none: the
    folder itself)."""
    for mark in item.iter_markers("shared_data"):
        missing = [str(shared_data(n)) for n in mark.args or ("",) if not shared_data(n).is_dir()]
        if missing:
            pytest.fail(f"{SHARED_DATA_MISSING} (missing: {', '.join(missing)})", pytrace=False)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """One line for a lane whose data is missing, under the list of tests it stopped."""
    stopped = [
        r for key in ("error", "failed") for r in terminalreporter.stats.get(key, [])
        if SHARED_DATA_MISSING in str(getattr(r, "longrepr", ""))
    ]
    if stopped:
        terminalreporter.write_line(
            f"error: {len(stopped)} shared_data test(s) did not run: {SHARED_DATA_MISSING}",
            red=True,
        )


@pytest.fixture(autouse=True)
def _private_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Every test gets its own verdict cache (never the user's ~/.cache)."""
    root = tmp_path_factory.mktemp("xdg_cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(root))
    return root


@pytest.fixture(autouse=True)
def _fresh_pacing() -> None:
    """Every test's judges start cold (pacing remembers limits per endpoint in a process)."""
    from harness.judges.transport import pacing

    pacing.forget()


@pytest.fixture(autouse=True)
def _mlflow_environment() -> Iterator[None]:
    """MLflow's process-wide variables are as they were after every test: MLflow 3's
    ``set_tracking_uri`` exports ``$MLFLOW_TRACKING_URI``, which a later test's subprocess
    would otherwise inherit (a CI failure: a store of another test was read)."""
    names = ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_ID", "MLFLOW_EXPERIMENT_NAME")
    before = {name: os.environ.get(name) for name in names}
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session")
def mlflow_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """One SQLite MLflow store for the session (creating the schema costs seconds)."""
    return f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"


@pytest.fixture
def judge_server() -> Iterator[Any]:
    """The project's test judge (a real OpenAI-compatible HTTP server on 127.0.0.1)."""
    from helpers.judge_server import JudgeServer

    with JudgeServer(retry_after="0.01") as server:
        yield server


@pytest.fixture
def clean_secrets(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No registered secret and no hidden value before the test, none left after it."""
    import os

    import harness.core.redact

    monkeypatch.setattr(harness.core.redact, "_SECRETS", set())
    before = {k: v for k, v in os.environ.items() if k.startswith("HARNESS_SECRET_")}
    for name in before:
        del os.environ[name]
    yield
    for name in [k for k in os.environ if k.startswith("HARNESS_SECRET_")]:
        del os.environ[name]
    os.environ.update(before)
