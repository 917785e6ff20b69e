"""``LoopThread``: one private loop per owner, or one shared by several (a panel's judged
members), stopped when the last owner closes it."""

from __future__ import annotations

import asyncio
import threading

import pytest

from harness.core.aio import LoopThread


async def thread_name() -> tuple[str, threading.Thread]:
    return threading.current_thread().name, threading.current_thread()


def test_a_shared_loop_runs_until_its_last_owner_closes_it() -> None:
    loop = LoopThread()
    assert not loop.started
    other = loop.shared()
    name, thread = loop.run(thread_name())
    assert name == "harness-judge-loop" and loop.started
    loop.close()  # one owner left: still the same loop and thread
    assert other.run(thread_name()) == (name, thread)
    other.close()
    assert not loop.started and not thread.is_alive()


def test_an_owned_loop_stops_at_close_and_starts_again_on_use() -> None:
    loop = LoopThread()
    first = loop.run(thread_name())[1]
    loop.close()
    assert not loop.started and not first.is_alive()
    loop.close()  # a second close is harmless
    second = loop.run(thread_name())[1]
    assert second is not first and second.is_alive()
    loop.close()
    assert not loop.started


def test_an_error_in_the_coroutine_reaches_the_caller() -> None:
    async def fails() -> None:
        await asyncio.sleep(0)
        raise ValueError("from the loop")

    loop = LoopThread()
    with pytest.raises(ValueError, match="from the loop"):
        loop.run(fails())
    loop.close()
