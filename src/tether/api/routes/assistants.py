"""Assistants: named configurations of an agent, every change a new version."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body
from starlette.responses import Response

from tether.api import render, schemas
from tether.api.auth import Owned
from tether.api.params import Cursor, Limit
from tether.runtime import assistants

router = APIRouter(tags=["assistants"])


@router.post("/v1/assistants", status_code=201, response_model=schemas.Assistant)
async def create_assistant(
    svc: Owned, body: Annotated[schemas.AssistantCreate, Body()]
) -> Response:
    """Create an assistant of an agent (version 1)."""
    made = await assistants.create(svc, **body.model_dump())
    return render.record(made, 201, {"Location": f"/v1/assistants/{made.id}"})


@router.get("/v1/assistants", response_model=schemas.AssistantPage)
async def list_assistants(svc: Owned, limit: Limit = 50, cursor: Cursor = None) -> Response:
    """The assistants, oldest first."""
    return render.slice_page(await assistants.list_all(svc), limit, cursor)


@router.get("/v1/assistants/{assistant_id}", response_model=schemas.Assistant)
async def get_assistant(svc: Owned, assistant_id: str) -> Response:
    """The assistant as runs use it (its chosen version)."""
    return render.record(await assistants.get(svc, assistant_id))


@router.patch("/v1/assistants/{assistant_id}", response_model=schemas.Assistant)
async def update_assistant(
    svc: Owned, assistant_id: str, body: Annotated[schemas.AssistantUpdate, Body()]
) -> Response:
    """Add a version with the fields given changed; runs use it from now on."""
    changes = body.model_dump(exclude_unset=True)
    return render.record(await assistants.update(svc, assistant_id, **changes))


@router.get("/v1/assistants/{assistant_id}/versions", response_model=schemas.AssistantPage)
async def list_versions(
    svc: Owned, assistant_id: str, limit: Limit = 50, cursor: Cursor = None
) -> Response:
    """The assistant's versions, newest first."""
    found = await assistants.versions(svc, assistant_id, limit=1000)
    return render.slice_page(found, limit, cursor)


@router.post("/v1/assistants/{assistant_id}/latest", response_model=schemas.Assistant)
async def set_latest(
    svc: Owned, assistant_id: str, body: Annotated[schemas.AssistantLatest, Body()]
) -> Response:
    """Choose the version runs use."""
    return render.record(await assistants.set_latest(svc, assistant_id, body.version))


@router.delete("/v1/assistants/{assistant_id}", status_code=204)
async def delete_assistant(svc: Owned, assistant_id: str) -> Response:
    """Delete the assistant and its versions (its runs keep their record of it)."""
    await assistants.delete(svc, assistant_id)
    return render.no_content()
