"""Following the event log over SSE, resuming with Last-Event-ID whenever the connection drops."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING
from urllib.parse import quote

import httpx

from tether.client import errors, sse
from tether.core.errors import ServerUnreachable, UsageError
from tether.core.event import TERMINAL_RUN_EVENTS, Event
from tether.core.serde import from_data

if TYPE_CHECKING:
    from tether.client.async_client import AsyncClient

#: Heartbeat interval asked of the server when the caller gives none (seconds).
DEFAULT_HEARTBEAT = 15.0
#: Silence (in heartbeats) after which the connection is considered dead and resumed.
_DEAD_AFTER = 3
_BACKOFF_FIRST, _BACKOFF_MAX = 0.1, 2.0


def events_path(session_id: str | None, run_id: str | None) -> str:
    if (session_id is None) == (run_id is None):
        raise UsageError("give exactly one of session_id and run_id")
    if run_id is not None:
        return f"/v1/runs/{quote(run_id, safe='')}/events"
    return f"/v1/sessions/{quote(session_id or '', safe='')}/events"


async def follow(
    client: AsyncClient,
    *,
    session_id: str | None,
    run_id: str | None,
    after_id: int | None,
    heartbeat: float | None,
) -> AsyncGenerator[Event | None, None]:
    """The events, each exactly once and in order, across reconnections."""
    path = events_path(session_id, run_id)
    beat = heartbeat or DEFAULT_HEARTBEAT
    timeout = httpx.Timeout(client.timeout, read=max(beat * _DEAD_AFTER, 1.0))
    last = after_id
    failures = 0
    while True:
        headers = {"Accept": "text/event-stream"}
        if last is not None:
            headers["Last-Event-ID"] = str(last)
        received = 0
        try:
            async with client.http.stream(
                "GET", path, headers=headers, params={"heartbeat": beat}, timeout=timeout
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise errors.from_response(response)
                async for message in sse.messages(response.aiter_lines()):
                    failures = 0
                    if message.data is None:
                        if message.comment == "heartbeat" and heartbeat is not None:
                            yield None
                        continue
                    event = from_data(Event, json.loads(message.data))
                    if last is not None and event.id <= last:
                        continue
                    last, received = event.id, received + 1
                    yield event
                    if run_id is not None and event.type in TERMINAL_RUN_EVENTS:
                        return
        except httpx.TransportError as exc:
            failures += 1
            if failures > client.reconnect_attempts:
                raise ServerUnreachable(
                    f"the event stream of {client.url} is lost: {exc!r}"
                ) from exc
            await asyncio.sleep(min(_BACKOFF_MAX, _BACKOFF_FIRST * 2 ** (failures - 1)))
            continue
        # The server ended the stream cleanly: it is draining, or the run already finished.
        if run_id is not None and received == 0 and (await client.get_run(run_id)).is_terminal:
            return
        await asyncio.sleep(_BACKOFF_FIRST)
