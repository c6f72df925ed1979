"""Runs of a thread: create (background, wait, stream), list, get, join, join the stream,
cancel and delete; runs without a thread (stateless), alone or in a batch."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Query, Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from tether.api.auth import Owned, key_alive
from tether.api.langgraph import graphs, launch, stream
from tether.api.langgraph.options import STREAM_MODES, check_keys, obj, one_of, refuse, stream_modes
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
from tether.core.errors import InvalidTransition, NotFound, UsageError
from tether.core.run import Run
from tether.core.status import RunStatus
from tether.runtime import stateless
from tether.runtime.graphs import GRAPH_STREAM_MODES, graph_agent
from tether.runtime.service import Service

router = APIRouter(tags=["langgraph"], include_in_schema=False)

#: The modes of a thread's stream the SDK knows.
_THREAD_MODES = ("run_modes", "lifecycle", "state_update")
#: What cancel_many's status names, as tether's statuses.
_BULK = {
    "pending": (RunStatus.READY,),
    "running": (RunStatus.RUNNING,),
    "all": (RunStatus.READY, RunStatus.RUNNING),
}
#: The most runs one batch creates.
_MAX_BATCH = 100
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
    run, _ = await launch.start(svc, thread_id, await launch.parse(body, svc))
    return JSONResponse(run_dict(run), headers=_paths(run))


@router.post("/threads/{thread_id}/runs/wait")
async def wait_run(svc: Owned, request: Request, thread_id: str, body: RunBody = None) -> Response:
    """Start a run and answer with its result once it ends (or waits for a person)."""
    run, _ = await launch.start(svc, thread_id, await launch.parse(body, svc))
    return _outcome(request, svc, run)


@router.post("/threads/{thread_id}/runs/stream")
async def stream_run(
    svc: Owned, request: Request, thread_id: str, body: RunBody = None
) -> Response:
    """Start a run and stream it as Server-Sent Events."""
    req = await launch.parse(body, svc)
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


@router.get("/threads/{thread_id}/stream")
async def join_thread_stream(
    svc: Owned,
    request: Request,
    thread_id: str,
    stream_mode: Annotated[list[str], Query()] = [],  # noqa: B006
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> Response:
    """The runs created in the thread from now on (or after Last-Event-ID), each streamed in
    its own stream modes (``run_modes``), until the client leaves."""
    for mode in stream_mode:
        if mode and mode != "run_modes":
            one_of(mode, _THREAD_MODES, "query.stream_mode")
            raise refuse(
                f"query.stream_mode {mode!r}",
                "a thread's stream is the streams of its runs (run_modes)",
            )
    await svc.get_session(thread_id)
    body = stream.thread_frames(
        svc,
        thread_id,
        after=await stream.thread_start(svc, thread_id, last_event_id),
        heartbeat=request.app.state.settings.heartbeat_seconds,
        draining=request.app.state.draining,
        alive=key_alive(request),
    )
    return StreamingResponse(
        body, media_type="text/event-stream; charset=utf-8", headers=_SSE_HEADERS
    )


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


async def _discard_ended(svc: Service, run: Run) -> None:
    """After a stateless run's answer: delete its thread if the run has ended (one still
    waiting for a person keeps it; the reaper's sweep deletes it once the run ends)."""
    try:
        if (await svc.get_run(run.id)).is_terminal:
            await stateless.discard(svc, run.session_id)
    except NotFound:
        pass


async def _then(
    body: AsyncIterable[Any], after: Callable[[], Awaitable[None]]
) -> AsyncIterator[Any]:
    async for chunk in body:
        yield chunk
    await after()


def _stateless_answer(
    svc: Service, req: launch.RunRequest, run: Run, response: StreamingResponse
) -> Response:
    if req.kwargs.get("on_completion") == "delete":
        response.body_iterator = _then(response.body_iterator, lambda: _discard_ended(svc, run))
    return response


