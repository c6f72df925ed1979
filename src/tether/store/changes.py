"""A feed of "something committed" notifications, so readers wake instead of polling.

Stores publish topics after each commit (``session:<id>``, ``run:<id>``, ``run-status:<id>``,
``runs``); streams and
workers wait on the topics they care about. Waiters may live on any thread or event loop. A
publish from another process reaches this feed only through the backend (PostgreSQL NOTIFY); on
SQLite, waiters also poll with a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import OrderedDict
from collections.abc import Iterable

RUNS_TOPIC = "runs"


def session_topic(session_id: str) -> str:
    return f"session:{session_id}"


def run_topic(run_id: str) -> str:
    return f"run:{run_id}"


def run_status_topic(run_id: str) -> str:
    """Published when the run's status or holder may have changed (its run.* events, its
    deletion), not for its steps and messages."""
    return f"run-status:{run_id}"


#: How many topics remember their last publish (enough to close the read-then-wait race).
_REMEMBERED = 8192


class ChangeFeed:
    """Thread-safe, topic-filtered wake-ups for asyncio waiters.

    Read ``cursor()`` before querying the store, then ``wait(topics, since=cursor)``: a publish
    that happened in between is not missed.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiters: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Future[bool]]]] = {}
        self._seq = 0
        self._last: OrderedDict[str, int] = OrderedDict()
        self._floor = 0  # the newest publish whose topic was forgotten

    def cursor(self) -> int:
        """A position to pass as ``since`` to a later wait."""
        with self._lock:
            return self._seq

    def publish(self, topics: Iterable[str]) -> None:
        """Wake every waiter of any of these topics."""
        woken: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[bool]]] = []
        with self._lock:
            self._seq += 1
            for topic in topics:
                self._last[topic] = self._seq
                self._last.move_to_end(topic)
                woken.extend(self._waiters.pop(topic, ()))
            while len(self._last) > _REMEMBERED:
                _, seq = self._last.popitem(last=False)
                self._floor = max(self._floor, seq)
        _wake(woken)

    def publish_all(self) -> None:
        """Wake every waiter, and every later wait since an earlier cursor: for when
        notifications may have been lost (a listener reconnected)."""
        with self._lock:
            self._seq += 1
            self._last.clear()
            self._floor = self._seq
            woken = [entry for bucket in self._waiters.values() for entry in bucket]
            self._waiters.clear()
        _wake(woken)

    async def wait(
        self, topics: Iterable[str], timeout: float | None, since: int | None = None
    ) -> bool:
        """Wait until one of topics is published (after since) or timeout passes; True if woken."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[bool] = loop.create_future()
        entry = (loop, fut)
        names = list(topics)
        with self._lock:
            if since is not None and self._missed(names, since):
                return True
            for topic in names:
                self._waiters.setdefault(topic, set()).add(entry)
        # A timer settles the same future (cheaper than asyncio.wait_for and its extra task
        # switches); cancelling the waiting task cancels the future.
        timer = None if timeout is None else loop.call_later(timeout, _settle, fut, False)
        try:
            return await fut
        finally:
            if timer is not None:
                timer.cancel()
            with self._lock:
                for topic in names:
                    bucket = self._waiters.get(topic)
                    if bucket is not None:
                        bucket.discard(entry)
                        if not bucket:
                            del self._waiters[topic]

    def _missed(self, topics: list[str], since: int) -> bool:
        for topic in topics:
            seq = self._last.get(topic)
            if seq is None:
                if self._floor > since:
                    return True
            elif seq > since:
                return True
        return False


def _wake(woken: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[bool]]]) -> None:
    if not woken:
        return
    try:
        here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        here = None
    for loop, fut in woken:
        if loop is here:
            _settle(fut, True)  # same loop and thread: no self-pipe round trip
            continue
        if loop.is_closed():
            continue
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(_settle, fut, True)


def _settle(fut: asyncio.Future[bool], woken: bool) -> None:
    if not fut.done():
        fut.set_result(woken)
