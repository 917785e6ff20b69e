"""A database server as the MLflow store (``postgresql://``, ``mysql://``, ``mssql://``) that
does not answer is one line within seconds, whether or not its driver is installed: MLflow
itself, with the driver, retries ten times over about 100 s with a warning each."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from conftest import run_cli
from helpers.chroma_server import free_port

from harness.core.errors import TrackingError
from harness.tracking.mlflow import server


@pytest.fixture
def listening() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections (and says nothing)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


@pytest.mark.parametrize("scheme", ["postgresql", "postgresql+psycopg", "mysql+pymysql", "mssql"])
def test_a_database_that_does_not_answer_is_one_line_without_its_password(scheme: str) -> None:
    port = free_port()
    start = time.monotonic()
    with pytest.raises(TrackingError) as caught:
        server.check(f"{scheme}://u:S3CRETpw@127.0.0.1:{port}/db")
    message = str(caught.value)
    assert time.monotonic() - start < 5
    assert message.startswith(f"MLflow store {scheme}://***@127.0.0.1:{port}/db: the database "
                              f"server at 127.0.0.1:{port} does not answer (Connection refused)")
    assert "S3CRETpw" not in message and "\n" not in message


def test_the_default_port_of_each_database_is_the_one_probed() -> None:
    # nothing listens on a documentation address's port: the message names the port used
    for scheme, port in (("postgresql", 5432), ("mysql", 3306), ("mssql", 1433)):
        with pytest.raises(TrackingError, match=f"at 127.0.0.1:{port} does not answer"):
            server.check(f"{scheme}://u@127.0.0.1/db")  # 127.0.0.1: refused at once


def test_a_database_that_answers_is_left_to_mlflow(listening: int) -> None:
    server.check(f"postgresql://u:pw@127.0.0.1:{listening}/db")  # no error: MLflow opens it
    server.check("postgresql:///db")  # no host: a local socket, MLflow's to open
    server.check("sqlite:///mlflow.db")


@pytest.mark.slow
def test_a_run_into_a_database_that_is_down_is_one_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    uri = f"postgresql://u:S3CRETpw@127.0.0.1:{free_port()}/db"
    result = run_cli("metric=id_based", f"tracking.tracking_uri={uri}",
                     "tracking.background=false", cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: MLflow store postgresql://***@127.0.0.1:")
    assert "S3CRETpw" not in result.stderr + result.stdout
    assert (result.out_dir / "samples.jsonl").is_file()  # the results are kept
