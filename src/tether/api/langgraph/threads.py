"""Threads (tether sessions): create, get, search, update, delete; their state and history."""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Query
from starlette.responses import JSONResponse, Response

from tether.api.auth import Owned
from tether.api.langgraph.graphs import graph_of_thread
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
    THREAD_STATUS,
    States,
    current_values,
    select_fields,
    thread_dict,
    unseen,
    values_of,
)
from tether.core.errors import AlreadyExists, NotFound, UsageError
from tether.core.session import Session
from tether.runtime import limits, session_copy
from tether.runtime.graphs import GraphAgent
from tether.runtime.service import Service
from tether.store.base import UNSET, SessionSort

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
#: LangGraph's sort keys, as the service's.
_SORTS: dict[str, SessionSort] = {
    "thread_id": "id",
    "status": "activity",
    "created_at": "created_at",
    "updated_at": "updated_at",
    "state_updated_at": "activity_at",
}
#: The most threads one prune names.
_MAX_PRUNED = 1000
#: Threads a search by values finds at a time (a page of sessions, read in one query: pages
#: of fewer would shift under threads created or deleted between them).
_FOUND = 1000
#: Threads whose conversations a search by values reads at a time (each may be long: a
#: thousand at once took memory in proportion to all of them).
_SCANNED = 5
#: LangGraph's thread statuses, as what the service says a session's runs are doing.
_STATUSES = {name: activity for activity, name in THREAD_STATUS.items()}


async def _thread(svc: Service, session: Session, *, include_ttl: bool = False) -> dict[str, Any]:
    graph = await graph_of_thread(svc, session.id)
    if graph is not None:
        state = await graph.get_state(svc, session.id, checkpoint_id=None, subgraphs=False)
        values = state["values"]
    else:
        values = await current_values(svc, session)
    return thread_dict(
        session,
        (await svc.run_activity([session.id]))[session.id],
        values,
        include_ttl=include_ttl,
    )


async def _threads(
    svc: Service, sessions: list[Session], *, with_values: bool = True
) -> list[dict[str, Any]]:
    """Threads of sessions: their runs' activity in one read, their conversations only when
    their values are wanted."""
    activity = await svc.run_activity([s.id for s in sessions])
    return [
        thread_dict(
            s,
            activity[s.id],
            await current_values(svc, s) if with_values else values_of(s.project, []),
        )
        for s in sessions
    ]


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


@router.post("/threads/{thread_id}/copy")
async def copy_thread(svc: Owned, thread_id: str) -> Response:
    """A new thread with the conversation, project, memory and state of this one (its
    metadata names the original: copied_from); the runs stay with the original."""
    graph = await graph_of_thread(svc, thread_id)  # (a copy has no runs to tell it)
    made_for = {"graph_id": graph.graph_id} if graph is not None else None
    copy = await session_copy.copy_session(svc, thread_id, metadata=made_for)
    return JSONResponse(await _thread(svc, copy))


@router.post("/threads/prune")
async def prune_threads(svc: Owned, body: Json = None) -> Response:
    """delete: delete the threads; keep_latest: delete their graph checkpoints but the newest
    (tether's own history of their runs is their audit log, and stays). Unknown ids count
    for nothing."""
    request = obj(body)
    check_keys("body", request, ("thread_ids", "strategy"))
    ids = request.get("thread_ids")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise UsageError("body.thread_ids must be a list of thread ids")
    if len(ids) > _MAX_PRUNED:
        raise UsageError(f"body.thread_ids holds at most {_MAX_PRUNED} ids")
    strategy = one_of(request.get("strategy") or "delete", ("delete", "keep_latest"), "strategy")
    pruned = 0
    for thread_id in dict.fromkeys(ids):
        try:
            if strategy == "delete":
                await svc.delete_session(thread_id)
            else:
                await svc.get_session(thread_id)
                await svc.store.prune_checkpoints(
                    thread_id, owner=svc.owner, keep_latest=True, now=svc.clock.now()
                )
        except NotFound:
            continue
        pruned += 1
    return JSONResponse({"pruned_count": pruned})


def _filters(request: dict[str, Any]) -> dict[str, Any]:
    """The service's search filters for a count or search body (values.messages aside: the
    conversation is matched after the search)."""
    values = dict(opt_dict(request, "values") or {})
    values.pop("messages", None)
    ids = request.get("ids")
    if ids is not None and (not isinstance(ids, list) or not all(isinstance(i, str) for i in ids)):
        raise UsageError("body.ids must be a list of thread ids")
    status = request.get("status")
    if status is not None:
        one_of(status, tuple(_STATUSES), "body.status")
    return {
        "metadata": opt_dict(request, "metadata"),
        "project": values or None,
        "ids": ids,
        "activity": None if status is None else _STATUSES[status],
    }


