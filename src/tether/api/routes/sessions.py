"""Sessions, their conversation and the context their next run would start from."""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Body, Query
from starlette.responses import Response

from tether.api import render, schemas
from tether.api.auth import Owned
from tether.api.params import Cursor, Limit
from tether.core.errors import UsageError
from tether.core.status import SessionStatus
from tether.store.base import UNSET


def _json_object(name: str, text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, dict):
        raise UsageError(f"query.{name} must be a JSON object")
    return value


router = APIRouter(prefix="/v1/sessions", tags=["sessions"])


@router.post("", status_code=201, response_model=schemas.Session)
async def create_session(
    svc: Owned, body: Annotated[schemas.SessionCreate | None, Body()] = None
) -> Response:
    """Open a session (active; expires after ttl_seconds without activity, 30 days by default)."""
    body = body or schemas.SessionCreate()
    given = body.model_fields_set
    session = await svc.create_session(
        title=body.title,
        metadata=body.metadata,
        context=body.context,
        ttl_seconds=body.ttl_seconds if "ttl_seconds" in given else UNSET,
        session_id=body.id,
    )
    return render.record(session, 201, {"Location": f"/v1/sessions/{session.id}"})


@router.get("", response_model=schemas.SessionPage)
async def list_sessions(
    svc: Owned,
    status: SessionStatus | None = None,
    query: Annotated[str | None, Query(description="Text in the title or metadata.")] = None,
    metadata: Annotated[
        str | None, Query(description='JSON object of top-level metadata to match, e.g. {"k":"v"}')
    ] = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> Response:
    """The caller's sessions, newest activity first."""
    found = await svc.list_sessions(
        status=status,
        query=query,
        metadata=_json_object("metadata", metadata),
        limit=limit,
        cursor=cursor,
    )
    return render.page(found.data, found.next_cursor)


@router.get("/{session_id}", response_model=schemas.Session)
async def get_session(svc: Owned, session_id: str) -> Response:
    """A session as of now (expiry is exact)."""
    return render.record(await svc.get_session(session_id))


@router.patch("/{session_id}", response_model=schemas.Session)
async def update_session(
    svc: Owned, session_id: str, body: Annotated[schemas.SessionUpdate, Body()]
) -> Response:
    """Change title, metadata, context or ttl_seconds of an active session (absent = unchanged)."""
    given = body.model_fields_set
    changes: dict[str, Any] = {name: getattr(body, name) for name in given}
    return render.record(await svc.update_session(session_id, **changes))


@router.post("/{session_id}/close", response_model=schemas.Session)
async def close_session(svc: Owned, session_id: str) -> Response:
    """Close the session (idempotent): it becomes read-only; its unfinished runs are cancelled."""
    return render.record(await svc.close_session(session_id))


@router.delete("/{session_id}", status_code=204, response_class=Response)
async def delete_session(svc: Owned, session_id: str) -> Response:
    """Delete the session and everything under it: runs, steps, messages, memory, events."""
    await svc.delete_session(session_id)
    return render.no_content()


@router.post("/{session_id}/messages", status_code=201, response_model=schemas.Message)
async def add_message(
    svc: Owned, session_id: str, body: Annotated[schemas.MessageCreate, Body()]
) -> Response:
    """Append a message to the conversation every run of the session shares."""
    message = await svc.add_message(session_id, body.role, body.content, metadata=body.metadata)
    return render.record(message, 201)


@router.get("/{session_id}/messages", response_model=schemas.MessagePage)
async def list_messages(
    svc: Owned, session_id: str, limit: Limit = 100, cursor: Cursor = None
) -> Response:
    """The conversation, oldest first."""
    found = await svc.list_messages(session_id, limit=limit, cursor=cursor)
    return render.page(found.data, found.next_cursor)


@router.get("/{session_id}/context", response_model=dict[str, Any])
async def get_context(
    svc: Owned,
    session_id: str,
    budget_tokens: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
) -> Response:
    """The context the session's next run would start from, within budget_tokens."""
    return render.record(await svc.get_context(session_id, budget_tokens=budget_tokens))
