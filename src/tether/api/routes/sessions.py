"""Sessions, their conversation and the context their next run would start from."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Query
from starlette.responses import Response

from tether.api import render, schemas
from tether.api.auth import Owned
from tether.api.params import Cursor, Limit
from tether.core.errors import UsageError
from tether.core.status import SessionStatus
from tether.runtime import session_copy
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

#: Answered to a body that names a session's project by its former name, context (RFC 9745:
#: deprecated since 2026-12-03).
DEPRECATED_NAME = {"Deprecation": "@1796256000"}
#: That header, as the OpenAPI spec declares it.
_HEADERS = {
    "Deprecation": {
        "description": "Sent when the body names the project by its deprecated name, context.",
        "schema": {"type": "string"},
    }
}


def _deprecation(body: schemas.SessionCreate | schemas.SessionUpdate) -> dict[str, str]:
    return DEPRECATED_NAME if body.uses_former_name else {}


@router.post(
    "",
    status_code=201,
    response_model=schemas.Session,
    responses={
        200: {
            "model": schemas.Session,
            "description": "if_exists=return: the session external_key already names, as it is",
            "headers": _HEADERS,
        },
        201: {"headers": _HEADERS},
    },
)
async def create_session(
    svc: Owned, body: Annotated[schemas.SessionCreate | None, Body()] = None
) -> Response:
    """Open a session (active; expires after ttl_seconds without activity, 30 days by default).
    With external_key and if_exists=return, the session the key already names instead (200):
    a get-or-create that is race-free across clients."""
    body = body or schemas.SessionCreate()
    given = body.model_fields_set
    ttl = body.ttl_seconds if "ttl_seconds" in given else UNSET
    project = body.project_change().get("project")
    if body.if_exists == "return":
        if body.external_key is None:
            raise UsageError("if_exists=return needs an external_key")
        if body.id is not None:
            raise UsageError("if_exists=return takes no id: the key names the session")
        session, created = await svc.get_or_create_session(
            body.external_key,
            title=body.title,
            metadata=body.metadata,
            project=project,
            ttl_seconds=ttl,
            app=body.app,
        )
    else:
        session, created = (
            await svc.create_session(
                title=body.title,
                metadata=body.metadata,
                project=project,
                ttl_seconds=ttl,
                session_id=body.id,
                external_key=body.external_key,
                app=body.app,
            ),
            True,
        )
    return render.record(
        session,
        201 if created else 200,
        {"Location": f"/v1/sessions/{session.id}", **_deprecation(body)},
    )


@router.get("", response_model=schemas.SessionPage)
async def list_sessions(
    svc: Owned,
    status: SessionStatus | None = None,
    query: Annotated[str | None, Query(description="Text in the title or metadata.")] = None,
    metadata: Annotated[
        str | None, Query(description='JSON object of top-level metadata to match, e.g. {"k":"v"}')
    ] = None,
    app: Annotated[str | None, Query(description="Only sessions of this app.")] = None,
    key_prefix: Annotated[
        str | None, Query(description="Only sessions whose external key starts with this.")
    ] = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> Response:
    """The caller's sessions, newest activity first; query matches the title, the metadata
    and the external key."""
    found = await svc.list_sessions(
        status=status,
        query=query,
        metadata=_json_object("metadata", metadata),
        app=app,
        key_prefix=key_prefix,
        limit=limit,
        cursor=cursor,
    )
    return render.session_page(found.data, found.next_cursor)


@router.get("/by-key", response_model=schemas.Session)
async def get_session_by_key(
    svc: Owned,
    key: Annotated[str, Query(description="The session's external key (any text).")],
) -> Response:
    """The caller's session whose external key is key. Keys are looked up only here (and by
    if_exists=return): a session id path never takes a key, so no key ever stands for another
    session's id."""
    return render.record(await svc.get_session_by_key(key))


@router.get("/{session_id}/export")
async def export_session(svc: Owned, session_id: str) -> Response:
    """The session with its runs, steps, messages, memory and events as one JSON document
    (``tether sessions import`` puts it into another database, ids kept)."""
    return render.record(await svc.export_session(session_id))


@router.get("/{session_id}", response_model=schemas.Session)
async def get_session(svc: Owned, session_id: str) -> Response:
    """A session as of now (expiry is exact)."""
    return render.record(await svc.get_session(session_id))


