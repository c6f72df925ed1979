"""Events: the Service's reads of a session's or a run's events, listed or streamed as they
commit."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Awaitable, Callable

from tether.core.errors import UsageError
from tether.core.event import TERMINAL_RUN_EVENTS, Event
from tether.core.run import Run
from tether.core.session import Session
from tether.runtime import limits
from tether.runtime.settings import RuntimeSettings
from tether.store.base import Store
from tether.store.changes import run_topic, session_topic


class EventOps:
    """The event reads of Service (which provides these attributes)."""

    store: Store
    owner: str
    settings: RuntimeSettings
    get_session: Callable[[str], Awaitable[Session]]
    _run_without_context: Callable[[str], Awaitable[Run]]

    async def list_events(
        self,
        *,
        session_id: str | None = None,
        run_id: str | None = None,
        after_id: int | None = None,
        limit: int = 500,
    ) -> list[Event]:
        await self._check_stream_target(session_id, run_id)
        return await self.store.list_events(
            session_id=session_id, run_id=run_id, after_id=after_id, limit=limits.page_size(limit)
        )

    async def stream_events(
        self,
        *,
        session_id: str | None = None,
        run_id: str | None = None,
        after_id: int | None = None,
        heartbeat: float | None = None,
    ) -> AsyncGenerator[Event | None, None]:
        """Events as they commit, from after after_id, each exactly once and in order. Yields
        None every heartbeat seconds of silence. A run's stream ends after its terminal event;
        any stream ends when its session or run is deleted."""
        await self._check_stream_target(session_id, run_id)
        topic = run_topic(run_id) if run_id else session_topic(session_id or "")
        changes = self.store.changes
        loop = asyncio.get_running_loop()
        last = after_id or 0
        quiet_since = loop.time()
        while True:
            cursor = changes.cursor()
            events = await self.store.list_events(
                session_id=session_id if run_id is None else None,
                run_id=run_id,
                after_id=last,
            )
            for event in events:
                last = event.id
                yield event
                if run_id is not None and event.type in TERMINAL_RUN_EVENTS:
                    return
            if events:
                quiet_since = loop.time()
                continue
            if run_id is not None:
                run = await self.store.get_run(run_id, owner=self.owner, with_context=False)
                if run is None:
                    return  # deleted meanwhile: nothing more will come
                if run.is_terminal:
                    # The terminal event commits with the status: it may have landed just
                    # after the read above, so read once more before ending.
                    for event in await self.store.list_events(run_id=run_id, after_id=last):
                        yield event
                        if event.type in TERMINAL_RUN_EVENTS:
                            break
                    return
            elif await self.store.get_session(session_id or "", owner=self.owner) is None:
                return  # deleted meanwhile: nothing more will come
            pause = self.settings.poll_interval
            if heartbeat is not None:
                pause = min(pause, max(0.0, quiet_since + heartbeat - loop.time()))
            await changes.wait([topic], pause, since=cursor)
            if heartbeat is not None and loop.time() - quiet_since >= heartbeat:
                quiet_since = loop.time()
                yield None

    async def _check_stream_target(self, session_id: str | None, run_id: str | None) -> None:
        if (session_id is None) == (run_id is None):
            raise UsageError("give exactly one of session_id and run_id")
        if session_id is not None:
            await self.get_session(session_id)
        else:
            await self._run_without_context(run_id or "")
