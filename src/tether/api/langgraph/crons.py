"""Crons: LangGraph's scheduled runs, served as tether schedules. A cron on a thread creates its
runs in that session; a cron without one, in a new session each time (kept: on_run_completed
``keep``). Each tick's run carries the cron's LangGraph options, as a run started through this
API does."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Body
from starlette.responses import JSONResponse, Response

from tether.api.auth import Owned
from tether.api.langgraph import launch
from tether.api.langgraph.assistants import resolve
from tether.api.langgraph.options import check_keys, obj, one_of, opt_bool, opt_str, page, refuse
from tether.api.langgraph.shapes import LG_KEY
from tether.core.clock import to_iso
from tether.core.errors import NotFound, UsageError
from tether.core.schedule import Schedule
from tether.runtime import limits
from tether.runtime.service import Service

router = APIRouter(tags=["langgraph"], include_in_schema=False)

Json = Annotated[dict[str, Any] | None, Body()]

#: Keys of a cron body that are the schedule's rather than its runs'.
_SCHEDULE_KEYS = ("schedule", "end_time", "enabled", "timezone", "on_run_completed")
#: Keys of an update that change the runs' options.
_RUN_KEYS = ("input", "metadata", "config", "context", "stream_mode", "stream_subgraphs")
_UPDATE_KEYS = (
    *_SCHEDULE_KEYS,
    *_RUN_KEYS,
    "webhook",
    "interrupt_before",
    "interrupt_after",
    "stream_resumable",
    "durability",
)
#: The fields of a Cron, in order (what search's sort_by and select may name).
CRON_FIELDS = (
    "cron_id",
    "assistant_id",
    "thread_id",
    "on_run_completed",
    "end_time",
    "schedule",
    "timezone",
    "created_at",
    "updated_at",
    "payload",
    "user_id",
    "next_run_date",
    "metadata",
    "enabled",
)
_SORTS = (
    "cron_id",
    "assistant_id",
    "thread_id",
    "next_run_date",
    "end_time",
    "created_at",
    "updated_at",
)


def cron_dict(schedule: Schedule) -> dict[str, Any]:
    """A schedule as LangGraph's Cron."""
    info = schedule.metadata.get(LG_KEY)
    info = info if isinstance(info, dict) else {}
    metadata = {k: v for k, v in schedule.metadata.items() if k != LG_KEY}
    assistant_id = info.get("assistant_id", schedule.agent)
    payload: dict[str, Any] = {
        "assistant_id": assistant_id,
        "input": schedule.input,
        "metadata": metadata,
        "multitask_strategy": "enqueue",
        **(info.get("kwargs") or {}),
    }
    return {
        "cron_id": schedule.id,
        "assistant_id": assistant_id,
        "thread_id": schedule.session_id,
        "on_run_completed": None if schedule.session_id else "keep",
        "end_time": to_iso(schedule.end_at),
        "schedule": schedule.cron,
        "timezone": schedule.timezone,
        "created_at": to_iso(schedule.created_at),
        "updated_at": to_iso(schedule.updated_at),
        "payload": payload,
        "user_id": schedule.owner,
        "next_run_date": to_iso(schedule.next_run_at if schedule.enabled else None),
        "metadata": metadata,
        "enabled": schedule.enabled,
    }


def _end_time(value: Any) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        moment = None
    if moment is None:
        raise UsageError("body.end_time must be an ISO 8601 time")
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _keep_threads(request: dict[str, Any]) -> None:
    if request.get("on_run_completed") not in (None, "keep"):
        one_of(request["on_run_completed"], ("delete", "keep"), "body.on_run_completed")
        raise refuse(
            "body.on_run_completed",
            "the sessions a schedule creates are kept: delete them, or let them expire",
        )


def _no_webhook(request: dict[str, Any]) -> None:
    if request.get("webhook"):
        raise refuse(
            "body.webhook", "a cron's runs call no webhook: give one to runs you start yourself"
        )


async def _create(svc: Service, thread_id: str | None, body: Any) -> Response:
    request = obj(body)
    schedule = request.get("schedule")
    if not isinstance(schedule, str):
        raise UsageError("body.schedule is required: a cron expression such as '0 9 * * *'")
    _keep_threads(request)
    _no_webhook(request)
    run_part = {k: v for k, v in request.items() if k not in _SCHEDULE_KEYS}
    run_part.pop("multitask_strategy", None)  # each tick's run waits its turn (enqueue)
    req = await launch.parse(run_part, svc)
    if req.resuming:
        raise UsageError("a cron starts new runs: give body.input, not body.command")
    if thread_id is not None:
        await svc.get_session(thread_id)
    made = await svc.create_schedule(
        schedule,
        agent=req.agent,
        input=req.input or {},
        goal=launch.goal_of(req.input, req.agent),
        session_id=thread_id,
        timezone=opt_str(request, "timezone"),
        metadata={**req.metadata, LG_KEY: _lg_options(req)},
        end_at=_end_time(request.get("end_time")),
        enabled=opt_bool(request, "enabled") is not False,
    )
    return JSONResponse(cron_dict(made))


def _lg_options(req: launch.RunRequest) -> dict[str, Any]:
    return {"assistant_id": req.assistant_id, "multitask_strategy": "enqueue", "kwargs": req.kwargs}


@router.post("/runs/crons")
async def create_cron(svc: Owned, body: Json = None) -> Response:
    """crons.create: a new thread for each run."""
    return await _create(svc, None, body)


