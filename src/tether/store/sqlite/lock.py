"""ConnectionLock: one user of a SQLite connection at a time, across threads and event loops,
without ever blocking an event loop while another user has it.

A free lock is taken at once (the fast path: no thread hop, no task switch). A coroutine that
finds it taken waits on a future of its own loop, woken in turn (first come, first served) by
whoever releases it; a thread without a loop (migrations, closing from synchronous code) waits
on an event.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager


class ConnectionLock:
    """A FIFO lock usable from coroutines (``await acquire()``) and threads (``hold()``)."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._held = False
        self._waiters: deque[asyncio.Future[None] | threading.Event] = deque()

    def take(self) -> bool:
        """Take the lock if it is free (True), without waiting: acquire's fast path, with no
        coroutine made."""
        with self._mutex:
            if self._held:
                return False
            self._held = True
            return True

    async def acquire(self) -> None:
        """Take the lock, waiting without blocking the loop while someone else has it."""
        with self._mutex:
            if not self._held:
                self._held = True
                return
            turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            with self._mutex:
                if turn in self._waiters:  # never handed over: nothing to give back
                    self._waiters.remove(turn)
                    raise
            if turn.done() and not turn.cancelled():
                self.release()  # handed over just as the wait was cancelled: pass it on
            raise  # (a turn cancelled after its hand-over is passed on by _grant)

    def release(self) -> None:
        """Give the lock to the next waiter, or free it."""
        with self._mutex:
            if not self._waiters:
                self._held = False
                return
            waiter = self._waiters.popleft()
        if isinstance(waiter, threading.Event):
            waiter.set()
            return
        try:
            waiter.get_loop().call_soon_threadsafe(self._grant, waiter)
        except RuntimeError:  # that loop is closed: its waiter is gone
            self.release()

    def _grant(self, turn: asyncio.Future[None]) -> None:
        if turn.cancelled():
            self.release()
        else:
            turn.set_result(None)

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Hold the lock from synchronous code (never from a running event loop's thread while
        one of its coroutines may hold it)."""
        with self._mutex:
            event = None
            if self._held:
                event = threading.Event()
                self._waiters.append(event)
            else:
                self._held = True
        if event is not None:
            event.wait()
        try:
            yield
        finally:
            self.release()
