"""Issue 12, class 9: stores that are broken.

The MLflow store (corrupt, truncated, read-only, locked, a path that cannot be a file) and
the verdict cache (the same, plus damaged rows), through the CLI: each ends with exactly
one ``error:`` line naming the file, the cause and what to do, and exit code 2 (no
traceback), or, where the run can still be correct, with a correct result. The run's
results stay written when only the MLflow logging failed; the broken file is left as it
was. ``python -m harness.cli.cache`` never deletes what its filter does not name.

The tests run as root in CI, where ``chmod`` does not stop a write: a read-only file or
folder is made with ``chattr +i`` there (``chmod`` for other users).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_cli, sample_labels, sample_rows
from helpers.judge_server import JudgeServer

import harness.cli.cache as cache_cli
from harness.judges.cache import sqlite as verdict_cache
from harness.judges.cache.sqlite import VerdictCache, default_path
from harness.metrics.ranking import average_precision
from harness.tracking.mlflow import store

N_SAMPLES = len(sample_rows())
N_CHUNKS = sum(len(r["retrieved_contexts"]) for r in sample_rows())
PATHS = {"background": (), "in-process": ("tracking.background=false",)}
#: Both ways a single run logs; the background one starts the logging helper (slow).
LOGGED_BY = [pytest.param("background", marks=pytest.mark.slow), "in-process"]


def one_error(result: object, stderr: str | None = None) -> str:
    """The single ``error:`` line (and no traceback, no SQLAlchemy boilerplate)."""
    text = stderr if stderr is not None else result.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in text, text[-3000:]
    assert "Background on this error" not in text and "sqlalche.me" not in text, text[-3000:]
    lines = [x for x in text.splitlines() if x.startswith("error:")]
    assert len(lines) == 1, text[-3000:]
    return lines[0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """``path`` (a file or folder) cannot be written, root included, inside the block."""
    if os.geteuid() == 0:
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
        if done.returncode != 0:
            pytest.skip(f"chattr +i is not available here: {done.stderr.decode().strip()}")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(path)], check=True)
    else:
        mode = path.stat().st_mode
        path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            path.chmod(mode)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Another connection holds ``path`` locked (``BEGIN EXCLUSIVE``) inside the block."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        db.execute("ROLLBACK")
        db.close()


def some_database(path: Path, rows: int = 3000) -> Path:
    """A valid SQLite file of many pages (not an MLflow store: creating one costs seconds)."""
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE t (a TEXT)")
    db.executemany("INSERT INTO t VALUES (?)", [("x" * 200,)] * rows)
    db.commit()
    db.close()
    return path


def truncated(path: Path) -> Path:
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate(size // 2)
    return path


# ------------------------------------------------------------------------- the MLflow store


def run_logged(tmp_path: Path, uri: str, *extra: str) -> object:
    return run_cli("metric=id_based", f"tracking.tracking_uri={uri}", *extra, cwd=tmp_path)


def assert_results_kept(result: object, line: str) -> None:
    """Only the logging failed: the line says so and where, and the results are there."""
    out_dir: Path = result.out_dir  # type: ignore[attr-defined]
    assert f"Only the logging failed: the run's results are written in {out_dir}" in line
    assert "tracking=none" in line and "tracking.tracking_uri=" in line
    assert result.summary()["n_samples"] == N_SAMPLES  # type: ignore[attr-defined]
    assert len(result.rows()) == N_SAMPLES  # type: ignore[attr-defined]


@pytest.mark.parametrize("path", LOGGED_BY)
@pytest.mark.parametrize(
    "damage", ["random-bytes", "text-file", "truncated", "empty-header"]
)
def test_corrupt_mlflow_store_is_one_line_and_keeps_results(
    tmp_path: Path, path: str, damage: str
) -> None:
    db = tmp_path / "mlflow.db"
    if damage == "random-bytes":
        db.write_bytes(os.urandom(8192))
    elif damage == "text-file":
        db.write_text("these are my notes, not a database\n" * 50)
    elif damage == "truncated":
        truncated(some_database(db))
    else:  # a SQLite header and nothing behind it
        db.write_bytes(some_database(tmp_path / "full.db").read_bytes()[:100])
    before = digest(db)
    result = run_logged(tmp_path, f"sqlite:///{db}", *PATHS[path])
    assert result.returncode == 2
    line = one_error(result)
    assert line.startswith(f"error: MLflow store sqlite:///{db}: the database file is corrupt (")
    assert "move it aside" in line
    assert_results_kept(result, line)
    assert digest(db) == before  # the broken store is left for the user to look at


@pytest.mark.parametrize("path", LOGGED_BY)
@pytest.mark.parametrize("where", ["folder-is-a-file", "deeper-under-a-file", "store-is-a-folder",
                                   "under-proc-file", "folder-in-proc"])
def test_mlflow_store_path_that_cannot_be_a_file(tmp_path: Path, path: str, where: str) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    (tmp_path / "afolder.db").mkdir()
    not_a_folder = f"{plain} is a file, not a folder"
    db, cause = {
        "folder-is-a-file": (plain / "mlflow.db", not_a_folder),
        "deeper-under-a-file": (plain / "a" / "b" / "mlflow.db", not_a_folder),
        "store-is-a-folder": (tmp_path / "afolder.db", "is a folder, not a database file"),
        "under-proc-file": (Path("/proc/version/x.db"), "/proc/version is a file, not a folder"),
        "folder-in-proc": (Path("/proc/harness-nowhere/x.db"), "cannot create its folder"),
    }[where]
    result = run_logged(tmp_path, f"sqlite:///{db}", *PATHS[path])
    assert result.returncode == 2
    line = one_error(result)
    assert line.startswith(f"error: MLflow store sqlite:///{db}: ")
    assert cause in line and "fix the path" in line
    assert_results_kept(result, line)
    assert plain.read_text() == "x"


@pytest.mark.slow
def test_missing_store_folder_is_created(tmp_path: Path) -> None:
    db = tmp_path / "new" / "deeper" / "mlflow.db"
    result = run_logged(tmp_path, f"sqlite:///{db}", "tracking.background=false")
    assert result.returncode == 0, result.stderr
    assert db.is_file()


@pytest.mark.parametrize("path", LOGGED_BY)
@pytest.mark.parametrize("what", ["file", "folder"])
def test_read_only_mlflow_store(tmp_path: Path, path: str, what: str) -> None:
    folder = tmp_path / "store"
    folder.mkdir()
    db = some_database(folder / "mlflow.db", rows=10)
    before = digest(db)
    with read_only(db if what == "file" else folder):
        result = run_logged(tmp_path, f"sqlite:///{db}", *PATHS[path])
    assert result.returncode == 2
    line = one_error(result)
    assert line.startswith(f"error: MLflow store sqlite:///{db}: ")
    expected = "the database is read-only" if what == "file" else f"its folder {folder}"
    assert expected in line and "writable" in line
    assert_results_kept(result, line)
    assert digest(db) == before


@pytest.mark.slow
@pytest.mark.parametrize("path", LOGGED_BY)
def test_locked_mlflow_store(tmp_path: Path, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store, "BUSY_TIMEOUT_S", 0.5)  # the helper process gets it too
    db = some_database(tmp_path / "mlflow.db", rows=10)
    with locked(db):
        result = run_logged(tmp_path, f"sqlite:///{db}", *PATHS[path])
    assert result.returncode == 2
    line = one_error(result)
    assert line.startswith(f"error: MLflow store sqlite:///{db}: another process holds")
    assert "waited 0.5 s" in line and "wait until the process that holds it ends" in line
    assert_results_kept(result, line)


@pytest.mark.parametrize("path", LOGGED_BY)
def test_store_credentials_are_never_printed(tmp_path: Path, path: str) -> None:
    secret = "s3cr3t-store-pw"
    uri = f"http://alice:{secret}@127.0.0.1:1"
    result = run_cli("metric=id_based", f"tracking.tracking_uri={uri}", *PATHS[path],
                     cwd=tmp_path, env={"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"})
    assert result.returncode == 2
    line = one_error(result)
    assert line.startswith("error: MLflow store http://***@127.0.0.1:1: ")
    assert_results_kept(result, line)
    texts = [result.stdout, result.stderr]
    texts += [p.read_text("utf-8", "replace") for p in tmp_path.rglob("*") if p.is_file()]
    assert not any(secret in t for t in texts)


def test_sweep_on_a_corrupt_store_stops_before_any_job(tmp_path: Path) -> None:
    db = tmp_path / "mlflow.db"
    db.write_bytes(os.urandom(4096))
    sweep = tmp_path / "sweep"
    result = run_cli("-m", "metric=id_based,id_ranked", f"tracking.tracking_uri=sqlite:///{db}",
                     f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert result.returncode == 2
    line = one_error(result)
    assert line.startswith(f"error: MLflow store sqlite:///{db}: the database file is corrupt")
    assert line.endswith("no job of the sweep has run")
    assert not list(sweep.glob("*/samples.jsonl"))


@pytest.mark.slow
def test_sweep_whose_parent_cannot_be_closed_is_one_line_and_keeps_results(
    tmp_path: Path, mlflow_store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.tracking import sweep as sweep_runs

    def store_breaks(*args: object, **kwargs: object) -> None:
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(sweep_runs, "close_parent", store_breaks)
    sweep = tmp_path / "sweep"
    result = run_cli("-m", "metric=id_based,id_ranked", "experiment_name=broken_parent",
                     f"hydra.sweep.dir={sweep}", cwd=tmp_path,
                     env={"MLFLOW_TRACKING_URI": mlflow_store})
    assert result.returncode == 2
    line = one_error(result)
    assert line.startswith(f"error: MLflow store {mlflow_store}: ")
    assert line.endswith(f"the jobs' results are written in {sweep}")
    for job in ("0", "1"):
        summary = json.loads((sweep / job / "summary.json").read_text("utf-8"))
        assert summary["n_samples"] == N_SAMPLES


# ----------------------------------------------------------------------- the verdict cache


def judged(server: JudgeServer, *extra: str) -> tuple[str, ...]:
    return ("metric=llm_with_reference", "judge=local", f"judge.base_url={server.base_url}",
            "judge.model=test-judge", "tracking=none", *extra)


def expected_scores() -> list[float]:
    """Average precision of each sample, relevance = the chunk is a reference (the labels)."""
    return [
        average_precision(
            [int(i in r["reference_context_ids"]) for i in r["retrieved_context_ids"]], 1e-10
        )
        for r in sample_rows()
    ]


def refused(result: object, server: JudgeServer, path: Path, cause: str) -> str:
    """The run stopped before any judge call, with one line naming the cache file."""
    assert result.returncode == 2  # type: ignore[attr-defined]
    line = one_error(result)
    assert line.startswith(f"error: verdict cache {path}: "), line
    assert cause in line and "judge.cache=false" in line
    assert server.stats.requests == 0
    out_dir: Path = result.out_dir  # type: ignore[attr-defined]
    assert not (out_dir / "samples.jsonl").exists() and not (out_dir / "summary.json").exists()
    return line


@pytest.mark.parametrize("damage", ["random-bytes", "text-file", "truncated"])
def test_corrupt_cache_file_is_refused_before_any_call(
    tmp_path: Path, judge_server: JudgeServer, damage: str
) -> None:
    judge_server.labels.update(sample_labels())
    path = default_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    if damage == "random-bytes":
        path.write_bytes(os.urandom(16384))
    elif damage == "text-file":
        path.write_text("not a cache\n" * 100)
    else:
        first = run_cli(*judged(judge_server), cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        judge_server.reset_stats()
        db = sqlite3.connect(path)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        truncated(path)
        (tmp_path / "again").mkdir()
    before = digest(path)
    result = run_cli(*judged(judge_server), cwd=tmp_path / ("again" if damage == "truncated"
                                                            else ""))
    line = refused(result, judge_server, path, "the file is corrupt (")
    assert "delete it or move it aside" in line
    assert digest(path) == before


@pytest.mark.parametrize("where", ["xdg-is-a-file", "path-under-a-file", "path-is-a-folder",
                                   "under-proc"])
def test_cache_path_that_cannot_be_a_file(
    tmp_path: Path, judge_server: JudgeServer, where: str
) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    env: dict[str, str] = {}
    extra: tuple[str, ...] = ()
    if where == "xdg-is-a-file":
        env = {"XDG_CACHE_HOME": str(plain)}
        path, cause = plain / "harness" / "verdicts.sqlite", f"{plain} is a file, not a folder"
    elif where == "path-under-a-file":
        path, cause = plain / "c.sqlite", f"{plain} is a file, not a folder"
        extra = (f"judge.cache_path={path}",)
    elif where == "path-is-a-folder":
        path, cause = tmp_path, f"{tmp_path} is a folder, not a file"
        extra = (f"judge.cache_path={path}",)
    else:
        path, cause = Path("/proc/harness-nowhere/c.sqlite"), "cannot create its folder"
        extra = (f"judge.cache_path={path}",)
    result = run_cli(*judged(judge_server, *extra), cwd=tmp_path, env=env)
    refused(result, judge_server, path, cause)
    assert plain.read_text() == "x"


@pytest.mark.parametrize("what", ["file", "folder"])
def test_read_only_cache_is_refused(tmp_path: Path, judge_server: JudgeServer, what: str) -> None:
    judge_server.labels.update(sample_labels())
    folder = tmp_path / "cache"
    folder.mkdir()
    path = folder / "c.sqlite"
    VerdictCache(path).close()
    for extra in (path.with_name("c.sqlite-wal"), path.with_name("c.sqlite-shm")):
        assert not extra.exists()  # closed cleanly: a read-only folder cannot be the cause
    before = digest(path)
    with read_only(path if what == "file" else folder):
        result = run_cli(*judged(judge_server, f"judge.cache_path={path}"), cwd=tmp_path)
    cause = "the file is read-only" if what == "file" else "SQLite cannot open it"
    line = refused(result, judge_server, path, cause)
    assert "writable" in line
    assert digest(path) == before


def test_locked_cache_is_refused(
    tmp_path: Path, judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(verdict_cache, "BUSY_TIMEOUT_S", 0.5)
    path = tmp_path / "c.sqlite"
    VerdictCache(path).close()
    with locked(path):
        result = run_cli(*judged(judge_server, f"judge.cache_path={path}"), cwd=tmp_path)
    line = refused(result, judge_server, path, "another process holds it locked")
    assert "waited 0.5 s" in line


def test_another_programs_database_is_refused_and_left_alone(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    path = some_database(tmp_path / "notes.sqlite", rows=5)
    before = digest(path)
    result = run_cli(*judged(judge_server, f"judge.cache_path={path}"), cwd=tmp_path)
    refused(result, judge_server, path, "not a verdict cache")
    assert digest(path) == before


#: Damaged values of the ``value`` column: each a miss, asked again and replaced.
BAD_VALUES = [
    "{not json",
    "[1, 2, 3]",
    '"just a string"',
    '{"usage": {}}',
    '{"content": 7, "usage": {}}',
    '{"content": "{\\"verdict\\": 1}", "usage": "lots"}',
    '{"content": "{\\"verdict\\": 1}", "usage": {"prompt_tokens": "many"}}',
    '{"content": "{\\"verdict\\": 1}", "usage": {}, "logprobs": {"a": 1}}',
    '{"content": "{\\"verdict\\": 1}", "usage": {}, "logprobs": [{"top_logprobs": [{}]}]}',
    "",
]


@pytest.mark.slow
def test_damaged_rows_are_misses_asked_again_and_replaced(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    judge_server.labels.update(sample_labels())
    first = run_cli(*judged(judge_server), cwd=tmp_path / "")
    assert first.returncode == 0, first.stderr
    db = sqlite3.connect(default_path())
    keys = [k for (k,) in db.execute("SELECT key FROM replies ORDER BY key")]
    assert len(keys) == N_CHUNKS
    damaged = keys[: len(BAD_VALUES)]
    for key, value in zip(damaged, BAD_VALUES, strict=True):
        db.execute("UPDATE replies SET value = ? WHERE key = ?", (value, key))
    db.execute("UPDATE replies SET value = 42 WHERE key = ?", (keys[-1],))  # not even text
    db.commit()
    db.close()

    judge_server.reset_stats()
    (tmp_path / "second").mkdir()
    second = run_cli(*judged(judge_server), cwd=tmp_path / "second")
    assert second.returncode == 0, second.stderr
    assert "Traceback" not in second.stderr
    n_bad = len(BAD_VALUES) + 1
    assert judge_server.stats.requests == n_bad  # each damaged entry asked again, no more
    judge = second.summary()["judge"]
    assert judge["cache_hits"] == N_CHUNKS - n_bad
    assert [r["score"] for r in second.rows()] == expected_scores()
    assert f"{n_bad} entries could not be read" in second.stderr

    judge_server.reset_stats()
    (tmp_path / "third").mkdir()
    third = run_cli(*judged(judge_server), cwd=tmp_path / "third")
    assert third.returncode == 0, third.stderr
    assert judge_server.stats.requests == 0  # the damaged entries were replaced
    assert "could not be read" not in third.stderr


def test_a_write_that_fails_mid_run_warns_once_and_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(verdict_cache, "BUSY_TIMEOUT_S", 0.2)
    path = tmp_path / "c.sqlite"
    cache = VerdictCache(path)
    cache.put("a", {"content": "x", "usage": {}}, model="m", prompt_sha="p", variant="v")
    with locked(path):
        for key in ("b", "c"):
            cache.put(key, {"content": "y", "usage": {}}, model="m", prompt_sha="p", variant="v")
        assert cache.get("a") == {"content": "x", "usage": {}}  # readers still read (WAL)
    assert cache.get("b") is None
    cache.close()
    err = capsys.readouterr().err
    assert err.count("warning:") == 1
    assert f"verdict cache {path}: another process holds it locked" in err
    assert "the run goes on" in err


# ------------------------------------------------------------- python -m harness.cli.cache


def filled_cache(path: Path) -> list[str]:
    """A cache of six entries under three prompts; returns the prompt hashes."""
    shas = [hashlib.sha256(t.encode()).hexdigest() for t in ("one", "two", "three")]
    cache = VerdictCache(path)
    for i in range(6):
        cache.put(f"k{i}", {"content": "{}", "usage": {"prompt_tokens": 5}},
                  model=f"model-{i % 2}", prompt_sha=shas[i % 3], variant="v")
    cache.close()
    return shas


def count(path: Path) -> int:
    db = sqlite3.connect(path)
    try:
        return int(db.execute("SELECT COUNT(*) FROM replies").fetchone()[0])
    finally:
        db.close()


def cache_cmd(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cache_cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("args", [
    ["--prompt", ""], ["--prompt", "%"], ["--prompt", "_"], ["--prompt", "%%"],
    ["--prompt", "a%"], ["--prompt", "' OR 1=1 --"], ["--prompt", " "], ["--model", ""],
    ["--model", "  "], [], ["--prompt", "%", "--model", "model-0"],
])
def test_prune_never_deletes_what_it_was_not_asked_to(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    path = tmp_path / "c.sqlite"
    filled_cache(path)
    code, out, err = cache_cmd(capsys, "--path", str(path), "prune", *args)
    assert code == 2
    line = one_error(None, err)
    assert "nothing was deleted" in line
    assert "removed" not in out
    assert count(path) == 6


def test_prune_by_prompt_prefix_and_model_deletes_only_those(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.sqlite"
    shas = filled_cache(path)
    code, out, _ = cache_cmd(capsys, "--path", str(path), "prune", "--prompt", shas[0][:8].upper())
    assert code == 0 and "removed 2 entries" in out
    code, out, _ = cache_cmd(capsys, "--path", str(path), "prune", "--prompt", shas[1],
                             "--model", "model-1")
    assert code == 0 and "removed 1 entries" in out  # k1 only (k4 is model-0)
    code, out, _ = cache_cmd(capsys, "--path", str(path), "prune", "--model", "model-%")
    assert code == 0 and "removed 0 entries" in out  # a name, not a pattern
    assert count(path) == 3


@pytest.mark.parametrize("command", [["info"], ["info", "--json"], ["prune", "--older-than", "0s"]])
@pytest.mark.parametrize("problem", ["missing", "random-bytes", "under-a-file", "a-folder",
                                     "another-database", "empty-path", "truncated"])
def test_cache_command_on_an_unusable_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str], problem: str
) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    path = tmp_path / "c.sqlite"
    if problem == "random-bytes":
        path.write_bytes(os.urandom(8192))
    elif problem == "under-a-file":
        path = plain / "c.sqlite"
    elif problem == "a-folder":
        path = tmp_path
    elif problem == "another-database":
        some_database(path, rows=5)
    elif problem == "truncated":
        truncated(some_database(path))
    before = digest(path) if path.is_file() else None
    given = "" if problem == "empty-path" else str(path)
    code, out, err = cache_cmd(capsys, "--path", given, *command)
    if problem == "missing" and command[0] == "info":
        # nothing there yet is not an error: info says so, and creates nothing
        assert code == 0 and err == "" and not path.exists()
        assert ("no verdict cache yet" in out) or json.loads(out)["entries"] == 0
        return
    assert code == 2
    line = one_error(None, err)
    expected = {
        "missing": f"error: no verdict cache at {path}",
        "random-bytes": f"error: verdict cache {path}: the file is corrupt",
        "under-a-file": f"error: verdict cache {path}: {plain} is a file, not a folder",
        "a-folder": f"error: verdict cache {path}: {path} is a folder, not a file",
        "another-database": f"error: verdict cache {path}: a SQLite database of something else",
        "empty-path": "error: --path is empty",
        "truncated": f"error: verdict cache {path}: the file is corrupt",
    }[problem]
    assert line.startswith(expected), line
    assert out == ""
    if problem == "missing":
        assert not path.exists()  # info does not create a cache
    if before is not None:
        assert digest(path) == before


def test_cache_info_reads_rows_of_odd_types(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.sqlite"
    filled_cache(path)
    db = sqlite3.connect(path)
    db.execute("UPDATE replies SET created = 'yesterday', prompt_tokens = 'many' WHERE key = 'k0'")
    db.commit()
    db.close()
    code, out, err = cache_cmd(capsys, "--path", str(path), "info")
    assert code == 0, err
    assert "6 entries" in out
    code, out, err = cache_cmd(capsys, "--path", str(path), "info", "--json")
    assert code == 0 and json.loads(out)["entries"] == 6
