"""settled: await a write to its outcome even if the caller is cancelled meanwhile.

A write that never waits (an append to SQLite whose lock is free: the common case) runs inline,
with nothing to schedule: no cancellation can reach it. One that waits (for the lock, for
another process's lock, for PostgreSQL or a server) goes on as a task of its own from where it
stopped, and the caller waits for that task behind a shield.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


async def settled(write: Coroutine[Any, Any, T]) -> T:
    """write's result (or error); a cancellation of the caller is raised after the write's
    outcome is known, never in the middle of it."""
    try:
        waiting_on = write.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    task = asyncio.ensure_future(_finish(write, waiting_on))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        while not task.done():
            try:
                await asyncio.wait({task})
            except asyncio.CancelledError:
                continue
        if not task.cancelled():
            task.exception()  # retrieved: the caller's cancellation is what it sees
        raise


async def _finish(write: Coroutine[Any, Any, T], waiting_on: Any) -> T:
    return await _Rest(write, waiting_on)


class _Rest(Generic[T]):
    """The rest of a started coroutine, awaitable: it hands up what the coroutine waits on (as
    an ``await`` inside it would) and passes back what the task sends or throws."""

    def __init__(self, write: Coroutine[Any, Any, T], waiting_on: Any) -> None:
        self._write = write
        self._waiting_on = waiting_on

    def __await__(self) -> Generator[Any, Any, T]:
        write, waiting_on = self._write, self._waiting_on
        while True:
            try:
                try:
                    sent = yield waiting_on
                except BaseException as exc:  # thrown in by the task (its loop closing)
                    waiting_on = write.throw(exc)
                else:
                    waiting_on = write.send(sent)
            except StopIteration as done:
                result: T = done.value
                return result
