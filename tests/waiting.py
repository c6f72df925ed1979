"""The suite's one way to wait: poll observable state until it holds, with a deadline (never a
fixed sleep). ``eventually`` is for async tests, ``eventually_sync`` for plain ones; both poll
the same way and fail the same way.

A probe returns something truthy once the state is reached, and that value is returned (a run,
a list of steps, True). Deadlines are generous so that a loaded machine does not fail a test:
a passing test never waits for them, it only polls.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

T = TypeVar("T")

#: Default deadline, in seconds.
WAIT = 30.0
#: Default pause between two polls, in seconds.
EVERY = 0.02


class Deadline:
    """When to give up, and what to say then."""

    def __init__(self, timeout: float, what: str) -> None:
        self.timeout = timeout
        self.what = what
        self._end = time.monotonic() + timeout

    def check(self, last: Any) -> None:
        """Fail the test, naming what was awaited and the last value seen, once past the end."""
        if time.monotonic() >= self._end:
            raise AssertionError(
                f"timed out after {self.timeout:g} s waiting for {self.what}; last {last!r}"
            )


@overload
async def eventually(
    probe: Callable[[], Awaitable[T | None]],
    *,
    timeout: float = ...,
    every: float = ...,
    what: str = ...,
) -> T: ...


@overload
async def eventually(
    probe: Callable[[], T | None], *, timeout: float = ..., every: float = ..., what: str = ...
) -> T: ...


async def eventually(
    probe: Callable[[], Any],
    *,
    timeout: float = WAIT,
    every: float = EVERY,
    what: str = "the condition",
) -> Any:
    """Poll probe (sync or async) until it returns something truthy; that value (never None)."""
    deadline = Deadline(timeout, what)
    while True:
        value = probe()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        deadline.check(value)
        await asyncio.sleep(every)


def eventually_sync(
    probe: Callable[[], T | None],
    *,
    timeout: float = WAIT,
    every: float = EVERY,
    what: str = "the condition",
) -> T:
    """``eventually`` for a test that is not ``async``: blocks between polls."""
    deadline = Deadline(timeout, what)
    while not (value := probe()):
        deadline.check(value)
        time.sleep(every)
    return value
