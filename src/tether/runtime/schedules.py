"""Schedules: the Service's operations on them, and the tick that fires the due ones.

A tick creates its run in the schedule's session (enqueued behind its unfinished runs) or in a
new session. Ticks missed while no worker ran (the whole service down) fire once, when a worker
finds them, not once per missed tick: the next tick is the first one after that moment.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime
from typing import Any

from tether.core.clock import Clock
from tether.core.cron import parse as parse_cron
from tether.core.cron import zone as cron_zone
from tether.core.errors import NotFound, SessionClosed, SessionExpired, UsageError
from tether.core.ids import new_id
from tether.core.page import Page
from tether.core.run import Run
from tether.core.schedule import Schedule
from tether.core.session import DEFAULT_TTL_SECONDS, Session
from tether.core.status import RunStatus, SessionStatus
from tether.runtime import limits
from tether.runtime.agent import AgentRegistry
from tether.runtime.instruments import installed
from tether.runtime.settings import RuntimeSettings
from tether.store.base import UNSET, Store, Unset
from tether.store.cursors import decode_cursor, encode_cursor

log = logging.getLogger("tether.schedules")

#: The longest goal a tick derives from a schedule's input.
_GOAL_CHARS = 200


class ScheduleOps:
    """The schedule operations of Service (which provides these attributes)."""

    store: Store
    clock: Clock
    owner: str
    agents: AgentRegistry
    settings: RuntimeSettings

    async def create_schedule(
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
        """A schedule creating a run of agent at each tick of cron (a five-field expression) in
        timezone (IANA; UTC by default), in session_id's session or in a new session each time,
        until end_at. UsageError for an expression, zone or agent that does not work, or a
        schedule that would never fire."""
        now = self.clock.now()
        if session_id is not None:
            await self._check_session(session_id, now)
        schedule = Schedule(
            id=new_id(),
            owner=self.owner,
            cron=parse_cron(cron).expression,
            timezone=cron_zone(timezone).key,
            agent=self._agent(agent),
            goal=None if goal is None else limits.goal(goal),
            input=limits.mapping("input", input),
            session_id=session_id,
            metadata=limits.mapping("metadata", metadata),
            created_at=now,
            updated_at=now,
            end_at=_moment("end_at", end_at),
            enabled=_flag(enabled),
        )
        return await self.store.create_schedule(_planned(schedule, now))

    async def get_schedule(self, schedule_id: str) -> Schedule:
        found = await self.store.get_schedule(schedule_id, owner=self.owner)
        if found is None:
            raise NotFound("schedule", schedule_id)
        return found

    async def list_schedules(
        self,
        *,
        session_id: str | None = None,
        agent: str | None = None,
        enabled: bool | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Schedule]:
        """The owner's schedules, oldest first, narrowed by the arguments given."""
        size = limits.page_size(limit)
        after = "" if cursor is None else decode_cursor(cursor, str)[0]
        rows = await self.store.list_schedules(
            owner=self.owner,
            session_id=session_id,
            agent=agent,
            enabled=None if enabled is None else _flag(enabled),
            after_id=after,
            limit=size + 1,
        )
        data = rows[:size]
        return Page(data, encode_cursor(data[-1].id) if len(rows) > size else None)

    async def update_schedule(
        self,
        schedule_id: str,
        *,
        cron: str | Unset = UNSET,
        timezone: str | Unset = UNSET,
        agent: str | Unset = UNSET,
        goal: str | Unset | None = UNSET,
        input: dict[str, Any] | Unset = UNSET,
        metadata: dict[str, Any] | Unset = UNSET,
        end_at: datetime | Unset | None = UNSET,
        enabled: bool | Unset = UNSET,
    ) -> Schedule:
        """Change what is given; the next tick is computed again from now (a paused schedule
        resumed with enabled=True fires at its next tick, not for the ones it missed)."""
        old = await self.get_schedule(schedule_id)
        changes: dict[str, Any] = {}
        if not isinstance(cron, Unset):
            changes["cron"] = parse_cron(cron).expression
        if not isinstance(timezone, Unset):
            changes["timezone"] = cron_zone(timezone).key
        if not isinstance(agent, Unset):
            changes["agent"] = self._agent(agent)
        if not isinstance(goal, Unset):
            changes["goal"] = None if goal is None else limits.goal(goal)
        if not isinstance(input, Unset):
            changes["input"] = limits.mapping("input", input)
        if not isinstance(metadata, Unset):
            changes["metadata"] = limits.mapping("metadata", metadata)
        if not isinstance(end_at, Unset):
            changes["end_at"] = _moment("end_at", end_at)
        if not isinstance(enabled, Unset):
            changes["enabled"] = _flag(enabled)
        now = self.clock.now()
        updated = _planned(replace(old, **changes, updated_at=now), now)
        written = await self.store.update_schedule(updated)
        if written is None:
            raise NotFound("schedule", schedule_id)
        return written

    async def delete_schedule(self, schedule_id: str) -> None:
        """Delete the schedule (the runs it made stay)."""
        if not await self.store.delete_schedule(schedule_id, owner=self.owner):
            raise NotFound("schedule", schedule_id)

    async def _check_session(self, session_id: str, now: datetime) -> None:
        session = await self.store.get_session(session_id, owner=self.owner)
        if session is None:
            raise NotFound("session", session_id)
        status = session.as_of(now).status
        if status is SessionStatus.CLOSED:
            raise SessionClosed(session_id)
        if status is SessionStatus.EXPIRED:
            raise SessionExpired(session_id)

    def _agent(self, name: str | None) -> str:
        agent = name or self.settings.default_agent
        self.agents.get(agent)
        return agent


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise UsageError("enabled must be true or false")
    return value


