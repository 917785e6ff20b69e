"""Secrets on every path a text takes (issue 24, classes 8 and 9): what a shard's worker
sends back (a harness error, an OS error, a crash's trace), an interpolated password that
must be resolved, not sent as ``${...}``; and the PostgreSQL deadline's socket cut."""

from __future__ import annotations

import asyncio
import logging
import socket
from pathlib import Path
from typing import Any

import pytest

from harness.core.errors import ConfigError, DatasetError
from harness.core.redact import register
from harness.core.secrets import hide
from harness.judges.cache.postgres import check_url
from harness.judges.cache.stall import Stalled, deadline
from harness.run.outputs import OutputError
from harness.shards.plan import Span
from harness.shards.worker import ShardFailed, ShardWorker, failure

SPAN = Span(0, 2, 0, 10, 1, 5)
KEY = "sk-worker-canary-0a1b2c3d"
URL = "https://svc:Pa55word-canary@127.0.0.1:9/search"


@pytest.fixture(autouse=True)
def _secrets(clean_secrets: None) -> None:
    """No registered secret and no hidden value before the test (``conftest``)."""


def crossed(work: Any) -> BaseException:
    """What the parent raises for a worker whose work was ``work``."""
    return failure(ShardWorker._answer(work), SPAN)


def raise_(error: BaseException) -> Any:
    def work() -> None:
        raise error
    return work


def test_a_harness_error_from_a_worker_is_redacted_with_its_attributes() -> None:
    register(KEY)
    error = crossed(raise_(DatasetError(f"/data/{KEY}.jsonl", f"bad {URL}", line=3)))
    assert isinstance(error, DatasetError)
    assert str(error) == "shard 1 of 2 (lines 1-5): /data/***.jsonl:3: bad " \
                         "https://***@127.0.0.1:9/search"
    assert error.path == "/data/***.jsonl" and error.line == 3


def test_a_crash_in_a_worker_is_one_redacted_line_and_its_trace_goes_to_debug(
    caplog: pytest.LogCaptureFixture
) -> None:
    register(KEY)
    with caplog.at_level(logging.DEBUG, logger="harness.shards.worker"):
        error = crossed(raise_(RuntimeError(f"GET {URL} with key {KEY}\nsecond line")))
    assert isinstance(error, ShardFailed)
    assert str(error) == ("shard 1 of 2 (lines 1-5): its worker failed: RuntimeError: GET "
                          "https://***@127.0.0.1:9/search with key *** second line")
    [record] = [r for r in caplog.records if r.name == "harness.shards.worker"]
    trace = record.getMessage()
    assert "Traceback" in trace and "Pa55word" not in trace and KEY not in trace


def test_a_secret_registered_only_in_the_parent_is_still_masked() -> None:
    outcome = ShardWorker._answer(raise_(ValueError(f"token {KEY} refused")))
    register(KEY)  # the worker did not know it; the parent does
    error = failure(outcome, SPAN)
    assert KEY not in str(error) and "token *** refused" in str(error)


def test_an_os_error_in_a_worker_names_its_path_redacted(tmp_path: Path) -> None:
    register(KEY)
    path = tmp_path / KEY / "rows-0000.jsonl"
    error = crossed(raise_(PermissionError(13, "Permission denied", str(path))))
    assert isinstance(error, OutputError)
    assert str(error) == (f"shard 1 of 2 (lines 1-5): cannot write {tmp_path}/***/rows-0000.jsonl"
                          " (Permission denied); choose a writable folder (hydra.run.dir=...)")


def test_an_os_error_without_a_path_is_a_crash_line() -> None:
    error = crossed(raise_(OSError(28, "No space left on device")))
    assert isinstance(error, ShardFailed)
    assert str(error).endswith("its worker failed: OSError: [Errno 28] No space left on device")


# -- an interpolated password is resolved, never sent as ${...} -----------------------------

@pytest.mark.parametrize(
    ("value", "hidden"),
    [
        ("postgresql://harness:${oc.env:PGPW}@127.0.0.1/db", False),
        ("postgresql://${oc.env:PGUSER}:${oc.env:PGPW,${oc.env:FALLBACK}}@h/db", False),
        ("postgresql://harness:literal-pw@h/${oc.env:DB}", True),  # a literal secret: hidden
        ("http://user:pw@h", True),
        ("'postgresql://u:${oc.env:P}@h/db?password=abc'", True),
        # '=' unquoted: Hydra cannot read it, and the syntax check refuses it (masked)
        ("postgresql://u:${oc.env:P}@h/db?password=abc", False),
    ],
)
def test_only_literal_secrets_are_hidden_from_hydra(value: str, hidden: bool) -> None:
    [arg] = hide([f"judge.cache_url={value}"])
    assert (arg != f"judge.cache_url={value}") is hidden


def test_an_interpolated_password_reaches_the_cache_resolved(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.config.compose import composed

    monkeypatch.setenv("PGPW", "pg-interp-canary")
    args = hide(["metric=llm_with_reference", "judge=local", "judge.model=m",
                 "judge.base_url=http://127.0.0.1:9/v1",
                 "judge.cache_url=postgresql://harness:${oc.env:PGPW}@127.0.0.1:1/db"])
    cfg = composed(args)
    assert cfg.judge.cache_url == "postgresql://harness:pg-interp-canary@127.0.0.1:1/db"


def test_an_unresolved_interpolation_is_refused_by_name() -> None:
    with pytest.raises(ConfigError) as e:
        check_url("postgresql://harness:${oc.env:PGPW}@127.0.0.1/db")
    assert str(e.value).startswith("judge.cache_url=postgresql://***@127.0.0.1/db: holds an "
                                   "interpolation")


# -- the PostgreSQL deadline: the socket is cut, the waiting read ends at once --------------

class _Conn:
    """What ``stall.cut`` reads of a psycopg connection: ``pgconn.socket``, a real fd."""

    def __init__(self, sock: socket.socket) -> None:
        self.pgconn = type("PG", (), {"socket": sock.fileno()})()


def test_a_frozen_peer_is_cut_at_the_deadline() -> None:
    async def main() -> float:
        ours, theirs = socket.socketpair()  # theirs never answers: a frozen server
        ours.setblocking(False)
        loop = asyncio.get_running_loop()
        began = loop.time()
        try:
            with pytest.raises(Stalled, match=r"no answer within 0.3 s"):
                async with deadline(_Conn(ours), 0.3):
                    data = await loop.sock_recv(ours, 100)
                    if not data:  # EOF: what libpq reports as a closed connection
                        raise ConnectionError("server closed the connection unexpectedly")
            return loop.time() - began
        finally:
            ours.close()
            theirs.close()

    took = asyncio.run(main())
    assert 0.25 < took < 2.0


def test_an_answer_within_the_deadline_is_left_alone() -> None:
    async def main() -> bytes:
        ours, theirs = socket.socketpair()
        ours.setblocking(False)
        theirs.sendall(b"reply")
        try:
            async with deadline(_Conn(ours), 5):
                return await asyncio.get_running_loop().sock_recv(ours, 100)
        finally:
            ours.close()
            theirs.close()

    assert asyncio.run(main()) == b"reply"
