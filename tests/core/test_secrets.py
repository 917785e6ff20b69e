"""Issue 12, class 7 (the run's side): URI credentials given on the command line or in the
environment reach no file, no MLflow field and no console line.

Each case scans every file the run wrote (its folder with ``.hydra/``, the MLflow store and
its artifacts) and the console for the secret."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from conftest import run_cli
from helpers import mlflow_runs

SECRET = "s3cretPW-4711"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def leaks(result, *folders: Path) -> list[str]:
    """Where ``SECRET`` appears: console streams and files (as bytes, so binary stores too)."""
    found = [name for name, text in (("stdout", result.stdout), ("stderr", result.stderr))
             if SECRET in text]
    for folder in folders:
        for path in folder.rglob("*"):
            if path.is_file() and SECRET.encode() in path.read_bytes():
                found.append(str(path))
    return found


@pytest.mark.slow
def test_credentials_in_an_unused_override_reach_no_file(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    uri = f"sqlite:///{store / 'mlflow.db'}"
    url = f"http://alice:{SECRET}@127.0.0.1:{free_port()}/v1"
    result = run_cli("metric=id_based", f"judge.base_url={url}", "experiment_name=secrets",
                     cwd=tmp_path, env={"MLFLOW_TRACKING_URI": uri,
                                        "MLFLOW_ARTIFACTS_DESTINATION": str(store / "art")})
    assert result.returncode == 0, result.stderr
    assert leaks(result, result.out_dir, store, tmp_path / "mlruns") == []
    [run] = mlflow_runs.runs(uri, "secrets")
    assert run.info.run_name == "id_based"  # an endpoint's URL is never part of a name
    assert "alice" not in run.data.tags["hydra.overrides"]
    assert "***@127.0.0.1" in run.data.tags["hydra.overrides"]
    overrides = (result.out_dir / ".hydra" / "overrides.yaml").read_text()
    assert "judge.base_url=${oc.env:HARNESS_SECRET_" in overrides


@pytest.mark.parametrize("how", ["override", "environment"])
def test_credentials_in_the_tracking_uri_never_leave_the_process(
    tmp_path: Path, how: str
) -> None:
    uri = f"http://alice:{SECRET}@127.0.0.1:{free_port()}"
    env = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "5"}
    args = ["metric=id_based", "tracking.background=false"]
    if how == "override":
        args.append(f"tracking.tracking_uri={uri}")
    else:
        env["MLFLOW_TRACKING_URI"] = uri
    result = run_cli(*args, cwd=tmp_path, env=env)
    assert result.returncode == 2  # nothing listens there: logging fails, in one line
    assert "Traceback" not in result.stderr
    [line] = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert "MLflow" in line and "127.0.0.1" in line
    assert leaks(result, result.out_dir) == []
    config = (result.out_dir / "config.yaml").read_text()
    assert "http://***@127.0.0.1" in config  # the setting is recorded, without credentials


@pytest.mark.slow
def test_credentials_in_a_sweep_override_reach_no_job_folder(tmp_path: Path) -> None:
    url = f"http://bob:{SECRET}@127.0.0.1:{free_port()}/v1"
    sweep = tmp_path / "sweep"
    result = run_cli("-m", "metric=id_based,id_ranked", f"judge.base_url={url}",
                     "tracking=none", f"hydra.sweep.dir={sweep}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert leaks(result, sweep) == []
    assert len(list(sweep.glob("*/summary.json"))) == 2
    assert os.environ.get("HARNESS_SECRET_0") is None  # the test process is left as it was


@pytest.mark.slow
def test_a_swept_list_of_credentialed_urls_stays_a_sweep(tmp_path: Path,
                                                          mlflow_store: str) -> None:
    """Each URL of ``a,b`` is hidden on its own: two jobs, each with its own URL, shown
    masked in the console and MLflow, the password nowhere."""
    urls = [f"http://bob:{SECRET}@127.0.0.1:{free_port()}/v{i}" for i in (1, 2)]
    sweep = tmp_path / "sweep"
    result = run_cli("-m", "metric=id_based", f"judge.base_url={','.join(urls)}",
                     "experiment_name=swept_secrets", f"hydra.sweep.dir={sweep}", cwd=tmp_path,
                     env={"MLFLOW_TRACKING_URI": mlflow_store})
    assert result.returncode == 0, result.stderr
    assert leaks(result, sweep) == []
    configs = sorted((sweep / str(n) / "config.yaml").read_text() for n in (0, 1))
    assert len(configs) == 2 and configs[0] != configs[1]  # two jobs, two URLs
    for url in urls:  # the console ranks both jobs, each URL masked
        masked = "http://***@" + url.split("@", 1)[1]
        assert f"judge.base_url={masked}" in result.stdout
    runs = mlflow_runs.runs(mlflow_store, "swept_secrets")
    assert len(runs) == 3
    assert not any(SECRET in str(r.data.params) + str(r.data.tags) + (r.info.run_name or "")
                   for r in runs)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("postgresql://h:5432/db?user=u&password=s3cr3t&sslmode=require",
         "postgresql://h:5432/db?user=u&password=***&sslmode=require"),
        ("error at https://api.example/v1?api_key=abcdef123 (401)",
         "error at https://api.example/v1?api_key=*** (401)"),
        ("postgresql://u:pw@h/db?PASSWORD=x1", "postgresql://***@h/db?PASSWORD=***"),
        ("a?b=c&d=e", "a?b=c&d=e"),
    ],
)
def test_credentials_in_query_parameters_are_masked(text: str, expected: str) -> None:
    from harness.core.redact import redact

    assert redact(text) == expected
