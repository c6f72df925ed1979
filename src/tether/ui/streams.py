"""The UI's event stream: a run's events as SSE, for a live page (``EventSource``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Query, Request
from starlette.responses import Response, StreamingResponse

from tether.core.errors import UsageError
from tether.runtime import sse
from tether.ui.auth import Owned, session_alive

router = APIRouter(prefix="/ui", include_in_schema=False)


@router.get("/runs/{run_id}/events")
async def run_events(
    svc: Owned,
    request: Request,
    run_id: str,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
    after: Annotated[int | None, Query(ge=0, le=2**62)] = None,
) -> Response:
    """The run's events from after Last-Event-ID (sent on reconnect) or ``after``; the stream
    ends after the run's terminal event, or when the UI session ends."""
    if last_event_id is not None and last_event_id.strip():
        text = last_event_id.strip()
        if not (text.isascii() and text.isdigit()) or len(text) > 18:  # ("²" is a digit)
            raise UsageError("header.Last-Event-ID must be an event id (a whole number)")
        after = int(text)
    await svc.get_run(run_id)  # 404 now, not inside the stream
    body = sse.frames(
        svc,
        session_id=None,
        run_id=run_id,
        after_id=after,
        heartbeat=request.app.state.ui.heartbeat_seconds,
        draining=request.app.state.draining,
        alive=session_alive(request),
    )
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(body, media_type="text/event-stream", headers=headers)
