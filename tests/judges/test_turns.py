"""An endpoint's waiting requests go earlier sample first, then critical path first, then
first come (``harness.judges.transport.turns``), and the transports sharing one budget check the
endpoint once and send through one HTTP client (issue 34, item 4)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from helpers.judge_server import JudgeServer

from harness.judges.openai_chat import OpenAIJudge
from harness.judges.transport import turns
from harness.judges.transport.budget import Budget
from harness.judges.transport.pacing import Pacer


async def granted_in_order(asks: Sequence[tuple[str, int, int | None]],
                           cancel: str | None = None) -> list[str]:
    """Names of ``asks`` (name, calls after it, sample) in the order one permit, freed once
    they all wait, goes round; ``cancel``: one that gives up while waiting."""
    pacer = Pacer(1, adaptive=False)
    order: list[str] = []
    held = await pacer.acquire()

    async def ask(name: str, after: int, sample: int | None) -> None:
        with turns.turn(after, sample):
            ticket = await pacer.acquire()
        order.append(name)
        await asyncio.sleep(0)
        pacer.release(ticket, True)

    tasks = {name: asyncio.ensure_future(ask(name, after, sample))
             for name, after, sample in asks}
    await asyncio.sleep(0)  # every one waits now, in the order of asks
    if cancel is not None:
        tasks[cancel].cancel()
    pacer.release(held, True)
    await asyncio.gather(*tasks.values(), return_exceptions=True)
    return order


def test_waiting_requests_go_by_sample_then_critical_path_first_then_first_come() -> None:
    asks = [("plain", 0, None), ("late sample", 0, 7), ("chain head", 1, 9),
            ("early sample", 0, 2), ("early sample again", 0, 2), ("chain head 2", 1, 3),
            ("its chain head", 1, 2)]
    got = asyncio.run(granted_in_order(asks))
    # sample 0 (said by none: plain), 2 (its chain head first, then by arrival), 3, 7, 9:
    # a later sample's chain head waits, so the earlier samples finish (and their rows are
    # written) first
    assert got == ["plain", "its chain head", "early sample", "early sample again",
                   "chain head 2", "late sample", "chain head"]


def test_without_turns_the_waiting_go_first_come_first_served() -> None:
    asks = [(str(i), 0, None) for i in range(6)]
    assert asyncio.run(granted_in_order(asks)) == [str(i) for i in range(6)]


def test_a_request_that_gives_up_waiting_leaves_the_order_of_the_others() -> None:
    asks = [("a", 0, 1), ("b", 1, 5), ("c", 0, 0), ("d", 1, 2)]
    assert asyncio.run(granted_in_order(asks, cancel="d")) == ["c", "a", "b"]


def test_a_chain_head_waits_as_if_its_sample_were_lead_samples_earlier() -> None:
    with turns.turn(after=1, sample=5):
        assert turns.current(2) == (3, -1)  # before sample 3's plain requests, (3, 0)
        assert turns.current() == (5, -1)
    with turns.turn(sample=5):
        assert turns.current(2) == (5, 0)  # a plain request keeps its sample's place


async def granted_with_permits(permits: int, asks: Sequence[tuple[str, int, int]]) -> list[str]:
    """The order in which ``asks`` waiting on a pacer of ``permits`` permits (all held) go."""
    pacer = Pacer(permits, adaptive=False)
    held = [await pacer.acquire() for _ in range(permits)]
    order: list[str] = []

    async def ask(name: str, after: int, sample: int) -> None:
        with turns.turn(after, sample):
            ticket = await pacer.acquire()
        order.append(name)
        pacer.release(ticket, True)

    tasks = [asyncio.ensure_future(ask(*a)) for a in asks]
    await asyncio.sleep(0)
    pacer.release(held[0], True)  # one permit goes round; the others stay held
    await asyncio.gather(*tasks)
    for ticket in held[1:]:
        pacer.release(ticket, True)
    return order


def test_the_pacers_lead_is_half_its_permits() -> None:
    asks = [("sample 0", 0, 0), ("sample 1", 0, 1), ("sample 2", 0, 2), ("head of 3", 1, 3),
            ("head of 5", 1, 5)]
    # 4 permits: a lead of 2, head of 3 waits as sample 1 (ahead of its plain requests),
    # head of 5 as sample 3
    assert asyncio.run(granted_with_permits(4, asks)) == [
        "sample 0", "head of 3", "sample 1", "sample 2", "head of 5"]
    # 1 permit: no lead, sample by sample
    assert asyncio.run(granted_with_permits(1, asks)) == [
        "sample 0", "sample 1", "sample 2", "head of 3", "head of 5"]


def test_a_turn_keeps_the_sample_said_around_it() -> None:
    with turns.turn(sample=4):
        assert turns.current() == (4, 0)
        with turns.turn(after=1):
            assert turns.current() == (4, -1)
        assert turns.current() == (4, 0)
    assert turns.current() == (0, 0)


def test_a_budget_asks_the_endpoint_once_for_the_transports_drawing_on_it() -> None:
    budget = Budget(lambda: Pacer(4), "key")
    asked: list[str] = []

    async def ask(who: str) -> str:
        asked.append(who)
        return f"found by {who}"

    first, second = object(), object()

    async def main() -> list[str]:
        return [await budget.check(first, lambda: ask("first")),
                await budget.check(second, lambda: ask("second")),
                await budget.check(first, lambda: ask("first again"))]

    # the second takes what the first found; the first's own second check asks again
    assert asyncio.run(main()) == ["found by first", "found by first", "found by first again"]
    assert asked == ["first", "first again"]


def test_a_budget_hands_one_client_out_and_says_when_the_last_user_is_done() -> None:
    budget = Budget(lambda: Pacer(4), "key")
    made: list[object] = []

    def make() -> object:
        made.append(object())
        return made[-1]

    one, two = budget.client(make), budget.client(make)
    assert one is two and len(made) == 1
    assert budget.done_with(object()) is True  # not one it handed out: close it
    assert budget.done_with(one) is False  # one user left
    assert budget.done_with(two) is True
    assert budget.client(make) is not one  # a new one after the last closed it


def judge(base_url: str, **settings: Any) -> OpenAIJudge:
    return OpenAIJudge(**{"model": "test-judge", "base_url": base_url, "api_key_env": None,
                          "cache": False, **settings})


def test_judges_sharing_a_budget_check_the_endpoint_once_and_share_its_client() -> None:
    with JudgeServer({"a chunk": 1}, latency_ms=1) as server:
        first, second = judge(server.base_url), judge(server.base_url)
        assert first.share_pacing(second)

        async def main() -> tuple[bool, bool]:
            await first.preflight()
            server.configure(models_endpoint="500")  # a second check would fail now
            await second.preflight()
            client = first.transport._ensure_client()
            assert second.transport._ensure_client() is client
            await first.aclose()
            still_open = not client.is_closed()
            await second.aclose()
            return still_open, client.is_closed()

        assert asyncio.run(main()) == (True, True)
        assert second.model == "test-judge"