@router.post("/runs")
async def create_stateless_run(svc: Owned, body: RunBody = None) -> Response:
    """A background run without a thread (in one made for it, deleted once it ends unless
    on_completion is keep)."""
    run = await launch.start_stateless(svc, await launch.parse(body, svc))
    return JSONResponse(run_dict(run), headers=_paths(run))


@router.post("/runs/wait")
async def wait_stateless_run(svc: Owned, request: Request, body: RunBody = None) -> Response:
    """A run without a thread; its result once it ends (the thread then goes, unless kept)."""
    req = await launch.parse(body, svc)
    run = await launch.start_stateless(svc, req)
    return _stateless_answer(svc, req, run, _outcome(request, svc, run))


@router.post("/runs/stream")
async def stream_stateless_run(svc: Owned, request: Request, body: RunBody = None) -> Response:
    """A run without a thread, streamed (the thread then goes, unless kept)."""
    req = await launch.parse(body, svc)
    run = await launch.start_stateless(svc, req)
    plan = stream.Plan(
        run=run,
        modes=req.modes,
        resumable=req.resumable,
        cancel_on_disconnect=req.on_disconnect == "cancel",
    )
    return _stateless_answer(svc, req, run, _sse(request, svc, plan))


@router.post("/runs/batch")
async def create_batch(
    svc: Owned, body: Annotated[list[dict[str, Any]] | None, Body()] = None
) -> Response:
    """Background runs, each in its thread (thread_id) or, without one, stateless."""
    if not body:
        raise UsageError("body must be a non-empty list of runs")
    if len(body) > _MAX_BATCH:
        raise UsageError(f"body holds at most {_MAX_BATCH} runs")
    parsed = []
    for item in body:
        fields = obj(item, "body[]")
        thread_id = fields.pop("thread_id", None)
        if thread_id is not None and not isinstance(thread_id, str):
            raise UsageError("body[].thread_id must be a thread id")
        parsed.append((thread_id, await launch.parse(fields, svc)))
    runs = []
    for thread_id, req in parsed:
        if thread_id is None:
            runs.append(await launch.start_stateless(svc, req))
        else:
            runs.append((await launch.start(svc, thread_id, req))[0])
    return JSONResponse([run_dict(r) for r in runs])


@router.post("/runs/cancel")
async def cancel_many(svc: Owned, body: RunBody = None, action: str = "interrupt") -> Response:
    """Cancel the given runs of a thread (thread_id, run_ids), or every run of the owner that
    is pending, running, or either (status: pending, running, all); rollback also deletes them
    with what they wrote. 204; runs already finished are left as they are."""
    one_of(action, ("interrupt", "rollback"), "query.action")
    request = obj(body)
    check_keys("body", request, ("thread_id", "run_ids", "status"))
    for run in await _to_cancel(svc, request):
        try:
            await svc.cancel_run(run.id, reason="cancelled through the LangGraph API")
        except InvalidTransition:
            continue  # it ended meanwhile
        if action == "rollback":
            await launch.roll_back(svc, run.id)
    return Response(status_code=204)


async def _to_cancel(svc: Service, request: dict[str, Any]) -> list[Run]:
    thread_id, run_ids = request.get("thread_id"), request.get("run_ids")
    status = request.get("status")
    if status is not None:
        if thread_id is not None or run_ids is not None:
            raise UsageError("give body.status, or body.thread_id with body.run_ids, not both")
        chosen = one_of(status, _BULK, "body.status")
        found: list[Run] = []
        for tether_status in _BULK[chosen]:
            page = await svc.list_all_runs(status=tether_status, limit=1000)
            found += page.data
        return found
    if not isinstance(thread_id, str) or not isinstance(run_ids, list) or not run_ids:
        raise UsageError(
            "body.thread_id and body.run_ids (a list of the thread's run ids) are required, "
            "or body.status"
        )
    if len(run_ids) > 1000 or not all(isinstance(r, str) for r in run_ids):
        raise UsageError("body.run_ids must be at most 1000 run ids")
    await svc.get_session(thread_id)
    runs = [await _run_in(svc, thread_id, run_id) for run_id in dict.fromkeys(run_ids)]
    return [r for r in runs if not r.is_terminal]
