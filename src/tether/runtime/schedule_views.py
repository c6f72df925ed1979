"""``tt.schedules``: schedules for the sync facade (``tether.open``/``connect``) and the async
one, over any Backend. Schedules are plain records (core.schedule.Schedule)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from tether.core.schedule import Schedule
from tether.runtime.handles import _all_pages, page_size

if TYPE_CHECKING:
    from tether.runtime.async_facade import AsyncTether
    from tether.runtime.facade import Tether


class Schedules:
    """``tt.schedules``: runs created on a cron expression (see Service.create_schedule)."""

    def __init__(self, tt: Tether) -> None:
        self._tt = tt

    def create(
        self,
        cron: str,
        *,
        agent: str | None = None,
        input: dict[str, Any] | None = None,
        goal: str | None = None,
        session_id: str | None = None,
        timezone: str | None = None,
        metadata: dict[str, Any] | None = None,
        end_at: datetime | None = None,
        enabled: bool = True,
    ) -> Schedule:
        """A run of agent at each tick of cron (five fields) in timezone (default UTC), in
        session_id's session or a new session each time, until end_at."""
        return self._tt._call(
            self._tt._backend.create_schedule(
                cron,
                agent=agent,
                input=input,
                goal=goal,
                session_id=session_id,
                timezone=timezone,
                metadata=metadata,
                end_at=end_at,
                enabled=enabled,
            )
        )

    def get(self, schedule_id: str) -> Schedule:
        return self._tt._call(self._tt._backend.get_schedule(schedule_id))

    def list(
        self,
        *,
        session_id: str | None = None,
        agent: str | None = None,
        enabled: bool | None = None,
        limit: int | None = 100,
    ) -> list[Schedule]:
        """The owner's schedules, oldest first (at most limit; None = all)."""
        backend = self._tt._backend

        def fetch(cursor: str | None) -> Any:
            return self._tt._call(
                backend.list_schedules(
                    session_id=session_id,
                    agent=agent,
                    enabled=enabled,
                    limit=page_size(limit),
                    cursor=cursor,
                )
            )

        return _all_pages(fetch, limit)

    def update(self, schedule_id: str, **changes: Any) -> Schedule:
        """Change cron, timezone, agent, goal, input, metadata, end_at or enabled (False
        pauses, True resumes from the next tick)."""
        return self._tt._call(self._tt._backend.update_schedule(schedule_id, **changes))

    def delete(self, schedule_id: str) -> None:
        """Delete the schedule (its runs stay)."""
        self._tt._call(self._tt._backend.delete_schedule(schedule_id))


class AsyncSchedules:
    """``tt.schedules`` of the async facade: the methods of Schedules, awaited."""

    def __init__(self, tt: AsyncTether) -> None:
        self._tt = tt

    async def create(
        self,
        cron: str,
        *,
        agent: str | None = None,
        input: dict[str, Any] | None = None,
        goal: str | None = None,
        session_id: str | None = None,
        timezone: str | None = None,
        metadata: dict[str, Any] | None = None,
        end_at: datetime | None = None,
        enabled: bool = True,
    ) -> Schedule:
        return await self._tt.backend.create_schedule(
            cron,
            agent=agent,
            input=input,
            goal=goal,
            session_id=session_id,
            timezone=timezone,
            metadata=metadata,
            end_at=end_at,
            enabled=enabled,
        )

    async def get(self, schedule_id: str) -> Schedule:
        return await self._tt.backend.get_schedule(schedule_id)

    async def list(
        self,
        *,
        session_id: str | None = None,
        agent: str | None = None,
        enabled: bool | None = None,
        limit: int | None = 100,
    ) -> list[Schedule]:
        found: list[Schedule] = []
        cursor = None
        while limit is None or len(found) < limit:
            page = await self._tt.backend.list_schedules(
                session_id=session_id,
                agent=agent,
                enabled=enabled,
                limit=page_size(limit),
                cursor=cursor,
            )
            found.extend(page.data)
            cursor = page.next_cursor
            if cursor is None:
                break
        return found if limit is None else found[:limit]

    async def update(self, schedule_id: str, **changes: Any) -> Schedule:
        return await self._tt.backend.update_schedule(schedule_id, **changes)

    async def delete(self, schedule_id: str) -> None:
        await self._tt.backend.delete_schedule(schedule_id)
