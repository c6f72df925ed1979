"""tests/waiting.py, the suite's one poller: it returns the first truthy value of its probe and,
past its deadline, fails naming what it waited for and the last value seen."""

from __future__ import annotations

import itertools

import pytest

from tests.waiting import eventually, eventually_sync


async def test_eventually_polls_sync_and_async_probes_until_truthy() -> None:
    counter = itertools.count()
    assert await eventually(lambda: next(counter) >= 3 and "done", every=0) == "done"

    async def probe() -> list[int]:
        return [n] if (n := next(counter)) >= 6 else []

    assert await eventually(probe, every=0) == [6]


async def test_eventually_fails_with_what_it_waited_for() -> None:
    with pytest.raises(AssertionError, match=r"waiting for the door to open; last \[\]"):
        await eventually(list, timeout=0.01, what="the door to open")


def test_eventually_sync_is_the_same_for_plain_tests() -> None:
    counter = itertools.count()
    assert eventually_sync(lambda: next(counter) == 2, every=0) is True
    with pytest.raises(AssertionError, match="waiting for nothing; last 0"):
        eventually_sync(int, timeout=0.01, what="nothing")
