"""Runs of a thread: create (background, wait, stream), list, get, join, join the stream,
cancel and delete."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Query, Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from tether.api.auth import Owned, key_alive
from tether.api.langgraph import graphs, launch, stream
from tether.api.langgraph.options import STREAM_MODES, one_of, refuse, stream_modes
from tether.api.langgraph.shapes import (
    RUN_FIELDS,
    RUN_STATUS,
    RUN_STATUSES,
    interrupt_of,
    lg_info,
    run_dict,
    run_error,
)
from tether.api.langgraph.state import Conversation, current_values, values_of
from tether.core.errors import InvalidTransition, NotFound
from tether.core.run import Run
from tether.core.status import RunStatus
from tether.runtime.graphs import GRAPH_STREAM_MODES, graph_agent
from tether.runtime.service import Service

router = APIRouter(tags=["langgraph"], include_in_schema=False)

_SSE_HEADERS = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}


class _Cut(Exception):
    """Ends a response mid-body, so the client reconnects to its Location."""


def _paths(run: Run) -> dict[str, str]:
    base = f"/threads/{run.session_id}/runs/{run.id}"
    return {"Content-Location": base}


async def _run_in(svc: Service, thread_id: str, run_id: str) -> Run:
    run = await svc.get_run(run_id)
    if run.session_id != thread_id:
        raise NotFound("run", run_id)
    return run


async def result_of(svc: Service, run: Run) -> dict[str, Any]:
    """What /wait and /join answer: the thread's values when the run ended (with
    ``__interrupt__`` while it waits for a person), or ``__error__`` if it failed."""
    if run.status in (RunStatus.FAILED, RunStatus.TIMED_OUT):
        return {"__error__": run_error(run)}
    graph = graph_agent(svc.agents, run.agent)
    if graph is not None:
        state = await graph.get_state(svc, run.session_id, checkpoint_id=None, subgraphs=False)
        if run.status is RunStatus.WAITING:
            return {**state["values"], "__interrupt__": state["interrupts"]}
        return dict(state["values"])
    session = await svc.get_session(run.session_id)
    conversation = Conversation(svc, run.session_id)
    if run.status is RunStatus.WAITING:
        values = values_of(session.project, await conversation.as_of())
        return {**values, "__interrupt__": [interrupt_of(run)]}
    return values_of(session.project, await conversation.as_of(run.ended_at))


def _outcome(request: Request, svc: Service, run: Run) -> StreamingResponse:
    """The run's result once it ends or waits; a newline every heartbeat until then."""
    settings = request.app.state.settings
    draining = request.app.state.draining

    async def body() -> AsyncIterator[bytes]:
        loop = asyncio.get_running_loop()
        beat = loop.time() + settings.heartbeat_seconds
        current = run
        try:
            while not (current.is_terminal or current.status is RunStatus.WAITING):
                if draining.is_set():
                    raise _Cut("the server is stopping")
                pause = min(1.0, settings.heartbeat_seconds)
                current = await svc.wait_run(run.id, timeout=pause)
                if loop.time() >= beat:
                    beat = loop.time() + settings.heartbeat_seconds
                    yield b"\n"
            result = await result_of(svc, current)
        except NotFound:
            error = {"error": "RunDeleted", "message": f"run {run.id} was rolled back (deleted)"}
            result = {"__error__": error}
        yield bytes(JSONResponse(result).body)

    headers = {
        **_paths(run),
        "Location": f"/threads/{run.session_id}/runs/{run.id}/join",
    }
    return StreamingResponse(body(), media_type="application/json", headers=headers)


def _sse(request: Request, svc: Service, plan: stream.Plan) -> StreamingResponse:
    run = plan.run
    headers = {
        **_SSE_HEADERS,
        **_paths(run),
        "Location": f"/threads/{run.session_id}/runs/{run.id}/stream",
    }
    body = stream.frames(
        svc,
        plan,
        heartbeat=request.app.state.settings.heartbeat_seconds,
        draining=request.app.state.draining,
        alive=key_alive(request),
    )
    return StreamingResponse(body, media_type="text/event-stream; charset=utf-8", headers=headers)


RunBody = Annotated[dict[str, Any] | None, Body()]


@router.post("/threads/{thread_id}/runs")
async def create_run(svc: Owned, thread_id: str, body: RunBody = None) -> Response:
    """A background run: answers at once with the run (pending)."""
    run, _ = await launch.start(svc, thread_id, launch.parse(body, svc.agents))
    return JSONResponse(run_dict(run), headers=_paths(run))


@router.post("/threads/{thread_id}/runs/wait")
async def wait_run(svc: Owned, request: Request, thread_id: str, body: RunBody = None) -> Response:
    """Start a run and answer with its result once it ends (or waits for a person)."""
    run, _ = await launch.start(svc, thread_id, launch.parse(body, svc.agents))
    return _outcome(request, svc, run)


@router.post("/threads/{thread_id}/runs/stream")
async def stream_run(
    svc: Owned, request: Request, thread_id: str, body: RunBody = None
) -> Response:
    """Start a run and stream it as Server-Sent Events."""
    req = launch.parse(body, svc.agents)
    run, after = await launch.start(svc, thread_id, req)
    plan = stream.Plan(
        run=run,
        modes=req.modes,
        resumable=req.resumable,
        cancel_on_disconnect=req.on_disconnect == "cancel",
        start_after=after,
    )
    return _sse(request, svc, plan)


