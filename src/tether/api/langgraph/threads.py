"""Threads (tether sessions): create, get, search, update, delete; their state and history."""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Query
from starlette.responses import JSONResponse, Response

from tether.api.auth import Owned
from tether.api.langgraph.options import (
    check_keys,
    obj,
    one_of,
    opt_dict,
    opt_str,
    page,
    refuse,
    ttl_seconds,
)
from tether.api.langgraph.shapes import LG_KEY, input_messages
from tether.api.langgraph.state import (
    activity,
    current_values,
    select_fields,
    states,
    thread_dict,
    unseen,
)
from tether.core.errors import AlreadyExists, NotFound, UsageError
from tether.core.session import Session
from tether.runtime.service import Service
from tether.store.base import UNSET

router = APIRouter(tags=["langgraph"], include_in_schema=False)

Json = Annotated[dict[str, Any] | None, Body()]
_THREAD_FIELDS = (
    "thread_id",
    "created_at",
    "updated_at",
    "state_updated_at",
    "metadata",
    "status",
    "values",
    "interrupts",
    "config",
    "error",
)
_SORTS = ("thread_id", "status", "created_at", "updated_at", "state_updated_at")


async def _thread(svc: Service, session: Session, *, include_ttl: bool = False) -> dict[str, Any]:
    return thread_dict(
        session,
        await activity(svc.store, session.id),
        await current_values(svc.store, session),
        include_ttl=include_ttl,
    )


@router.post("/threads")
async def create_thread(svc: Owned, body: Json = None) -> Response:
    """A new thread (200); with thread_id, if_exists decides what an existing one does."""
    request = obj(body)
    if request.get("supersteps"):
        raise refuse("body.supersteps", "a thread cannot be created from a list of supersteps")
    check_keys("body", request, ("thread_id", "metadata", "if_exists", "ttl", "supersteps"))
    thread_id = opt_str(request, "thread_id")
    if_exists = one_of(request.get("if_exists") or "raise", ("raise", "do_nothing"), "if_exists")
    ttl = ttl_seconds(request.get("ttl"))
    try:
        session = await svc.create_session(
            metadata=opt_dict(request, "metadata"),
            ttl_seconds=UNSET if ttl is None else ttl,
            session_id=thread_id,
        )
    except AlreadyExists as exists:
        exists.message = f"Thread {thread_id} already exists"
        if if_exists == "raise":
            raise
        try:
            session = await svc.get_session(thread_id or "")
        except NotFound:  # another owner's: the id is taken, and nothing of it is shown
            raise exists from None
    return JSONResponse(await _thread(svc, session))


@router.get("/threads/{thread_id}")
async def get_thread(
    svc: Owned,
    thread_id: str,
    include: Annotated[list[str], Query()] = [],  # noqa: B006
) -> Response:
    wanted = {part for value in include for part in value.split(",") if part}
    session = await svc.get_session(thread_id)
    return JSONResponse(await _thread(svc, session, include_ttl="ttl" in wanted))


@router.patch("/threads/{thread_id}")
async def update_thread(
    svc: Owned,
    thread_id: str,
    body: Json = None,
    prefer: Annotated[str | None, Header()] = None,
) -> Response:
    """Merge metadata into the thread's (and change its ttl); 204 with Prefer: return=minimal."""
    request = obj(body)
    check_keys("body", request, ("metadata", "ttl"))
    session = await svc.get_session(thread_id)
    changes: dict[str, Any] = {}
    metadata = opt_dict(request, "metadata")
    if metadata:
        changes["metadata"] = {**session.metadata, **metadata}
    ttl = ttl_seconds(request.get("ttl"))
    if ttl is not None:
        changes["ttl_seconds"] = ttl
    if changes:
        session = await svc.update_session(thread_id, **changes)
    if prefer is not None and "return=minimal" in prefer.replace(" ", ""):
        return Response(status_code=204)
    return JSONResponse(await _thread(svc, session))


@router.delete("/threads/{thread_id}", status_code=204)
async def delete_thread(svc: Owned, thread_id: str) -> Response:
    """Delete the thread with its runs, conversation and memory."""
    await svc.delete_session(thread_id)
    return Response(status_code=204)


async def _sessions(svc: Service, metadata: dict[str, Any] | None) -> list[Session]:
    found: list[Session] = []
    cursor = None
    while True:
        listed = await svc.list_sessions(metadata=metadata, limit=1000, cursor=cursor)
        found.extend(listed.data)
        cursor = listed.next_cursor
        if cursor is None:
            return found