@router.patch(
    "/{session_id}", response_model=schemas.Session, responses={200: {"headers": _HEADERS}}
)
async def update_session(
    svc: Owned, session_id: str, body: Annotated[schemas.SessionUpdate, Body()]
) -> Response:
    """Change title, metadata, project, ttl_seconds, external_key or app of an active session
    (absent = unchanged)."""
    given = body.model_fields_set - {"project", "context"}
    changes: dict[str, Any] = {name: getattr(body, name) for name in given}
    changes.update(body.project_change())
    session = await svc.update_session(session_id, **changes)
    return render.record(session, headers=_deprecation(body))


@router.post("/{session_id}/close", response_model=schemas.Session)
async def close_session(svc: Owned, session_id: str) -> Response:
    """Close the session (idempotent): it becomes read-only; its unfinished runs are cancelled."""
    return render.record(await svc.close_session(session_id))


@router.post("/{session_id}/copy", status_code=201, response_model=schemas.Session)
async def copy_session(svc: Owned, session_id: str) -> Response:
    """A new, active session with this one's title, metadata, context, TTL, conversation,
    memory and graph checkpoints; its metadata names the original (copied_from)."""
    copy = await session_copy.copy_session(svc, session_id)
    return render.record(copy, 201, {"Location": f"/v1/sessions/{copy.id}"})


@router.delete("/{session_id}", status_code=204, response_class=Response)
async def delete_session(svc: Owned, session_id: str) -> Response:
    """Delete the session and everything under it: runs, steps, messages, memory, events."""
    await svc.delete_session(session_id)
    return render.no_content()


@router.post("/{session_id}/messages", status_code=201, response_model=schemas.Message)
async def add_message(
    svc: Owned, session_id: str, body: Annotated[schemas.MessageCreate, Body()]
) -> Response:
    """Append a message to the conversation every run of the session shares. A structured
    item is kept exactly; without role or content they come from it."""
    message = await svc.add_message(
        session_id, body.role, body.content, metadata=body.metadata, item=body.item
    )
    return render.record(message, 201)


@router.post("/{session_id}/messages/batch", status_code=201, response_model=schemas.MessageList)
async def add_messages(
    svc: Owned, session_id: str, body: Annotated[schemas.MessageBatch, Body()]
) -> Response:
    """Append up to 1000 messages in order, in one transaction, each with its event."""
    given = [m.model_dump(exclude_unset=True) for m in body.messages]
    added = await svc.add_messages(session_id, given)
    return render.listing(added, 201)


@router.get("/{session_id}/messages", response_model=schemas.MessagePage)
async def list_messages(
    svc: Owned,
    session_id: str,
    limit: Limit = 100,
    cursor: Cursor = None,
    order: Annotated[
        Literal["asc", "desc"],
        Query(description="asc: oldest first; desc: newest first (the tail first)."),
    ] = "asc",
    before: Annotated[
        int | None, Query(ge=1, description="Only messages before this seq (the N before it).")
    ] = None,
    include_removed: Annotated[
        bool, Query(description="Also the popped and cleared messages (with removed_at).")
    ] = False,
) -> Response:
    """The conversation by seq; order=desc&limit=N reads its newest N, and before=SEQ the ones
    before a message. Popped and cleared messages are left out unless include_removed."""
    found = await svc.list_messages(
        session_id,
        limit=limit,
        cursor=cursor,
        newest_first=order == "desc",
        before_seq=before,
        include_removed=include_removed,
    )
    return render.message_page(found.data, found.next_cursor)


@router.post(
    "/{session_id}/messages/pop",
    response_model=schemas.Message,
    responses={204: {"description": "The conversation holds no message."}},
)
async def pop_message(svc: Owned, session_id: str) -> Response:
    """Take the newest message out of the conversation (a message.removed event; the message
    stays readable with include_removed); the message, or 204 when there is none."""
    removed = await svc.pop_message(session_id)
    return render.no_content() if removed is None else render.record(removed)


@router.post("/{session_id}/messages/clear", response_model=schemas.MessagesCleared)
async def clear_messages(svc: Owned, session_id: str) -> Response:
    """Take every message out of the conversation (a messages.cleared event; the messages
    stay readable with include_removed)."""
    return render.record({"removed": await svc.clear_messages(session_id)})


@router.get("/{session_id}/context", response_model=dict[str, Any])
async def get_context(
    svc: Owned,
    session_id: str,
    budget_tokens: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
) -> Response:
    """The context the session's next run would start from, within budget_tokens."""
    return render.record(await svc.get_context(session_id, budget_tokens=budget_tokens))
