"""Server-Sent Events: the event log as ``id:``/``event:``/``data:`` frames, with heartbeats.

A stream ends after a run's terminal event, when the server drains for shutdown (the client
reconnects with Last-Event-ID), when the credential it was opened with stops being valid (checked
at every heartbeat interval: a revoked key, an ended UI session), or when the client goes away.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing

from tether.core.errors import StoreUnavailable
from tether.core.event import Event
from tether.core.serde import to_data
from tether.runtime.service import Service

#: Whether the credential a stream was opened with still acts (a key not revoked, …).
Alive = Callable[[], Awaitable[bool]]

#: How long a reconnecting client should wait, sent once at the start (milliseconds).
RETRY_MS = 1000
HEARTBEAT = b": heartbeat\n\n"
#: The longest the stream goes without checking whether the server is draining.
_TICK = 1.0


def frame(event: Event) -> bytes:
    """One event as an SSE frame; data is the event record as JSON on one line."""
    data = json.dumps(to_data(event), ensure_ascii=False, separators=(",", ":"))
    return f"id: {event.id}\nevent: {event.type}\ndata: {data}\n\n".encode()


async def frames(
    service: Service,
    *,
    session_id: str | None,
    run_id: str | None,
    after_id: int | None,
    heartbeat: float,
    draining: threading.Event,
    alive: Alive | None = None,
) -> AsyncIterator[bytes]:
    """The SSE body: every event after after_id, exactly once and in order, while alive()."""
    yield f"retry: {RETRY_MS}\n\n".encode()
    loop = asyncio.get_running_loop()
    last_sent = loop.time()
    check = Recheck(alive, heartbeat, last_sent)
    stream = service.stream_events(
        session_id=session_id, run_id=run_id, after_id=after_id, heartbeat=min(heartbeat, _TICK)
    )
    async with aclosing(stream):
        async for event in stream:
            if draining.is_set():
                return
            if await check.ended(loop.time()):
                return
            if event is not None:
                last_sent = loop.time()
                yield frame(event)
            elif loop.time() - last_sent >= heartbeat:
                last_sent = loop.time()
                yield HEARTBEAT


class Recheck:
    """A stream's check of its credential, at most once every ``every`` seconds."""

    def __init__(self, alive: Alive | None, every: float, now: float) -> None:
        self._alive = alive
        self._every = every
        self._last = now

    async def ended(self, now: float) -> bool:
        """True once the credential is checked and found gone (a database busy right now
        leaves the stream open until the next check)."""
        if self._alive is None or now - self._last < self._every:
            return False
        self._last = now
        try:
            return not await self._alive()
        except StoreUnavailable:
            return False
