"""Runs: create in a session, read, long-poll, cancel, resume; their steps and tool history."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Body, Query, Request
from pydantic import AwareDatetime
from starlette.responses import Response

from tether.api import render, schemas
from tether.api.auth import Owned
from tether.api.params import Cursor, Limit, Since, Until
from tether.core.errors import UsageError
from tether.core.run import RunOptions
from tether.core.status import RunStatus, StepStatus
from tether.runtime import assistants, stateless
from tether.runtime.service import Service

router = APIRouter(tags=["runs"])

#: A long-poll re-checks the server's draining flag at least this often.
_WAIT_SLICE = 1.0


async def _options(svc: Service, body: schemas.RunCreate) -> RunOptions:
    """The run's options; with an assistant, its agent and the version it uses."""
    options = body.options()
    if body.assistant_id is None:
        return options
    assistant = await assistants.get(svc, body.assistant_id)
    if body.agent is not None and body.agent != assistant.graph_id:
        raise UsageError(
            f"agent {body.agent!r} is not the agent of assistant {assistant.id} "
            f"({assistant.graph_id!r}): give one of them"
        )
    return assistants.run_options(assistant, options)


@router.post("/v1/sessions/{session_id}/runs", status_code=201, response_model=schemas.Run)
async def create_run(
    svc: Owned, session_id: str, body: Annotated[schemas.RunCreate, Body()]
) -> Response:
    """Accept a run (ready); the worker executes it. A busy session answers by if_busy."""
    run = await svc.create_run(session_id, body.goal, options=await _options(svc, body))
    return render.record(run, 201, {"Location": f"/v1/runs/{run.id}"})


@router.post("/v1/runs", status_code=201, response_model=schemas.Run)
async def create_stateless_run(
    svc: Owned, body: Annotated[schemas.StatelessRunCreate, Body()]
) -> Response:
    """Accept a run in a new session of its own (a stateless run): the session is deleted once
    the run has ended, within a sweep interval, unless on_completion is keep."""
    run = await stateless.start(
        svc, body.goal, options=await _options(svc, body), keep=body.on_completion == "keep"
    )
    return render.record(run, 201, {"Location": f"/v1/runs/{run.id}"})


@router.get("/v1/sessions/{session_id}/runs", response_model=schemas.RunPage)
async def list_runs(
    svc: Owned,
    session_id: str,
    status: RunStatus | None = None,
    limit: Limit = 50,
    cursor: Cursor = None,
    newest_first: bool = False,
) -> Response:
    """The session's runs by seq: Run 1, 2, 3 …"""
    found = await svc.list_runs(
        session_id, status=status, limit=limit, cursor=cursor, newest_first=newest_first
    )
    return render.page(found.data, found.next_cursor)


