"""``hydra/launcher=ray_cluster`` fails in one line, at once, when its jobs could not run."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from conftest import run_cli
from helpers.errors import fails

from harness.cli import ray_check

SWEEP = ("-m", "hydra/launcher=ray_cluster", "metric=id_based,id_ranked", "tracking=none")


@pytest.fixture
def no_local_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(ray_check, "CURRENT", tmp_path / "ray_current_cluster")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    return tmp_path / "ray_current_cluster"


def test_no_cluster_anywhere(tmp_path: Path, no_local_cluster: Path) -> None:
    fails(run_cli(*SWEEP, cwd=tmp_path),
          "hydra/launcher=ray_cluster: no Ray cluster on this machine and RAY_ADDRESS is not set")


def test_an_address_nobody_answers_is_refused_within_seconds(
    tmp_path: Path, no_local_cluster: Path
) -> None:
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = run_cli(*SWEEP, cwd=tmp_path, env={"RAY_ADDRESS": f"127.0.0.1:{port}"}, timeout=30)
    fails(result, f"no Ray cluster answers at 127.0.0.1:{port}", "check RAY_ADDRESS")
    no_local_cluster.write_text(f"127.0.0.1:{port}")  # `ray start --head` wrote it, then died
    fails(run_cli(*SWEEP, cwd=tmp_path), f"no Ray cluster answers at 127.0.0.1:{port}")


def test_a_listening_address_passes_and_credentials_on_the_command_line_do_not(
    tmp_path: Path, no_local_cluster: Path
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        os.environ["RAY_ADDRESS"] = f"ray://127.0.0.1:{port}"
        try:
            ray_check.check(["-m", "hydra/launcher=ray_cluster"])  # answers: no error
        finally:
            del os.environ["RAY_ADDRESS"]
    result = run_cli(*SWEEP, "judge.cache_url=postgresql://u:secret-pw@127.0.0.1/db", cwd=tmp_path)
    line = fails(result, "judge.cache_url: a credential on the command line does not reach the "
                         "Ray cluster's nodes", "PGUSER/PGPASSWORD")
    assert "secret-pw" not in result.stderr + result.stdout and "secret-pw" not in line


@pytest.mark.parametrize(("address", "expected"), [
    ("10.0.0.5:6379", ("10.0.0.5", 6379)),
    ("ray://head.local:10001", ("head.local", 10001)),
    ("ray://head.local", ("head.local", 10001)),
    ("head", ("head", 6379)),
])
def test_addresses(address: str, expected: tuple[str, int]) -> None:
    assert ray_check._host_port(address) == expected
