"""Waits with a bound, and server strings on one line (issue 24, classes 4, 8 and 10):
``judge.timeout`` is a deadline for the whole request, not for each read; the preflight's
``judge.preflight_timeout`` too; a model id with a line break from ``/models`` stays on one
line; an API key with a line break is refused by name, never printed."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import CliResult, run_cli
from helpers.judge_server import JudgeServer


@pytest.fixture(autouse=True)
def _no_known_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.core.redact

    monkeypatch.setattr(harness.core.redact, "_SECRETS", set())


def llm(url: str, *extra: str) -> tuple[str, ...]:
    return ("metric=llm_with_reference", "judge=local", f"judge.base_url={url}",
            "judge.model=test-judge", "tracking=none", *extra)


def one_error(result: CliResult) -> str:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.mark.slow
def test_a_reply_dripped_slower_than_the_timeout_times_out_at_the_deadline(
    tmp_path: Path
) -> None:
    # the body comes in 8 pieces 0.8 s apart: each read is quick, the whole takes 6.4 s
    with JudgeServer(drip_ms=800) as server:
        result = run_cli(*llm(server.base_url, "judge.timeout=1", "judge.max_retries=0",
                              "judge.max_concurrency=4", "run.limit=1",
                              "run.max_unscored_frac=1"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    [row] = result.rows()
    assert row["score"] is None
    assert "no answer within judge.timeout=1 s" in row["error"]
    summary = result.summary()
    assert summary["judge"]["timeouts"] == summary["judge"]["requests"] == 3
    # the three chunks' calls run at once: one deadline (1 s), not 6.4 s of drip
    assert summary["timing"]["judge_s"] < 3.0


def test_a_reply_that_fits_the_deadline_is_read_whole(tmp_path: Path) -> None:
    with JudgeServer(drip_ms=50) as server:  # 0.4 s a reply, under judge.timeout=5
        result = run_cli(*llm(server.base_url, "judge.timeout=5", "judge.max_retries=0",
                              "run.limit=1"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    [row] = result.rows()
    assert row["score"] is not None and row.get("error") is None


@pytest.fixture
def dripping() -> Iterator[str]:
    """A server that sends its headers at once, then one byte every 0.2 s of a 200-byte
    body, to every request; its base URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def answer(conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 200\r\n\r\n")
            for _ in range(200):
                if stop.wait(0.2):
                    return
                try:
                    conn.sendall(b" ")
                except OSError:
                    return

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    finally:
        stop.set()
        listener.close()


@pytest.mark.slow
def test_a_dripping_models_page_ends_the_preflight_at_its_deadline(
    tmp_path: Path, dripping: str
) -> None:
    began = time.monotonic()
    result = run_cli(*llm(dripping, "judge.preflight_timeout=1", "run.limit=1"), cwd=tmp_path)
    took = time.monotonic() - began
    line = one_error(result)
    assert "did not answer within 1 s" in line, line
    assert took < 20.0  # the body takes 40 s (start-up on a loaded machine takes seconds)


@pytest.mark.parametrize("name", ["gpt\nx", "evil\r\nerror: injected", "tab\tand\x1b[31mred"])
def test_a_model_id_with_a_line_break_stays_on_one_line(tmp_path: Path, name: str) -> None:
    with JudgeServer(models=[name, "other-model"]) as server:
        result = run_cli("metric=llm_with_reference", "judge=local",
                         f"judge.base_url={server.base_url}", "judge.model=auto",
                         "tracking=none", "run.limit=1", cwd=tmp_path)
    line = one_error(result)
    assert "judge.model=auto:" in line and "serves 2 models" in line and "other-model" in line
    assert "\x1b" not in line


@pytest.mark.slow
def test_a_404_listing_served_models_with_line_breaks_is_one_line(tmp_path: Path) -> None:
    with JudgeServer(models=["served\none", "served-two"]) as server:
        result = run_cli(*llm(server.base_url, "run.limit=1"), cwd=tmp_path)
    line = one_error(result)
    assert "does not serve the model 'test-judge'" in line and "served one, served-two" in line


@pytest.mark.parametrize(
    ("key", "fragment"),
    [
        ("sk-canary-123456\r", "holds a line break"),
        ("sk-canary-123456\n", "holds a line break"),
        ("sk-canary\r\n-123456", "holds a line break"),
        ("sk-canary-123456\x1b", "not printable ASCII"),
        ("sk-canary-1234é56", "not printable ASCII"),
    ],
)
def test_an_api_key_that_no_header_can_carry_is_named_never_printed(
    tmp_path: Path, key: str, fragment: str
) -> None:
    with JudgeServer() as server:
        result = run_cli("metric=llm_with_reference", "judge=local",
                         f"judge.base_url={server.base_url}", "judge.model=test-judge",
                         "judge.api_key_env=MY_JUDGE_KEY", "tracking=none", "run.limit=1",
                         cwd=tmp_path, env={"MY_JUDGE_KEY": key})
        assert server.stats.requests == 0  # refused before any call
    line = one_error(result)
    assert line.startswith("error: judge.api_key_env: the environment variable MY_JUDGE_KEY ")
    assert fragment in line
    assert "canary" not in result.stderr + result.stdout
