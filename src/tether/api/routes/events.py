"""The event log of a session or a run: a Server-Sent Events stream, or a JSON page."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from starlette.responses import Response, StreamingResponse

from tether.api import render, schemas
from tether.api.auth import Owned, key_alive
from tether.core.errors import UsageError
from tether.runtime import limits, sse
from tether.runtime.service import Service

router = APIRouter(tags=["events"])

_SSE_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "`text/event-stream`: one frame per event (`id:` event id, `event:` type, "
        "`data:` the event as JSON), `: heartbeat` comments when idle. With `stream=false`: "
        "the events so far as a JSON page.",
        "model": schemas.EventPage,
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
    }
}

LastEventId = Annotated[
    str | None,
    Header(alias="Last-Event-ID", description="Resume after this event id (sent on reconnect)."),
]
After = Annotated[
    int | None, Query(ge=0, le=2**62, description="Resume after this event id (fallback).")
]
Cursor = Annotated[
    str | None, Query(description="A JSON page's next_cursor (stream=false): the next page.")
]
Stream = Annotated[
    bool, Query(description="false: answer the events so far as a JSON page and end.")
]
Heartbeat = Annotated[
    float | None, Query(ge=0.1, le=300, description="Seconds of silence between heartbeats.")
]
Limit = Annotated[int, Query(ge=1, le=limits.MAX_PAGE, description="Page size (stream=false).")]


def _event_id(text: str, field: str) -> int:
    text = text.strip()
    if not (text.isascii() and text.isdigit()) or len(text) > 18:  # ("²" is a digit)
        raise UsageError(f"{field} must be an event id (a whole number)")
    return int(text)


def _after(last_event_id: str | None, after: int | None, cursor: str | None) -> int | None:
    """Where to start: Last-Event-ID, else `after`, else `cursor` (a page's next_cursor)."""
    if last_event_id is not None and last_event_id.strip():
        return _event_id(last_event_id, "header.Last-Event-ID")
    if cursor is not None and cursor.strip():
        if after is not None:
            raise UsageError("query.cursor and query.after cannot be used together")
        return _event_id(cursor, "query.cursor")
    return after


async def _respond(
    request: Request,
    svc: Service,
    *,
    session_id: str | None,
    run_id: str | None,
    after_id: int | None,
    stream: bool,
    heartbeat: float | None,
    limit: int,
) -> Response:
    if not stream:
        events = await svc.list_events(
            session_id=session_id, run_id=run_id, after_id=after_id, limit=limit
        )
        next_cursor = str(events[-1].id) if len(events) == limit else None
        return render.page(events, next_cursor)
    if run_id is not None:
        await svc.get_run(run_id)  # 404 now, not inside the stream
    else:
        await svc.get_session(session_id or "")
    body = sse.frames(
        svc,
        session_id=session_id,
        run_id=run_id,
        after_id=after_id,
        heartbeat=heartbeat or request.app.state.settings.heartbeat_seconds,
        draining=request.app.state.draining,
        alive=key_alive(request),
    )
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(body, media_type="text/event-stream", headers=headers)


@router.get("/v1/sessions/{session_id}/events", responses=_SSE_RESPONSES)
async def session_events(
    svc: Owned,
    request: Request,
    session_id: str,
    last_event_id: LastEventId = None,
    after: After = None,
    cursor: Cursor = None,
    stream: Stream = True,
    heartbeat: Heartbeat = None,
    limit: Limit = 500,
) -> Response:
    """Every event of the session (its runs' included) as it commits, from after Last-Event-ID
    (or `after`), each exactly once and in order. The stream goes on until the client leaves."""
    return await _respond(
        request,
        svc,
        session_id=session_id,
        run_id=None,
        after_id=_after(last_event_id, after, cursor),
        stream=stream,
        heartbeat=heartbeat,
        limit=limit,
    )


@router.get("/v1/runs/{run_id}/events", responses=_SSE_RESPONSES)
async def run_events(
    svc: Owned,
    request: Request,
    run_id: str,
    last_event_id: LastEventId = None,
    after: After = None,
    cursor: Cursor = None,
    stream: Stream = True,
    heartbeat: Heartbeat = None,
    limit: Limit = 500,
) -> Response:
    """The run's events as they commit, from after Last-Event-ID (or `after`), each exactly
    once and in order; the stream ends after the run's terminal event."""
    return await _respond(
        request,
        svc,
        session_id=None,
        run_id=run_id,
        after_id=_after(last_event_id, after, cursor),
        stream=stream,
        heartbeat=heartbeat,
        limit=limit,
    )
