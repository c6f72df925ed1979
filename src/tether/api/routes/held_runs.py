"""Runs their caller executes itself (a framework's runner, over HTTP), recorded as it goes.

``POST /v1/sessions/{sid}/held-runs`` starts one, running at once and held by the caller: the
answer carries a holder secret that every following write gives in the ``Tether-Holder``
header (steps, heartbeats, suspend, finish). ``POST /v1/runs/{rid}/held-resume`` continues one
that waits for a person, with a new holder. A write the holder may no longer make (the run was
cancelled, reaped, ended, or the holder is wrong or missing) is 409 lease_lost.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Header
from starlette.responses import Response

from tether.api import render, schemas
from tether.api.auth import Owned
from tether.core.run import ErrorInfo
from tether.core.usage import Usage
from tether.store.base import UNSET

router = APIRouter(tags=["held runs"])

Holder = Annotated[
    str,
    Header(
        alias="Tether-Holder",
        description="The holder secret the run was started or resumed with.",
    ),
]


@router.post("/v1/sessions/{session_id}/held-runs", status_code=201, response_model=schemas.HeldRun)
async def start_held_run(
    svc: Owned, session_id: str, body: Annotated[schemas.HeldRunCreate, Body()]
) -> Response:
    """Start a run the caller executes: running at once, held by the caller (no worker claims
    it); keep it held with heartbeats. A busy session answers by if_busy."""
    held = await svc.start_held_run(
        session_id,
        body.goal,
        agent=body.agent,
        input=body.input,
        metadata=body.metadata,
        if_busy=body.if_busy,
        timeout_seconds=body.timeout_seconds,
        lease_seconds=body.lease_seconds,
    )
    return render.record(held, 201, {"Location": f"/v1/runs/{held.run.id}"})


@router.post("/v1/runs/{run_id}/held-resume", response_model=schemas.HeldRun)
async def resume_held_run(
    svc: Owned, run_id: str, body: Annotated[schemas.HeldRunResume, Body()]
) -> Response:
    """Continue a waiting run the caller executes, with what the person gave; a new holder."""
    held = await svc.resume_held_run(run_id, body.input, lease_seconds=body.lease_seconds)
    return render.record(held)


@router.post("/v1/runs/{run_id}/steps", status_code=201, response_model=schemas.Step)
async def record_held_step(
    svc: Owned,
    run_id: str,
    body: Annotated[schemas.HeldStepCreate, Body()],
    holder: Holder = "",
) -> Response:
    """Record a step of a held run that ended: failed when error is given, else completed."""
    step = await svc.record_held_step(
        run_id,
        holder,
        body.kind,
        body.name,
        body.input,
        output=body.output,
        error=_error(body.error),
        usage=None if body.usage is None else Usage(**body.usage.model_dump()),
    )
    return render.record(step, 201)


@router.post("/v1/runs/{run_id}/heartbeat", response_model=schemas.Run)
async def heartbeat(
    svc: Owned,
    run_id: str,
    holder: Holder = "",
    body: Annotated[schemas.HeldHeartbeat | None, Body()] = None,
) -> Response:
    """Keep a held run held: its lease runs lease_seconds from now again."""
    lease = None if body is None else body.lease_seconds
    return render.record(await svc.renew_held_run(run_id, holder, lease_seconds=lease))


@router.post("/v1/runs/{run_id}/suspend", response_model=schemas.Run)
async def suspend_held_run(
    svc: Owned, run_id: str, body: Annotated[schemas.HeldSuspend, Body()], holder: Holder = ""
) -> Response:
    """A held run waits for a person (waiting): the holder lets go of it until held-resume."""
    run = await svc.suspend_held_run(run_id, holder, body.kind, body.prompt, body.details)
    return render.record(run)


@router.post("/v1/runs/{run_id}/finish", response_model=schemas.Run)
async def finish_held_run(
    svc: Owned, run_id: str, body: Annotated[schemas.HeldFinish, Body()], holder: Holder = ""
) -> Response:
    """End a held run: completed, failed, cancelled or timed_out (output left as it is when
    absent)."""
    output = body.output if "output" in body.model_fields_set else UNSET
    run = await svc.finish_held_run(
        run_id, holder, body.status, output=output, error=_error(body.error)
    )
    return render.record(run)


def _error(given: schemas.ErrorInfoIn | None) -> ErrorInfo | None:
    return None if given is None else ErrorInfo(given.type, given.message)
