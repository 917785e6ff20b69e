"""A local SQLite store named in SQLite's own URI form (``sqlite:///file:PATH?mode=ro&uri=true``)
is the file SQLite opens, everywhere the harness looks for it: the database the harness
checks, the ``mlflow ui`` command it prints, the reports and comparisons that read it; and a
read-only URI is refused, before any work, for a run that logs to it. The file SQLite
itself opens (``PRAGMA database_list`` through SQLAlchemy, as MLflow connects) is the truth."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import run_cli

from harness.tracking.mlflow import sqlite_uri


def opened_by_sqlite(uri: str) -> Path:
    """The file SQLAlchemy's SQLite driver opens for ``uri`` (created when missing)."""
    import sqlalchemy

    engine = sqlalchemy.create_engine(uri)
    try:
        with engine.connect() as conn:
            rows = conn.exec_driver_sql("PRAGMA database_list").fetchall()
    finally:
        engine.dispose()
    return Path(next(r[2] for r in rows if r[1] == "main"))


@pytest.mark.parametrize("written", [
    "sqlite:///rel.db",
    "sqlite:///rel.db?timeout=30",
    "sqlite:///sub/rel.db",
    "sqlite:///{tmp}/abs.db",
    "sqlite:///file:rel.db?uri=true",
    "sqlite:///file:sub/rel.db?mode=rwc&uri=true",
    "sqlite:///file:{tmp}/abs.db?uri=true",
    "sqlite:///file://{tmp}/empty%20authority.db?uri=true",
    "sqlite:///file:{tmp}/with%20space.db?mode=rwc&uri=true",
])
def test_the_file_is_the_one_sqlite_opens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          written: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    uri = written.format(tmp=tmp_path)
    truth = opened_by_sqlite(uri)
    found = sqlite_uri.local_file(uri)
    assert found is not None and found.absolute() == truth
    # the absolute form names the same file from any folder
    absolute = sqlite_uri.absolute(uri)
    os.chdir(tmp_path / "sub")
    assert opened_by_sqlite(absolute) == truth
    assert sqlite_uri.absolute(absolute) == absolute


@pytest.mark.parametrize("uri", ["sqlite://", "sqlite:///:memory:", "postgresql://u@h/db",
                                 "http://127.0.0.1:5000", "file:///tmp/mlruns"])
def test_other_stores_have_no_local_file_and_stay_as_written(uri: str) -> None:
    assert sqlite_uri.local_file(uri) is None
    assert sqlite_uri.absolute(uri) == uri


@pytest.mark.filterwarnings("ignore:Query string argument")  # mode= without uri=true
@pytest.mark.parametrize(("uri", "read_only"), [
    ("sqlite:///file:{tmp}/m.db?mode=ro&uri=true", True),
    ("sqlite:///file:{tmp}/m.db?immutable=1&uri=true", True),
    ("sqlite:///file:{tmp}/m.db?mode=rw&uri=true", False),
    ("sqlite:///{tmp}/m.db", False),
    ("sqlite:///file:{tmp}/m.db?mode=ro", False),  # no uri=true: a file named so, writable
])
def test_read_only_is_what_sqlite_refuses_to_write(tmp_path: Path, uri: str,
                                                   read_only: bool) -> None:
    import sqlalchemy

    opened_by_sqlite(f"sqlite:///{tmp_path}/m.db")  # the database exists
    uri = uri.format(tmp=tmp_path)
    engine = sqlalchemy.create_engine(uri)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql("CREATE TABLE t (x)")
        refused = False
    except sqlalchemy.exc.OperationalError as e:
        refused = "readonly" in str(e).replace(" ", "").lower()
    finally:
        engine.dispose()
    assert refused is read_only
    assert sqlite_uri.read_only(uri) is read_only


def test_a_run_refuses_a_read_only_store_before_its_work(tmp_path: Path) -> None:
    store = tmp_path / "m.db"
    opened_by_sqlite(f"sqlite:///{store}")
    before = store.read_bytes()
    uri = f"sqlite:///file:{store}?mode=ro&uri=true"
    result = run_cli("metric=id_based", "run.progress=false", f"tracking.tracking_uri='{uri}'",
                     cwd=tmp_path)
    assert result.returncode == 2
    lines = [x for x in result.stderr.splitlines() if x.startswith("error: ")]
    assert lines == [f"error: MLflow store {uri}: its URI opens the database read-only "
                     "(mode=ro or immutable=1); drop that from it to log runs there, or set "
                     "tracking.tracking_uri=sqlite:///OTHER/mlflow.db to use another store, or "
                     "tracking=none to log nothing"], result.stderr
    assert "Traceback" not in result.stderr
    assert not list(tmp_path.glob("**/samples.jsonl")) and store.read_bytes() == before


@pytest.mark.slow
def test_a_run_logs_to_the_file_a_uri_form_names_and_prints_its_ui_command(
        tmp_path: Path) -> None:
    uri = "sqlite:///file:logged.db?mode=rwc&uri=true"
    result = run_cli("metric=id_based", "run.progress=false", f"tracking.tracking_uri='{uri}'",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "logged.db").is_file()
    expected = f"sqlite:///file:{tmp_path}/logged.db?mode=rwc&uri=true"
    assert f"mlflow ui --backend-store-uri '{expected}'" in result.stdout
    # the report of that run is read back through a read-only URI of the same file
    run_id = next(x.split()[2] for x in result.stdout.splitlines()
                  if x.strip().startswith("mlflow run"))
    read_only = f"sqlite:///file:{tmp_path}/logged.db?mode=ro&uri=true"
    from harness.cli.report import from_store

    out = from_store(run_id, read_only, tmp_path / "report.html")
    assert f"{result.summary()['mean']:.4f}" in out.read_text("utf-8")
