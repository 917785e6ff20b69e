"""A PostgreSQL verdict cache whose server freezes mid-run (SIGSTOP on every server process):
one warning within the statement deadline, and the run goes on uncached (README: "If the
server goes away mid-run, you get one warning: line and the run goes on uncached").

Heavy: needs Debian's PostgreSQL binaries and psycopg (``tests/helpers/postgres.py``)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.postgres import PASSWORD, Postgres, available

from harness.judges.cache import stall
from harness.judges.cache.postgres import PgVerdictCache

heavy = pytest.mark.heavy


@pytest.fixture(scope="module")
def pg() -> Iterator[Postgres]:
    why = available()
    if why:
        pytest.skip(why)
    pytest.importorskip("psycopg")
    with Postgres() as server:
        yield server


def server_pids(pg: Postgres) -> list[int]:
    """The postmaster (``postmaster.pid``'s first line) and its children."""
    root = int((pg.data / "postmaster.pid").read_text().split()[0])
    pids = [root]
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == root:
            pids.append(int(stat.parent.name))
    return pids


@heavy
def test_a_frozen_server_is_one_warning_and_the_cache_steps_aside(
    pg: Postgres, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(stall, "STATEMENT_DEADLINE_S", 1.0)
    url = pg.database("t_frozen")

    async def main() -> tuple[float, object, object]:
        cache = PgVerdictCache(url, lease_s=5)
        await cache.open()
        assert await cache.get("k") is None  # answers while the server runs
        pids = server_pids(pg)
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        try:
            began = time.monotonic()
            got = await cache.get("k")  # frozen: the deadline cuts it
            took = time.monotonic() - began
            claimed = await cache.claim("k2")  # the cache stepped aside: no wait at all
        finally:
            for pid in pids:
                os.kill(pid, signal.SIGCONT)
        await cache.aclose()
        return took, got, claimed

    took, got, claimed = asyncio.run(main())
    assert got is None and claimed is None
    assert took < 5.0
    err = capsys.readouterr().err
    warnings = [x for x in err.splitlines() if x.startswith("warning: ")]
    assert len(warnings) == 1, err
    assert "the server stopped answering (no answer within 1 s)" in warnings[0]
    assert "the run goes on" in warnings[0] and PASSWORD not in err