def _conversation_filter(request: dict[str, Any]) -> dict[str, Any] | None:
    """values.messages, when a count or search asks for it (matched in Python)."""
    values = opt_dict(request, "values") or {}
    return {"messages": values["messages"]} if "messages" in values else None


async def _matching(svc: Service, filters: dict[str, Any], wanted: dict[str, Any]) -> list[Any]:
    """Threads the database finds with filters whose values also match wanted (a rare query:
    every found thread's conversation is read, _SCANNED threads at a time)."""
    found, offset = [], 0
    while True:
        page = await svc.search_sessions(**filters, limit=_FOUND, offset=offset)
        for start in range(0, len(page), _SCANNED):
            threads = await _threads(svc, page[start : start + _SCANNED])
            found += [t for t in threads if _matches(t, wanted)]
        if len(page) < _FOUND:
            return found
        offset += len(page)


@router.post("/threads/count")
async def count_threads(svc: Owned, body: Json = None) -> Response:
    """How many threads match metadata, values and status (counted by the database)."""
    request = obj(body)
    check_keys("body", request, ("metadata", "values", "status"))
    filters = _filters(request)
    wanted = _conversation_filter(request)
    if wanted is None:
        return JSONResponse(await svc.count_sessions(**filters))
    return JSONResponse(len(await _matching(svc, filters, wanted)))


def _matches(thread: dict[str, Any], values: dict[str, Any]) -> bool:
    current = thread["values"] or {}
    return all(current.get(k) == v for k, v in values.items())


@router.post("/threads/search")
async def search_threads(svc: Owned, body: Json = None) -> Response:
    """Threads matching metadata, values, ids and status; sorted, paged by limit and offset:
    filters, sort and page run in the database, and only the page's threads are built."""
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
    filters = _filters(request)
    sort_by = one_of(request.get("sort_by") or "created_at", tuple(_SORTS), "body.sort_by")
    order = one_of(request.get("sort_order") or "desc", ("asc", "desc"), "body.sort_order")
    select = _names(request.get("select"), "body.select", _THREAD_FIELDS)
    extract = _extracts(request.get("extract"))
    wanted = _conversation_filter(request)
    if wanted is not None:
        threads = await _matching(svc, {**filters}, wanted)
        threads.sort(key=lambda t: (str(t[sort_by]), t["thread_id"]), reverse=order == "desc")
        chosen = threads[offset : offset + limit]
    else:
        sessions = await svc.search_sessions(
            **filters,
            sort=_SORTS[sort_by],
            descending=order == "desc",
            limit=limit,
            offset=offset,
        )
        with_values = (
            not select
            or "values" in select
            or any(path.startswith("values") for path in extract.values())
        )
        chosen = await _threads(svc, sessions, with_values=with_values)
    out = []
    for thread in chosen:
        if extract:
            thread["extracted"] = {alias: _extract(thread, path) for alias, path in extract.items()}
        if select:
            thread = {k: thread[k] for k in (*select, "extracted") if k in thread}
        out.append(thread)
    return JSONResponse(out)


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
    if any(len(path) > limits.MAX_KEY for path in value.values()):
        raise UsageError(f"body.extract: a path is at most {limits.MAX_KEY} characters")
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


async def _states(svc: Service, thread_id: str) -> States:
    session = await svc.get_session(thread_id)
    act = (await svc.run_activity([thread_id]))[thread_id]
    return await States.of(svc, session, act.waiting)


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
    found = await _states(svc, thread_id)
    for index in range(len(found)):
        if found.checkpoint_id(index) == checkpoint_id:
            return found.state(index)
    raise NotFound("checkpoint", checkpoint_id)


@router.get("/threads/{thread_id}/state")
async def get_state(
    svc: Owned,
    thread_id: str,
    subgraphs: bool = False,
    select: Annotated[list[str], Query()] = [],  # noqa: B006
) -> Response:
    """The thread's current state: values, checkpoint, what it waits for."""
    graph = await graph_of_thread(svc, thread_id)
    if graph is not None:
        state = await graph.get_state(svc, thread_id, checkpoint_id=None, subgraphs=subgraphs)
        return JSONResponse(select_fields(state, select))
    _no_subgraphs(subgraphs)
    return JSONResponse(select_fields((await _states(svc, thread_id)).state(0), select))


@router.get("/threads/{thread_id}/state/{checkpoint_id}")
async def get_state_at(
    svc: Owned,
    thread_id: str,
    checkpoint_id: str,
    subgraphs: bool = False,
    select: Annotated[list[str], Query()] = [],  # noqa: B006
) -> Response:
    graph = await graph_of_thread(svc, thread_id)
    if graph is not None:
        state = await graph.get_state(
            svc, thread_id, checkpoint_id=checkpoint_id, subgraphs=subgraphs
        )
        return JSONResponse(select_fields(state, select))
    _no_subgraphs(subgraphs)
    return JSONResponse(select_fields(await _state_at(svc, thread_id, checkpoint_id), select))