@router.get("/threads/{thread_id}/runs")
async def list_runs(
    svc: Owned,
    thread_id: str,
    limit: Annotated[int, Query(ge=1, le=1000)] = 10,
    offset: Annotated[int, Query(ge=0, le=2**31)] = 0,
    status: str | None = None,
    select: Annotated[list[str], Query()] = [],  # noqa: B006 (FastAPI copies defaults)
) -> Response:
    """The thread's runs, newest first."""
    for name in select:
        one_of(name, RUN_FIELDS, "query.select")
    await svc.get_session(thread_id)
    wanted = None
    if status:
        wanted = RUN_STATUSES[one_of(status, RUN_STATUSES, "query.status")]
    store_filter = next(iter(wanted)) if wanted is not None and len(wanted) == 1 else None
    found: list[Run] = []
    skipped, cursor = 0, None
    while len(found) < limit:
        page = await svc.list_runs(
            thread_id, status=store_filter, limit=1000, cursor=cursor, newest_first=True
        )
        for run in page.data:
            if wanted is not None and run.status not in wanted:
                continue
            if skipped < offset:
                skipped += 1
                continue
            if len(found) < limit:
                found.append(run)
        cursor = page.next_cursor
        if cursor is None:
            break
    runs = [run_dict(r) for r in found]
    if select:
        runs = [{k: r[k] for k in select if k in r} for r in runs]
    return JSONResponse(runs)


@router.get("/threads/{thread_id}/runs/{run_id}")
async def get_run(svc: Owned, thread_id: str, run_id: str) -> Response:
    return JSONResponse(run_dict(await _run_in(svc, thread_id, run_id)))


@router.delete("/threads/{thread_id}/runs/{run_id}", status_code=204)
async def delete_run(svc: Owned, thread_id: str, run_id: str) -> Response:
    """Remove a finished run and what it wrote (409 while it is unfinished: cancel it first)."""
    await _run_in(svc, thread_id, run_id)
    await graphs.delete_run(svc, run_id)
    return Response(status_code=204)


@router.get("/threads/{thread_id}/runs/{run_id}/join")
async def join_run(svc: Owned, request: Request, thread_id: str, run_id: str) -> Response:
    """The run's result once it ends (or waits for a person)."""
    return _outcome(request, svc, await _run_in(svc, thread_id, run_id))


@router.get("/threads/{thread_id}/runs/{run_id}/stream")
async def join_stream(
    svc: Owned,
    request: Request,
    thread_id: str,
    run_id: str,
    stream_mode: Annotated[list[str], Query()] = [],  # noqa: B006
    cancel_on_disconnect: bool = False,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> Response:
    """The run's stream, from its start (metadata first) or from after Last-Event-ID."""
    run = await _run_in(svc, thread_id, run_id)
    after = stream.parse_last_event_id(last_event_id)
    kwargs = lg_info(run).get("kwargs") or {}
    served = GRAPH_STREAM_MODES if graph_agent(svc.agents, run.agent) else STREAM_MODES
    modes = stream_modes(stream_mode, "query.stream_mode", served) or stream_modes(
        kwargs.get("stream_mode"), served=served
    )
    plan = stream.Plan(
        run=run,
        modes=tuple(modes or ("values",)),
        resumable=bool(kwargs.get("stream_resumable")) or after is not None,
        after=after,
        cancel_on_disconnect=cancel_on_disconnect,
    )
    return _sse(request, svc, plan)


@router.post("/threads/{thread_id}/runs/{run_id}/cancel")
async def cancel_run(
    svc: Owned,
    thread_id: str,
    run_id: str,
    wait: bool = False,
    action: str = "interrupt",
) -> Response:
    """Cancel a pending, running or waiting run (rollback: and delete it with what it wrote).
    202 at once; with wait, 200 and the thread's values once it has stopped. A finished run
    stays as it is (rolling one back is refused: delete it instead)."""
    one_of(action, ("interrupt", "rollback"), "query.action")
    run = await _run_in(svc, thread_id, run_id)
    try:
        run = await svc.cancel_run(run_id, reason="cancelled through the LangGraph API")
    except InvalidTransition as finished:
        if action == "rollback":
            run = await svc.get_run(run_id)  # as it ended, perhaps just now
            finished.message = (
                f"run {run_id} has already ended ({RUN_STATUS[run.status]}): a rollback undoes "
                "a run that is still pending, running or interrupted; delete this one instead "
                f"(DELETE /threads/{thread_id}/runs/{run_id})"
            )
            raise
        run = await svc.get_run(run_id)  # already stopped: cancelling it changes nothing
    if action == "rollback":
        await graphs.delete_run(svc, run_id)
    if not wait:
        return Response(status_code=202)
    if action == "rollback":
        return JSONResponse(await current_values(svc, await svc.get_session(thread_id)))
    return JSONResponse(await result_of(svc, run))


@router.post("/runs")
@router.post("/runs/wait")
@router.post("/runs/stream")
@router.post("/runs/batch")
async def stateless_run() -> Response:
    """Runs without a thread are refused: every tether run belongs to a session."""
    raise refuse(
        "thread_id=None (a stateless run)",
        "every tether run belongs to a session: create a thread (threads.create) and run in it",
    )
