"""Schedules: runs created on a cron expression, in a session or a new session each time."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Query
from starlette.responses import Response

from tether.api import render, schemas
from tether.api.auth import Owned
from tether.api.params import Cursor, Limit

router = APIRouter(prefix="/v1/schedules", tags=["schedules"])


@router.post("", status_code=201, response_model=schemas.Schedule)
async def create_schedule(svc: Owned, body: Annotated[schemas.ScheduleCreate, Body()]) -> Response:
    """Create a schedule: a run of its agent at each tick of its cron expression (in its time
    zone), in its session or in a new session each time, until end_at."""
    schedule = await svc.create_schedule(
        body.cron,
        agent=body.agent,
        input=body.input,
        goal=body.goal,
        session_id=body.session_id,
        timezone=body.timezone,
        metadata=body.metadata,
        end_at=body.end_at,
        enabled=body.enabled,
    )
    return render.record(schedule, 201, {"Location": f"/v1/schedules/{schedule.id}"})


@router.get("", response_model=schemas.SchedulePage)
async def list_schedules(
    svc: Owned,
    session_id: Annotated[str | None, Query(max_length=64)] = None,
    agent: Annotated[str | None, Query(max_length=256)] = None,
    enabled: bool | None = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> Response:
    """The caller's schedules, oldest first."""
    page = await svc.list_schedules(
        session_id=session_id, agent=agent, enabled=enabled, limit=limit, cursor=cursor
    )
    return render.page(page.data, page.next_cursor)


@router.get("/{schedule_id}", response_model=schemas.Schedule)
async def get_schedule(svc: Owned, schedule_id: str) -> Response:
    return render.record(await svc.get_schedule(schedule_id))


@router.patch("/{schedule_id}", response_model=schemas.Schedule)
async def update_schedule(
    svc: Owned, schedule_id: str, body: Annotated[schemas.ScheduleUpdate, Body()]
) -> Response:
    """Change what is given (absent = unchanged): ``{"enabled": false}`` pauses the schedule,
    ``{"enabled": true}`` resumes it from its next tick. The next tick is computed again."""
    changes: dict[str, Any] = {name: getattr(body, name) for name in body.model_fields_set}
    return render.record(await svc.update_schedule(schedule_id, **changes))


@router.delete("/{schedule_id}", status_code=204, response_class=Response)
async def delete_schedule(svc: Owned, schedule_id: str) -> Response:
    """Delete the schedule; the runs it created stay."""
    await svc.delete_schedule(schedule_id)
    return render.no_content()