@router.post("/threads/count")
async def count_threads(svc: Owned, body: Json = None) -> Response:
    """How many threads match metadata, values and status."""
    request = obj(body)
    check_keys("body", request, ("metadata", "values", "status"))
    values = opt_dict(request, "values")
    status = request.get("status")
    if status is not None:
        one_of(status, ("idle", "busy", "interrupted", "error"), "body.status")
    sessions = await _sessions(svc, opt_dict(request, "metadata"))
    if status is None and not values:
        return JSONResponse(len(sessions))
    threads = [await _thread(svc, s) for s in sessions]
    return JSONResponse(sum(1 for t in threads if _matches(t, status, values)))


def _matches(thread: dict[str, Any], status: str | None, values: dict[str, Any] | None) -> bool:
    if status is not None and thread["status"] != status:
        return False
    current = thread["values"] or {}
    return all(current.get(k) == v for k, v in (values or {}).items())


@router.post("/threads/search")
async def search_threads(svc: Owned, body: Json = None) -> Response:
    """Threads matching metadata, values, ids and status; sorted, paged by limit and offset."""
    request = obj(body)
    check_keys(
        "body",
        request,
        (
            "metadata",
            "values",
            "ids",
            "status",
            "limit",
            "offset",
            "sort_by",
            "sort_order",
            "select",
            "extract",
        ),
    )
    limit, offset = page(request, default_limit=10)
    metadata = opt_dict(request, "metadata")
    values = opt_dict(request, "values")
    ids = request.get("ids")
    if ids is not None and (not isinstance(ids, list) or not all(isinstance(i, str) for i in ids)):
        raise UsageError("body.ids must be a list of thread ids")
    status = request.get("status")
    if status is not None:
        one_of(status, ("idle", "busy", "interrupted", "error"), "body.status")
    sort_by = one_of(request.get("sort_by") or "created_at", _SORTS, "body.sort_by")
    order = one_of(request.get("sort_order") or "desc", ("asc", "desc"), "body.sort_order")
    select = _names(request.get("select"), "body.select", _THREAD_FIELDS)
    extract = _extracts(request.get("extract"))

    sessions = await _sessions(svc, metadata)
    if ids is not None:
        sessions = [s for s in sessions if s.id in set(ids)]
    reverse = order == "desc"
    if status is not None or values or sort_by == "status":
        # Status and values come from the runs and the conversation: build every thread.
        threads = [await _thread(svc, s) for s in sessions]
        threads = [t for t in threads if _matches(t, status, values)]
        threads.sort(key=lambda t: (str(t[sort_by]), t["thread_id"]), reverse=reverse)
        chosen = threads[offset : offset + limit]
    else:
        sessions.sort(key=lambda s: (_sort_key(s, sort_by), s.id), reverse=reverse)
        chosen = [await _thread(svc, s) for s in sessions[offset : offset + limit]]
    out = []
    for thread in chosen:
        if extract:
            thread["extracted"] = {alias: _extract(thread, path) for alias, path in extract.items()}
        if select:
            thread = {k: thread[k] for k in (*select, "extracted") if k in thread}
        out.append(thread)
    return JSONResponse(out)


def _sort_key(session: Session, sort_by: str) -> Any:
    if sort_by == "thread_id":
        return session.id
    if sort_by == "created_at":
        return session.created_at
    if sort_by == "updated_at":
        return max(session.updated_at, session.last_activity_at)
    return session.last_activity_at


def _names(value: Any, field: str, allowed: tuple[str, ...]) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UsageError(f"{field} must be a list of field names")
    for name in value:
        one_of(name, allowed, field)
    return value


