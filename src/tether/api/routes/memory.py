"""Memory in its four scopes: session memory, a run's working memory (and its promotion to the
session), the caller's user memory, and the memory of the caller's apps."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Query
from starlette.responses import Response

from tether.api import render, schemas
from tether.api.auth import Owned
from tether.api.params import Cursor, Limit
from tether.core.errors import UsageError

router = APIRouter(tags=["memory"])

Namespace = Annotated[
    list[str], Query(description="User-memory namespace, one label per repetition.")
]


# -- session memory ---------------------------------------------------------------------------


@router.get("/v1/sessions/{session_id}/memory", response_model=schemas.MemoryPage)
async def list_session_memory(
    svc: Owned, session_id: str, limit: Limit = 100, cursor: Cursor = None
) -> Response:
    """Session memory: facts every run of the session sees, newest first."""
    return render.slice_page(await svc.list_session_memory(session_id), limit, cursor)


@router.get("/v1/sessions/{session_id}/memory/{key:path}", response_model=schemas.MemoryItem)
async def get_session_memory(svc: Owned, session_id: str, key: str) -> Response:
    return render.record(await svc.get_session_memory(session_id, key))


@router.put("/v1/sessions/{session_id}/memory/{key:path}", response_model=schemas.MemoryItem)
async def set_session_memory(
    svc: Owned, session_id: str, key: str, body: Annotated[schemas.MemoryPut, Body()]
) -> Response:
    """Set a session-memory item (the session must be active)."""
    return render.record(await svc.set_session_memory(session_id, key, body.value))


@router.delete(
    "/v1/sessions/{session_id}/memory/{key:path}", status_code=204, response_class=Response
)
async def delete_session_memory(svc: Owned, session_id: str, key: str) -> Response:
    await svc.delete_session_memory(session_id, key)
    return render.no_content()


# -- run working memory -----------------------------------------------------------------------


@router.get("/v1/runs/{run_id}/memory", response_model=schemas.MemoryPage)
async def list_run_memory(
    svc: Owned, run_id: str, limit: Limit = 100, cursor: Cursor = None
) -> Response:
    """The run's working memory (written by the run itself; kept after it ends)."""
    return render.slice_page(await svc.list_run_memory(run_id), limit, cursor)


@router.post("/v1/runs/{run_id}/memory/{key:path}/promote", response_model=schemas.MemoryItem)
async def promote_memory(
    svc: Owned,
    run_id: str,
    key: str,
    body: Annotated[schemas.MemoryPromote | None, Body()] = None,
) -> Response:
    """Copy a working-memory item into the session's memory, recorded with the run as source."""
    as_key = (body or schemas.MemoryPromote()).as_key
    return render.record(await svc.promote_memory(run_id, key, as_key=as_key))


# -- user memory ------------------------------------------------------------------------------


@router.get("/v1/users/me/memory", response_model=schemas.MemoryPage)
async def list_user_memory(
    svc: Owned,
    namespace: Namespace = [],  # noqa: B006 (FastAPI copies defaults)
    all_namespaces: Annotated[bool, Query(description="Items of every namespace.")] = False,
    limit: Annotated[int, Query(ge=1, le=1000)] = 1000,
    offset: Annotated[int, Query(ge=0, le=2**31)] = 0,
    cursor: Cursor = None,
) -> Response:
    """Facts about the caller, shared by all of the caller's sessions, newest first."""
    if cursor is not None:
        if not (cursor.isascii() and cursor.isdigit()) or len(cursor) > 10 or int(cursor) > 2**31:
            raise UsageError(f"invalid cursor {cursor!r}")
        offset = int(cursor)
    items = await svc.list_user_memory(
        namespace=None if all_namespaces else tuple(namespace), limit=limit, offset=offset
    )
    return render.page(items, str(offset + limit) if len(items) == limit else None)


@router.get("/v1/users/me/memory/{key:path}", response_model=schemas.MemoryItem)
async def get_user_memory(svc: Owned, key: str, namespace: Namespace = []) -> Response:  # noqa: B006
    return render.record(await svc.get_user_memory(key, namespace=tuple(namespace)))


@router.put("/v1/users/me/memory/{key:path}", response_model=schemas.MemoryItem)
async def set_user_memory(
    svc: Owned,
    key: str,
    body: Annotated[schemas.MemoryPut, Body()],
    namespace: Namespace = [],  # noqa: B006
) -> Response:
    return render.record(await svc.set_user_memory(key, body.value, namespace=tuple(namespace)))


@router.delete("/v1/users/me/memory/{key:path}", status_code=204, response_class=Response)
async def delete_user_memory(svc: Owned, key: str, namespace: Namespace = []) -> Response:  # noqa: B006
    await svc.delete_user_memory(key, namespace=tuple(namespace))
    return render.no_content()


# -- app memory -------------------------------------------------------------------------------


@router.get("/v1/apps/{app}/memory", response_model=schemas.MemoryPage)
async def list_app_memory(
    svc: Owned, app: str, limit: Limit = 100, cursor: Cursor = None
) -> Response:
    """Memory every session of the caller's app shares (another owner's app of the same name
    shares nothing with it), newest first."""
    return render.slice_page(await svc.list_app_memory(app), limit, cursor)


@router.get("/v1/apps/{app}/memory/{key:path}", response_model=schemas.MemoryItem)
async def get_app_memory(svc: Owned, app: str, key: str) -> Response:
    return render.record(await svc.get_app_memory(app, key))


@router.put("/v1/apps/{app}/memory/{key:path}", response_model=schemas.MemoryItem)
async def set_app_memory(
    svc: Owned, app: str, key: str, body: Annotated[schemas.MemoryPut, Body()]
) -> Response:
    """Set an app-memory item: every session of the app (and its runs) sees it."""
    return render.record(await svc.set_app_memory(app, key, body.value))


@router.delete("/v1/apps/{app}/memory/{key:path}", status_code=204, response_class=Response)
async def delete_app_memory(svc: Owned, app: str, key: str) -> Response:
    await svc.delete_app_memory(app, key)
    return render.no_content()
