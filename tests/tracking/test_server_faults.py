"""A tracking server that fails behind a proxy (issue 24, class 10): a 5xx at the check is
one line at once; MLflow's own retries of later requests are bounded (unless the user set
them), so a proxy that answers 502 mid-run is one line within seconds, not four minutes.
The servers are real HTTP servers on 127.0.0.1."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from conftest import run_cli

from harness.core.errors import TrackingError
from harness.tracking.mlflow import server

PROBE = "/api/2.0/mlflow/experiments/search"


#: When each test server got its first request (``time.monotonic``), by URL.
FIRST: dict[str, float] = {}


def serve(status_of: dict[str, int], default: int) -> Iterator[str]:
    """An HTTP server answering ``status_of[path]`` (else ``default``); its URL. A 200 is an
    empty page of experiments."""
    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            FIRST.setdefault(f"http://127.0.0.1:{self.server.server_address[1]}",
                             time.monotonic())
            status = status_of.get(self.path.split("?", 1)[0], default)
            body = b'{"experiments": []}' if status == 200 else b"<html>Bad Gateway</html>"
            self.send_response(status)
            self.send_header("Content-Type", "application/json" if status == 200 else "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer  # noqa: N815

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test's process environment without MLflow's retry settings (restored after)."""
    for name in server.BOUNDS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def gateway() -> Iterator[str]:
    """A proxy whose server is down: 502 to everything."""
    yield from serve({}, 502)


@pytest.fixture
def flaky() -> Iterator[str]:
    """The check's request passes; every other request gets a 502."""
    yield from serve({PROBE: 200}, 502)


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_a_5xx_at_the_check_is_one_line_at_once(bounds: None, status: int) -> None:
    import mlflow.utils.rest_utils  # noqa: F401 - imported before the clock starts

    for url in serve({}, status):
        began = time.monotonic()
        with pytest.raises(TrackingError) as e:
            server.check(url.replace("http://", "http://user:pw-canary-5xx@"))
        took = time.monotonic() - began
    message = str(e.value)
    assert message.startswith("MLflow store http://***@127.0.0.1:")
    assert f"answered HTTP {status} " in message and "pw-canary" not in message
    assert took < 5.0


def test_the_check_bounds_mlflows_retries_unless_the_user_set_them(
    bounds: None, monkeypatch: pytest.MonkeyPatch, gateway: str
) -> None:
    import os

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "77")
    with pytest.raises(TrackingError):
        server.check(gateway)
    assert os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "3"
    assert os.environ["MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR"] == "1"
    assert os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "77"  # the user's own is kept


@pytest.mark.slow
def test_a_run_against_a_502_proxy_is_one_line(bounds: None, gateway: str,
                                               tmp_path: Path) -> None:
    result = run_cli("metric=id_based", f"tracking.tracking_uri={gateway}", cwd=tmp_path)
    ended = time.monotonic()
    assert result.returncode == 2, result.stderr
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: MLflow store "), result.stderr
    assert "answered HTTP 502" in lines[0] and "the run's results are written" in lines[0]
    assert (result.out_dir / "samples.jsonl").exists()
    # the run scores first and logs at the end: from the server's first request, seconds
    assert ended - FIRST[gateway] < 10.0


@pytest.mark.slow
def test_a_proxy_failing_after_the_check_ends_within_the_bounded_retries(
    bounds: None, flaky: str
) -> None:
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    server.check(flaky)  # the probe passes
    began = time.monotonic()
    with pytest.raises(MlflowException):
        MlflowClient(tracking_uri=flaky).create_experiment("x")
    took = time.monotonic() - began
    # 3 retries, back-off 1, 2, 4 s (+ jitter): seconds; MLflow's defaults take minutes
    assert took < 30.0