@router.post("/threads/{thread_id}/runs/crons")
async def create_thread_cron(svc: Owned, thread_id: str, body: Json = None) -> Response:
    """crons.create_for_thread: each run in this thread, behind its unfinished runs."""
    return await _create(svc, thread_id, body)


async def _all(svc: Service, request: dict[str, Any]) -> list[Schedule]:
    """The caller's schedules matching a search or count body."""
    thread_id = opt_str(request, "thread_id")
    enabled = opt_bool(request, "enabled")
    assistant_id = opt_str(request, "assistant_id")
    agent, stored = (None, None) if not assistant_id else await resolve(svc, assistant_id)
    metadata = request.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise UsageError("body.metadata must be a JSON object")
    found: list[Schedule] = []
    cursor = None
    while True:
        batch = await svc.list_schedules(
            session_id=thread_id, agent=agent, enabled=enabled, limit=limits.MAX_PAGE, cursor=cursor
        )
        found += [
            s
            for s in batch.data
            if _has(s.metadata, metadata) and (stored is None or _made_by(s, assistant_id))
        ]
        cursor = batch.next_cursor
        if cursor is None:
            return found


def _made_by(schedule: Schedule, assistant_id: str | None) -> bool:
    """Whether the schedule's runs are those of the (stored) assistant."""
    info = schedule.metadata.get(LG_KEY)
    return isinstance(info, dict) and info.get("assistant_id") == assistant_id


def _has(metadata: dict[str, Any], wanted: dict[str, Any]) -> bool:
    return all(k != LG_KEY and metadata.get(k) == v for k, v in wanted.items())


@router.post("/runs/crons/search")
async def search_crons(svc: Owned, body: Json = None) -> Response:
    """crons.search: filtered by assistant, thread, enabled and metadata; sorted; paged."""
    request = obj(body or {})
    check_keys(
        "body",
        request,
        (
            "assistant_id",
            "thread_id",
            "enabled",
            "metadata",
            "limit",
            "offset",
            "sort_by",
            "sort_order",
            "select",
        ),
    )
    limit, offset = page(request, default_limit=10)
    sort_by = one_of(request.get("sort_by") or "created_at", _SORTS, "body.sort_by")
    order = one_of(request.get("sort_order") or "desc", ("asc", "desc"), "body.sort_order")
    select = request.get("select")
    if select is not None and (
        not isinstance(select, list) or not all(name in CRON_FIELDS for name in select)
    ):
        raise UsageError(f"body.select must be a list of: {', '.join(CRON_FIELDS)}")
    crons = [cron_dict(s) for s in await _all(svc, request)]
    crons.sort(key=lambda c: (str(c[sort_by] or ""), c["cron_id"]), reverse=order == "desc")
    chosen = crons[offset : offset + limit]
    if select:
        chosen = [{k: c[k] for k in select} for c in chosen]
    return JSONResponse(chosen)


@router.post("/runs/crons/count")
async def count_crons(svc: Owned, body: Json = None) -> Response:
    """crons.count: how many of the caller's crons match."""
    request = obj(body or {})
    check_keys("body", request, ("assistant_id", "thread_id", "metadata"))
    return JSONResponse(len(await _all(svc, request)))


@router.patch("/runs/crons/{cron_id}")
async def update_cron(svc: Owned, cron_id: str, body: Json = None) -> Response:
    """crons.update: the schedule, its end, its state and its runs' input and options."""
    request = obj(body or {})
    check_keys("body", request, _UPDATE_KEYS)
    _keep_threads(request)
    _no_webhook(request)
    old = await svc.get_schedule(cron_id)
    changes: dict[str, Any] = {}
    if "schedule" in request:
        changes["cron"] = request["schedule"]
    if "timezone" in request:
        changes["timezone"] = opt_str(request, "timezone")
    if "end_time" in request:
        changes["end_at"] = _end_time(request["end_time"])
    if request.get("enabled") is not None:
        changes["enabled"] = opt_bool(request, "enabled")
    if any(key in request for key in _UPDATE_KEYS if key not in _SCHEDULE_KEYS):
        changes.update(await _run_changes(svc, old, request))
    return JSONResponse(cron_dict(await svc.update_schedule(cron_id, **changes)))


async def _run_changes(svc: Service, old: Schedule, request: dict[str, Any]) -> dict[str, Any]:
    """The schedule's input, goal and metadata after an update of its runs' options: the
    options given replace the old ones, the others stay."""
    info = old.metadata.get(LG_KEY)
    info = info if isinstance(info, dict) else {}
    kwargs = info.get("kwargs") or {}
    merged: dict[str, Any] = {
        "assistant_id": info.get("assistant_id", old.agent),
        "input": old.input,
        "metadata": {k: v for k, v in old.metadata.items() if k != LG_KEY},
        **{k: v for k, v in kwargs.items() if k in ("config", "context", "stream_mode")},
    }
    merged.update({k: v for k, v in request.items() if k not in _SCHEDULE_KEYS})
    req = await launch.parse(merged, svc)
    return {
        "input": req.input or {},
        "goal": launch.goal_of(req.input, req.agent),
        "metadata": {**req.metadata, LG_KEY: _lg_options(req)},
    }


@router.delete("/runs/crons/{cron_id}", status_code=204)
async def delete_cron(svc: Owned, cron_id: str) -> Response:
    """crons.delete: the runs it made stay."""
    try:
        await svc.delete_schedule(cron_id)
    except NotFound:
        raise NotFound("cron", cron_id) from None
    return Response(status_code=204)