@router.get("/v1/runs", response_model=schemas.RunPage)
async def list_all_runs(
    svc: Owned,
    status: RunStatus | None = None,
    agent: Annotated[str | None, Query(description="Only runs of this agent.")] = None,
    since: Annotated[
        AwareDatetime | None, Query(description="Only runs created at or after this time.")
    ] = None,
    until: Annotated[
        AwareDatetime | None, Query(description="Only runs created before this time.")
    ] = None,
    q: Annotated[
        str | None, Query(description="Text in the goal, agent, input, output or error.")
    ] = None,
    stuck: Annotated[
        bool,
        Query(description="Only ready runs whose agent no running worker has."),
    ] = False,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> Response:
    """The caller's runs across all sessions, newest first (without their contexts)."""
    found = await svc.list_all_runs(
        status=status,
        agent=agent,
        since=since,
        until=until,
        query=q,
        stuck=stuck,
        limit=limit,
        cursor=cursor,
    )
    return render.page(found.data, found.next_cursor)


@router.get("/v1/runs/{run_id}", response_model=schemas.Run)
async def get_run(svc: Owned, run_id: str) -> Response:
    """A run: status, times, error, output, usage."""
    return render.record(await svc.get_run(run_id))


@router.delete("/v1/runs/{run_id}", status_code=204, response_class=Response)
async def delete_run(svc: Owned, run_id: str) -> Response:
    """Remove a finished run and what it wrote."""
    await svc.delete_run(run_id)
    return render.no_content()


@router.get("/v1/runs/{run_id}/wait", response_model=schemas.Run)
async def wait_run(
    svc: Owned,
    request: Request,
    run_id: str,
    timeout: Annotated[
        float, Query(ge=0, description="Seconds to hold the request (capped by the server).")
    ] = 30.0,
) -> Response:
    """Long-poll: answer once the run is terminal or waiting for a person, or at the timeout,
    with the run as it then is."""
    settings = request.app.state.settings
    draining = request.app.state.draining
    loop = asyncio.get_running_loop()
    deadline = loop.time() + min(timeout, settings.max_wait_seconds)
    while True:
        remaining = deadline - loop.time()
        run = await svc.wait_run(run_id, timeout=max(0.0, min(_WAIT_SLICE, remaining)))
        done = run.is_terminal or run.status is RunStatus.WAITING
        if done or remaining <= _WAIT_SLICE or draining.is_set():
            return render.record(run)


@router.post("/v1/runs/{run_id}/cancel", response_model=schemas.Run)
async def cancel_run(
    svc: Owned, run_id: str, body: Annotated[schemas.RunCancel | None, Body()] = None
) -> Response:
    """Cancel a ready, running or waiting run (409 invalid_transition once it has finished)."""
    reason = (body or schemas.RunCancel()).reason
    return render.record(await svc.cancel_run(run_id, reason=reason))


@router.post("/v1/runs/{run_id}/resume", response_model=schemas.Run)
async def resume_run(
    svc: Owned, run_id: str, body: Annotated[schemas.RunResume, Body()]
) -> Response:
    """Continue a waiting run with what it asked for (``{"input": …}``)."""
    return render.record(await svc.resume_run(run_id, body.input))


@router.get("/v1/runs/{run_id}/steps", response_model=schemas.StepPage)
async def list_steps(
    svc: Owned, run_id: str, limit: Limit = 100, cursor: Cursor = None
) -> Response:
    """The run's steps in order: model calls, tool calls (call and result together), notes."""
    found = await svc.page_steps(run_id, limit=limit, cursor=cursor)
    return render.page(found.data, found.next_cursor)


@router.get("/v1/sessions/{session_id}/tool-calls", response_model=schemas.StepPage)
async def session_tool_calls(
    svc: Owned,
    session_id: str,
    tool: str | None = None,
    run_id: str | None = None,
    status: StepStatus | None = None,
    since: Since = None,
    until: Until = None,
    limit: Limit = 100,
    cursor: Cursor = None,
    newest_first: bool = False,
) -> Response:
    """The session's tool history, aggregated over its runs."""
    found = await svc.list_tool_calls(
        session_id=session_id,
        run_id=run_id,
        tool=tool,
        status=status,
        since=since,
        until=until,
        limit=limit,
        cursor=cursor,
        newest_first=newest_first,
    )
    return render.page(found.data, found.next_cursor)


@router.get("/v1/runs/{run_id}/tool-calls", response_model=schemas.StepPage)
async def run_tool_calls(
    svc: Owned,
    run_id: str,
    tool: str | None = None,
    status: StepStatus | None = None,
    since: Since = None,
    until: Until = None,
    limit: Limit = 100,
    cursor: Cursor = None,
    newest_first: bool = False,
) -> Response:
    """The tool calls of one run."""
    found = await svc.list_tool_calls(
        run_id=run_id,
        tool=tool,
        status=status,
        since=since,
        until=until,
        limit=limit,
        cursor=cursor,
        newest_first=newest_first,
    )
    return render.page(found.data, found.next_cursor)