@router.post("/threads/{thread_id}/state/checkpoint")
async def post_state_at(svc: Owned, thread_id: str, body: Json = None) -> Response:
    request = obj(body)
    check_keys("body", request, ("checkpoint", "subgraphs", "select"))
    graph = await graph_of_thread(svc, thread_id)
    if graph is not None:
        checkpoint = request.get("checkpoint")
        wanted = checkpoint.get("checkpoint_id") if isinstance(checkpoint, dict) else checkpoint
        state = await graph.get_state(
            svc,
            thread_id,
            checkpoint_id=wanted if isinstance(wanted, str) else None,
            subgraphs=bool(request.get("subgraphs")),
        )
        chosen = request.get("select") if isinstance(request.get("select"), list) else None
        return JSONResponse(select_fields(state, chosen))
    _no_subgraphs(bool(request.get("subgraphs")))
    checkpoint_id = _checkpoint_id(request.get("checkpoint"), "body.checkpoint")
    select = request.get("select") if isinstance(request.get("select"), list) else None
    if checkpoint_id is None:
        return JSONResponse(select_fields((await _states(svc, thread_id)).state(0), select))
    return JSONResponse(select_fields(await _state_at(svc, thread_id, checkpoint_id), select))


@router.post("/threads/{thread_id}/state")
async def update_state(svc: Owned, thread_id: str, body: Json = None) -> Response:
    """Add to the thread without a run: values.messages join the conversation, every other key
    is merged into the session's project. A served graph's thread: the graph's own update."""
    request = obj(body)
    graph = await graph_of_thread(svc, thread_id)
    if graph is not None:
        return JSONResponse(await _update_graph(svc, graph, thread_id, request))
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
    messages = await unseen(svc, thread_id, messages, field)
    for role, content, metadata in messages:
        if as_node:
            metadata[LG_KEY]["as_node"] = as_node
        await svc.add_message(thread_id, role, content, metadata=metadata)
    if values:
        await svc.update_session(thread_id, project={**session.project, **values})
    return JSONResponse({"checkpoint": (await _states(svc, thread_id)).checkpoint_ref(0)})


async def _update_graph(
    svc: Service, graph: GraphAgent, thread_id: str, request: dict[str, Any]
) -> dict[str, Any]:
    check_keys("body", request, ("values", "as_node", "checkpoint", "checkpoint_id"))
    checkpoint = request.get("checkpoint")
    wanted = checkpoint.get("checkpoint_id") if isinstance(checkpoint, dict) else None
    wanted = wanted or request.get("checkpoint_id")
    return await graph.update_state(
        svc,
        thread_id,
        request.get("values"),
        as_node=opt_str(request, "as_node"),
        checkpoint_id=wanted if isinstance(wanted, str) else None,
    )


@router.post("/threads/{thread_id}/history")
async def get_history(svc: Owned, thread_id: str, body: Json = None) -> Response:
    """The thread's states, newest first, before a checkpoint, matching metadata."""
    request = obj(body)
    check_keys("body", request, ("limit", "before", "metadata", "checkpoint", "select"))
    limit, _ = page(request, default_limit=10)
    graph = await graph_of_thread(svc, thread_id)
    if graph is not None:
        states = await graph.get_history(
            svc,
            thread_id,
            limit=limit,
            before=_checkpoint_id(request.get("before"), "body.before"),
            metadata=opt_dict(request, "metadata"),
        )
        chosen = request.get("select") if isinstance(request.get("select"), list) else None
        return JSONResponse([select_fields(state, chosen) for state in states])
    if _checkpoint_id(request.get("checkpoint"), "body.checkpoint") is not None:
        raise refuse(
            "body.checkpoint.checkpoint_id",
            "history lists the whole thread; page it with before",
        )
    before = _checkpoint_id(request.get("before"), "body.before")
    metadata = opt_dict(request, "metadata") or {}
    select = request.get("select") if isinstance(request.get("select"), list) else None
    found = await _states(svc, thread_id)
    indexes = [i for i in range(len(found)) if found.checkpoint_id(i) is not None]
    if before is not None:
        ids = [found.checkpoint_id(i) for i in indexes]
        indexes = indexes[ids.index(before) + 1 :] if before in ids else []
    chosen = [i for i in indexes if found.metadata_matches(i, metadata)][:limit]
    return JSONResponse([select_fields(found.state(i), select) for i in chosen])