def _moment(name: str, value: Any) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise UsageError(f"{name} must be a time with a time zone")
    return value


def _planned(schedule: Schedule, now: datetime) -> Schedule:
    """schedule with its next tick after now; UsageError when an enabled one would never fire."""
    upcoming = next_tick(schedule, now)
    if upcoming is None and schedule.enabled:
        raise UsageError(
            f"schedule {schedule.cron!r} never fires"
            + ("" if schedule.end_at is None else " before its end_at")
        )
    return replace(schedule, next_run_at=upcoming)


def next_tick(schedule: Schedule, after: datetime) -> datetime | None:
    """The schedule's first tick after the moment given, or None when it has no more."""
    found = parse_cron(schedule.cron).next_after(after, cron_zone(schedule.timezone))
    if found is None or (schedule.end_at is not None and found >= schedule.end_at):
        return None
    return found


async def fire_due_schedules(store: Store, *, now: datetime, limit: int = 100) -> list[Run]:
    """Create the runs of the schedules due by now (each tick once, whatever the number of
    callers at the same time); the runs this call created."""
    fired = []
    for schedule in await store.due_schedules(now=now, limit=limit):
        run = await _fire(store, schedule, now)
        if run is not None:
            fired.append(run)
    return fired


async def _fire(store: Store, schedule: Schedule, now: datetime) -> Run | None:
    assert schedule.next_run_at is not None
    upcoming = next_tick(schedule, max(now, schedule.next_run_at))
    session = None if schedule.session_id is not None else _new_session(schedule, now)
    run = _new_run(schedule, session, now)
    try:
        with installed().creating_run(run) as traceparent:
            return await store.fire_schedule(
                schedule,
                next_run_at=upcoming,
                run=replace(run, traceparent=traceparent),
                session=session,
                now=now,
            )
    except (SessionClosed, SessionExpired, NotFound) as exc:
        # The session is gone for good: pause the schedule rather than fail every tick.
        if await store.skip_schedule_tick(schedule, next_run_at=upcoming, enabled=False):
            log.warning("schedule %s paused: %s", schedule.id, exc)
    return None


def _new_session(schedule: Schedule, now: datetime) -> Session:
    return Session(
        id=new_id(),
        owner=schedule.owner,
        title=_goal(schedule)[: limits.MAX_TITLE],
        status=SessionStatus.ACTIVE,
        created_at=now,
        updated_at=now,
        last_activity_at=now,
        ttl_seconds=DEFAULT_TTL_SECONDS,
        metadata={"schedule_id": schedule.id},
    )


def _new_run(schedule: Schedule, session: Session | None, now: datetime) -> Run:
    session_id = schedule.session_id if session is None else session.id
    assert session_id is not None
    return Run(
        id=new_id(),
        session_id=session_id,
        owner=schedule.owner,
        seq=0,
        agent=schedule.agent,
        goal=_goal(schedule),
        status=RunStatus.READY,
        created_at=now,
        updated_at=now,
        input=schedule.input,
        metadata={**schedule.metadata, "schedule_id": schedule.id},
    )


def _goal(schedule: Schedule) -> str:
    """The schedule's goal; else the input's text or last user message; else a name for it."""
    if schedule.goal:
        return schedule.goal
    text = schedule.input.get("text")
    if not isinstance(text, str) or not text.strip():
        text = _last_user_message(schedule.input.get("messages"))
    if text:
        return text[:_GOAL_CHARS]
    return f"scheduled run ({schedule.cron})"


def _last_user_message(messages: Any) -> str | None:
    if not isinstance(messages, list):
        return None
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") in ("user", "human"):
            content = message.get("content")
            if isinstance(content, str) and content.strip():
                return content
    return None
