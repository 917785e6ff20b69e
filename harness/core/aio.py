"""A private event loop on a background thread, so synchronous callers (the CLI, scripts,
notebooks whose own loop is already running) can drive async judge calls."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """Runs coroutines on one long-lived loop (clients bound to it stay valid); several
    owners may share one (``shared``): it stops when the last of them closes it."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._owners = 1

    @property
    def started(self) -> bool:
        """Whether the loop runs (a coroutine was run on it and it was not closed since)."""
        return self._loop is not None

    def shared(self) -> LoopThread:
        """This loop, with one more owner (each owner calls ``close`` once)."""
        self._owners += 1
        return self

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and wait for its result."""
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(
                target=self._loop.run_forever, name="harness-judge-loop", daemon=True
            )
            self._thread.start()
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def close(self) -> None:
        """Stop the loop and its thread (once every owner has closed it)."""
        self._owners = max(0, self._owners - 1)
        if self._owners == 0 and self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            assert self._thread is not None
            self._thread.join(timeout=5)
            self._loop.close()
            self._loop = self._thread = None