def _extracts(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise UsageError("body.extract must map aliases to paths such as values.messages[-1]")
    if len(value) > 10:
        raise UsageError("body.extract takes at most 10 paths")
    return value


_TOKEN = re.compile(r"([^.\[\]]+)|\[(-?\d+)\]")


def _extract(data: Any, path: str) -> Any:
    """The value at a path like ``values.messages[-1].content`` (None where it is missing)."""
    current = data
    for name, index in _TOKEN.findall(path):
        if name:
            current = current.get(name) if isinstance(current, dict) else None
        else:
            position = int(index)
            ok = isinstance(current, list) and -len(current) <= position < len(current)
            current = current[position] if ok else None
        if current is None:
            return None
    return current


# -- state and history --------------------------------------------------------------------------


async def _states(svc: Service, thread_id: str) -> list[dict[str, Any]]:
    session = await svc.get_session(thread_id)
    act = await activity(svc.store, thread_id)
    return await states(svc.store, session, act.waiting)


def _no_subgraphs(subgraphs: bool) -> None:
    if subgraphs:
        raise refuse("subgraphs", "tether agents have no subgraphs")


def _checkpoint_id(value: Any, field: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        check_keys(field, value, ("thread_id", "checkpoint_ns", "checkpoint_id", "checkpoint_map"))
        if value.get("checkpoint_ns"):
            raise refuse(f"{field}.checkpoint_ns", "tether agents have no subgraphs")
        found = value.get("checkpoint_id")
        return found if isinstance(found, str) and found else None
    raise UsageError(f"{field} must be a checkpoint id or a checkpoint object")


async def _state_at(svc: Service, thread_id: str, checkpoint_id: str) -> dict[str, Any]:
    for state in await _states(svc, thread_id):
        if state["checkpoint"]["checkpoint_id"] == checkpoint_id:
            return state
    raise NotFound("checkpoint", checkpoint_id)


@router.get("/threads/{thread_id}/state")
async def get_state(
    svc: Owned,
    thread_id: str,
    subgraphs: bool = False,
    select: Annotated[list[str], Query()] = [],  # noqa: B006
) -> Response:
    """The thread's current state: values, checkpoint, what it waits for."""
    _no_subgraphs(subgraphs)
    return JSONResponse(select_fields((await _states(svc, thread_id))[0], select))


@router.get("/threads/{thread_id}/state/{checkpoint_id}")
async def get_state_at(
    svc: Owned,
    thread_id: str,
    checkpoint_id: str,
    subgraphs: bool = False,
    select: Annotated[list[str], Query()] = [],  # noqa: B006
) -> Response:
    _no_subgraphs(subgraphs)
    return JSONResponse(select_fields(await _state_at(svc, thread_id, checkpoint_id), select))


@router.post("/threads/{thread_id}/state/checkpoint")
async def post_state_at(svc: Owned, thread_id: str, body: Json = None) -> Response:
    request = obj(body)
    check_keys("body", request, ("checkpoint", "subgraphs", "select"))
    _no_subgraphs(bool(request.get("subgraphs")))
    checkpoint_id = _checkpoint_id(request.get("checkpoint"), "body.checkpoint")
    select = request.get("select") if isinstance(request.get("select"), list) else None
    if checkpoint_id is None:
        return JSONResponse(select_fields((await _states(svc, thread_id))[0], select))
    return JSONResponse(select_fields(await _state_at(svc, thread_id, checkpoint_id), select))


@router.post("/threads/{thread_id}/state")
async def update_state(svc: Owned, thread_id: str, body: Json = None) -> Response:
    """Add to the thread without a run: values.messages join the conversation, every other key
    is merged into the session's context."""
    request = obj(body)
    for key in ("checkpoint", "checkpoint_id"):
        if request.get(key):
            raise refuse(f"body.{key}", "state can only be added to the thread's latest state")
    check_keys("body", request, ("values", "as_node", "checkpoint", "checkpoint_id"))
    values = request.get("values")
    if isinstance(values, list):
        raise refuse("body.values (a list of updates)", "send one update (a JSON object)")
    if values is not None and not isinstance(values, dict):
        raise UsageError("body.values must be a JSON object")
    as_node = opt_str(request, "as_node")
    session = await svc.get_session(thread_id)
    values = dict(values or {})
    field = "body.values.messages"
    messages = input_messages(values.pop("messages", None), field, "update")
    messages = await unseen(svc.store, thread_id, messages, field)
    for role, content, metadata in messages:
        if as_node:
            metadata[LG_KEY]["as_node"] = as_node
        await svc.add_message(thread_id, role, content, metadata=metadata)
    if values:
        await svc.update_session(thread_id, context={**session.context, **values})
    latest = (await _states(svc, thread_id))[0]
    return JSONResponse({"checkpoint": latest["checkpoint"]})


@router.post("/threads/{thread_id}/history")
async def get_history(svc: Owned, thread_id: str, body: Json = None) -> Response:
    """The thread's states, newest first, before a checkpoint, matching metadata."""
    request = obj(body)
    check_keys("body", request, ("limit", "before", "metadata", "checkpoint", "select"))
    limit, _ = page(request, default_limit=10)
    if _checkpoint_id(request.get("checkpoint"), "body.checkpoint") is not None:
        raise refuse(
            "body.checkpoint.checkpoint_id",
            "history lists the whole thread; page it with before",
        )
    before = _checkpoint_id(request.get("before"), "body.before")
    metadata = opt_dict(request, "metadata") or {}
    select = request.get("select") if isinstance(request.get("select"), list) else None
    found = await _states(svc, thread_id)
    if found and found[0]["checkpoint"]["checkpoint_id"] is None:
        found = []
    if before is not None:
        ids = [s["checkpoint"]["checkpoint_id"] for s in found]
        found = found[ids.index(before) + 1 :] if before in ids else []
    found = [s for s in found if all(s["metadata"].get(k) == v for k, v in metadata.items())]
    return JSONResponse([select_fields(s, select) for s in found[:limit]])
