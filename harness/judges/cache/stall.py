"""A deadline on a PostgreSQL connection: a server that stops answering mid-statement
(frozen with SIGSTOP, swapped out, a network that drops packets) is noticed.

The server cannot enforce ``statement_timeout`` while it is frozen, and cancelling the
waiting coroutine makes psycopg ask the same frozen server to cancel. So the deadline cuts
the connection's socket instead (``shutdown``): libpq sees the connection end, psycopg
raises at once, and the caller gets ``Stalled``; the connection is never used again.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import AsyncIterator
from typing import Any

#: Seconds a statement (and its connection's setup) may take before the server is taken
#: for gone: the verdict cache warns and the run goes on uncached.
STATEMENT_DEADLINE_S = 10.0


class Stalled(TimeoutError):
    """The server did not answer a statement within the deadline."""


@contextlib.asynccontextmanager
async def deadline(conn: Any, seconds: float | None = None) -> AsyncIterator[None]:
    """Statements on ``conn`` inside the block end within ``seconds`` (by default
    ``STATEMENT_DEADLINE_S``), or ``Stalled``."""
    seconds = STATEMENT_DEADLINE_S if seconds is None else seconds
    fired = False

    def fire() -> None:
        nonlocal fired
        fired = True
        cut(conn)

    handle = asyncio.get_running_loop().call_later(seconds, fire)
    try:
        yield
    except Exception:
        if fired:
            raise Stalled(f"no answer within {seconds:g} s") from None
        raise
    finally:
        handle.cancel()


def cut(conn: Any) -> None:
    """End ``conn``'s socket both ways (its reads return EOF at once); never raises."""
    with contextlib.suppress(Exception):
        fd = conn.pgconn.socket
        dup = socket.socket(fileno=os.dup(fd))
        try:
            dup.shutdown(socket.SHUT_RDWR)
        finally:
            dup.close()
